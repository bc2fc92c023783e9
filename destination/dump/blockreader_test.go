package dump

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// TestBlockReader: every read through a blockReader returns what the
// file holds at that offset, with io.EOF where the file ends, for reads
// inside, across and beyond a block.
func TestBlockReader(t *testing.T) {
	data := make([]byte, 3*readBlock+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	src := bytes.NewReader(data)
	b := newBlockReader(src, int64(len(data)))
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct{ off, n int }{
		{0, 30}, {30, 100}, {readBlock - 10, 20}, {len(data) - 5, 10}, {len(data), 1},
		{len(data) + 100, 1}, {5, readBlock}, {readBlock * 2, 0},
	}
	for range 500 {
		cases = append(cases, struct{ off, n int }{rng.IntN(len(data) + 10), rng.IntN(4096)})
	}
	for _, c := range cases {
		want := make([]byte, c.n)
		wn, werr := src.ReadAt(want, int64(c.off))
		got := make([]byte, c.n)
		gn, gerr := b.ReadAt(got, int64(c.off))
		if gn != wn || !bytes.Equal(got[:gn], want[:wn]) {
			t.Fatalf("ReadAt(%d bytes at %d) = %d bytes, want %d (or different bytes)", c.n, c.off, gn, wn)
		}
		if (gerr == io.EOF) != (werr == io.EOF) || (gerr == nil) != (werr == nil) {
			t.Fatalf("ReadAt(%d bytes at %d): error %v, want %v", c.n, c.off, gerr, werr)
		}
	}
}
