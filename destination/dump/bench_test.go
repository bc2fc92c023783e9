package dump_test

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination/dump"
	"github.com/resourcesync-go/resourcesync/rs"
)

// BenchmarkOpenEach opens a package of 50,000 small stored members and
// reads them all: the per-member cost of the checks, the two manifest
// passes and the member readers.
func BenchmarkOpenEach(b *testing.B) {
	const n = 50000
	ms := make([]zm, 0, n+1)
	items := make([]string, 0, n)
	for i := range n {
		name := fmt.Sprintf("resources/d%03d/file-%07d.txt", i%1000, i)
		data := []byte(name)
		ms = append(ms, zm{name: name, data: data})
		items = append(items, item("http://example.com/"+name, "/"+name, data))
	}
	ms = append(ms, manifest(rdm(items...)))
	path := writeFile(b, mkzip(b, ms...))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p, err := dump.Open(path, dump.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		err = p.Each(context.Background(), func(e rs.Entry, r io.Reader) error {
			_, err := io.Copy(io.Discard, r)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}

// BenchmarkEachParallel is BenchmarkOpenEach's package read by
// EachParallel on 4 goroutines sharded by directory, as a Destination
// extracts a package: the per-member cost of the shares' bookkeeping.
func BenchmarkEachParallel(b *testing.B) {
	const n = 50000
	ms := make([]zm, 0, n+1)
	items := make([]string, 0, n)
	for i := range n {
		name := fmt.Sprintf("resources/d%03d/file-%07d.txt", i%1000, i)
		data := []byte(name)
		ms = append(ms, zm{name: name, data: data})
		items = append(items, item("http://example.com/"+name, "/"+name, data))
	}
	ms = append(ms, manifest(rdm(items...)))
	path := writeFile(b, mkzip(b, ms...))
	p, err := dump.Open(path, dump.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		err = p.EachParallel(context.Background(), 4, func(e *rs.Entry) int {
			return int(e.Loc[len(e.Loc)-6]) % 4
		}, func(w int, e rs.Entry, r io.Reader) error {
			_, err := io.Copy(io.Discard, r)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
