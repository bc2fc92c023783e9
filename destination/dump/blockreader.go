package dump

import (
	"io"
	"sync"
)

// blockReader is an io.ReaderAt over a file that reads it a block at a
// time and serves the reads inside the block it holds from memory: the
// members of a package are read in order, two small reads each (the
// local header, then the bytes), and a package of 10,000 small members
// would otherwise cost 20,000 pread(2) calls.
type blockReader struct {
	r    io.ReaderAt
	size int64

	mu  sync.Mutex
	buf []byte
	off int64 // the file offset of buf[0]
}

// readBlock is the size of a blockReader's block.
const readBlock = 256 << 10

func newBlockReader(r io.ReaderAt, size int64) *blockReader {
	return &blockReader{r: r, size: size}
}

func (b *blockReader) ReadAt(p []byte, off int64) (int, error) {
	if len(p) >= readBlock/2 {
		return b.r.ReadAt(p, off) // large: straight from the file
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if off < b.off || off+int64(len(p)) > b.off+int64(len(b.buf)) {
		if off >= b.size {
			return 0, io.EOF
		}
		if b.buf == nil {
			b.buf = make([]byte, readBlock)
		}
		b.buf = b.buf[:cap(b.buf)]
		n, err := b.r.ReadAt(b.buf, off)
		b.buf, b.off = b.buf[:n], off
		if n < len(p) && err != nil {
			// Fewer bytes than asked: what there is, and why.
			return copy(p, b.buf), err
		}
	}
	n := copy(p, b.buf[off-b.off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
