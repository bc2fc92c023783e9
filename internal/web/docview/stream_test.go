package docview

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

// gatedFile is a spill file whose writes wait until the gate is opened.
type gatedFile struct {
	f    *os.File
	gate chan struct{}
}

func (g *gatedFile) Write(p []byte) (int, error) {
	<-g.gate
	return g.f.Write(p)
}

// streamEntries are the entries of a Resource List with characters that
// need escaping in the HTML rows and in the XML.
func streamEntries(n int) []rs.Entry {
	es := make([]rs.Entry, n)
	for i := range es {
		es[i] = rs.Entry{Loc: fmt.Sprintf("http://example.org/res/d%03d/f %d&<x>'\"+.txt", i%7, i),
			LastMod: rs.NewTime(time.Date(2026, 3, 1, 10, 0, i%60, 0, time.UTC)),
			MD: rs.Metadata{Length: int64(i * 37), HasLength: true, Type: "text/plain",
				Hashes: rs.Hashes{{Alg: rs.MD5, Value: fmt.Sprintf("%032x", i)}, {Alg: rs.SHA256, Value: fmt.Sprintf("%064x", i)}}}}
	}
	return es
}

// TestStreamRendersBehindAdd: the rows of a full page are rendered and
// spilled while Add goes on with the next page (a Resource List's writer
// does not wait for its HTML), and the pages are those RenderPages makes
// of the encoded document. On a Stream that rendered in Add, the Add that
// starts page 2 waits for the spill.
func TestStreamRendersBehindAdd(t *testing.T) {
	const n = 1000 + 345 // the renderer holds page 1 while Add fills page 2
	h := &rs.Head{MD: rs.Metadata{Capability: rs.CapResourceList, At: rs.NewTime(time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC))},
		Links: []rs.Link{{Rel: rs.RelUp, Href: "http://example.org/capabilitylist.xml"}}}
	es := streamEntries(n)
	o := Options{Self: "http://example.org/resourcelist.xml", PageURL: func(n int) string { return fmt.Sprintf("rl.%d.html", n) }}

	f, err := os.Create(filepath.Join(t.TempDir(), "spill"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spill := &gatedFile{f: f, gate: make(chan struct{})}
	s := NewStream(h, o, spill)
	added := make(chan error, 1)
	go func() {
		for i := range es {
			if err := s.Add(&es[i]); err != nil {
				added <- err
				return
			}
		}
		added <- nil
	}()
	select {
	case err := <-added:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(spill.gate)
		t.Fatal("Add waited for the spill: the rows are rendered in Add")
	}
	close(spill.gate)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Entries() != n || !s.Portable() {
		t.Fatalf("entries %d, portable %v", s.Entries(), s.Portable())
	}
	streamed := map[int]string{}
	res, err := s.Pages(f, func(p int) (io.Writer, func(error) error, error) {
		var b bytes.Buffer
		return &b, func(err error) error { streamed[p] = b.String(); return err }, nil
	})
	if err != nil || res.Pages != 2 {
		t.Fatal(res, err)
	}

	var doc bytes.Buffer
	enc := rs.NewEncoder(&doc)
	if err := enc.WriteHead(h); err != nil {
		t.Fatal(err)
	}
	for i := range es {
		if err := enc.WriteEntry(&es[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	rendered := map[int]string{}
	var mu sync.Mutex
	if _, err := RenderPages(bytes.NewReader(doc.Bytes()), n, o, func(p int) (io.Writer, func(error) error, error) {
		var b bytes.Buffer
		return &b, func(err error) error { mu.Lock(); rendered[p] = b.String(); mu.Unlock(); return err }, nil
	}); err != nil {
		t.Fatal(err)
	}
	for p := 1; p <= 2; p++ {
		if streamed[p] != rendered[p] || streamed[p] == "" {
			t.Errorf("page %d: streamed %d bytes, rendered from the XML %d bytes, not the same", p, len(streamed[p]), len(rendered[p]))
		}
	}
}

// TestStreamDiscard: a Stream abandoned half-way (its document failed)
// stops its renderer: no goroutine is left and the spill is not written
// after Discard returns.
func TestStreamDiscard(t *testing.T) {
	before := runtime.NumGoroutine()
	es := streamEntries(1500)
	h := &rs.Head{MD: rs.Metadata{Capability: rs.CapResourceList}}
	var spill lockedBuffer
	s := NewStream(h, Options{}, &spill)
	for i := range es {
		if err := s.Add(&es[i]); err != nil {
			t.Fatal(err)
		}
	}
	s.Discard()
	n := spill.Len()
	if n == 0 {
		t.Fatal("the first page's rows were not rendered")
	}
	s.Discard() // again: nothing
	s.Close()   // after Discard: nothing rendered
	if spill.Len() != n {
		t.Errorf("spill written after Discard: %d bytes, then %d", n, spill.Len())
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}
