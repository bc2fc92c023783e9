package dump_test

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination/dump"
	"github.com/resourcesync-go/resourcesync/rs"
)

// zerosMember is a member of 1 MiB of zeros, deflated once and reused raw:
// each one respects the per-member limits (its ratio is not judged at
// 1 MiB), only the total is a bomb.
func zerosMember(t testing.TB, name string, kernel []byte) zm {
	return zm{name: name, data: make([]byte, 1<<20), raw: func(fh *zip.FileHeader) []byte {
		fh.Method = zip.Deflate
		return kernel
	}}
}

// manyZeros is a package of n members of 1 MiB of zeros, each listed with
// its true length and digest.
func manyZeros(t testing.TB, n int) []byte {
	zeros := make([]byte, 1<<20)
	kernel := deflate(zeros)
	var items []string
	ms := []zm{{}}
	for i := range n {
		name := fmt.Sprintf("z/%04d", i)
		items = append(items, item(fmt.Sprintf("http://example.com/%04d", i), "/"+name, zeros))
		ms = append(ms, zerosMember(t, name, kernel))
	}
	ms[0] = manifest(rdm(items...))
	return mkzip(t, ms...)
}

func TestPackageBomb(t *testing.T) {
	zeros := make([]byte, 1<<20)
	kernel := deflate(zeros)
	many := manyZeros(t, 300) // 300 MiB from about 300 KB
	// One member named by 500 entries: 500 MiB from about 1 KB.
	var items []string
	for i := range 500 {
		items = append(items, item(fmt.Sprintf("http://example.com/%d", i), "/z", zeros))
	}
	shared := mkzip(t, manifest(rdm(items...)), zerosMember(t, "z", kernel))
	for _, tc := range []struct {
		name string
		pkg  []byte
		lim  dump.Limits
		err  error
	}{
		{"many small members", many, dump.Limits{}, dump.ErrZipBomb},
		{"one member, many entries", shared, dump.Limits{}, dump.ErrZipBomb},
		{"total over limit", many, dump.Limits{MaxPackageRatio: 1e6, MaxTotalBytes: 100 << 20}, dump.ErrTooLarge},
		{"ratio raised", many, dump.Limits{MaxPackageRatio: 1e6}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := dump.Open(writeFile(t, tc.pkg), tc.lim)
			if tc.err != nil {
				var de *dump.Error
				if !errors.Is(err, tc.err) || !errors.As(err, &de) || !strings.Contains(err.Error(), "declare") {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if p.Declared() != 300<<20 {
				t.Fatalf("Declared = %d", p.Declared())
			}
		})
	}
}

// A manifest that declares small lengths for large members: whatever the
// consumer reads, Each delivers at most the declared total and a slack,
// then fails with ErrTooLarge.
func TestPackageDeliversAtMostDeclared(t *testing.T) {
	zeros := make([]byte, 1<<20)
	kernel := deflate(zeros)
	var items []string
	ms := []zm{{}}
	for i := range 20 {
		name := fmt.Sprintf("z/%02d", i)
		items = append(items, fmt.Sprintf(`<url><loc>http://example.com/%d</loc><rs:md path="/%s" length="1000"/></url>`, i, name))
		ms = append(ms, zerosMember(t, name, kernel))
	}
	ms[0] = manifest(rdm(items...))
	p, err := dump.Open(writeFile(t, mkzip(t, ms...)), dump.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var total int64
	err = p.Each(context.Background(), func(_ rs.Entry, r io.Reader) error {
		n, err := io.Copy(io.Discard, r)
		total += n
		return err
	})
	if !errors.Is(err, dump.ErrTooLarge) || !strings.Contains(err.Error(), "more than the manifest's lengths declare") {
		t.Fatalf("err = %v", err)
	}
	if limit := p.Declared() + 64<<10 + p.Declared()/100 + 20; total > limit {
		t.Fatalf("delivered %d bytes, declared %d", total, p.Declared())
	}
}
