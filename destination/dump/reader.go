package dump

import (
	"archive/zip"
	"compress/flate"
	"hash"
	"hash/crc32"
	"io"
	"strconv"
	"sync/atomic"
)

// member reads one member's data. It decompresses the raw data itself
// (rather than zip.File.Open) so that every way the data can disagree with
// the header is reported with our sentinels and the member's name.
//
// It never returns more than the declared uncompressed size: Open checked
// that size against MaxMemberBytes and MaxRatio, so capping the bytes
// actually read at it enforces both limits on the data, whatever the
// compressed stream really holds. A member that would yield more is
// refused with ErrSizeMismatch once the declared size is reached. (The
// ratio is not also checked as the bytes flow: a legitimate file may
// begin with a long run of zeros, so a prefix's ratio says nothing.)
type member struct {
	p      *Package
	f      *zip.File
	src    io.Reader
	size   uint64 // declared uncompressed size
	n      uint64 // bytes returned so far
	crc    hash.Hash32
	noCRC  bool // CRC-32 only in a data descriptor that archive/zip does not expose
	err    error
	probed bool
	// left, when set, is what all members of the package may still
	// deliver (the manifest's declared total and a slack), shared by the
	// goroutines of EachParallel.
	left *atomic.Int64
}

// openMember reads the data range Open checked (rather than asking
// archive/zip, which would read the local header again). A deflated
// member reuses *fr, the decompressor (about 40 KB) of the previous one.
func (p *Package) openMember(i int, fr *io.ReadCloser) (*member, error) {
	return p.openMemberAt(p.r, i, fr)
}

// openMemberAt is openMember reading through r (a goroutine's own block
// reader in EachParallel).
func (p *Package) openMemberAt(r io.ReaderAt, i int, fr *io.ReadCloser) (*member, error) {
	f := p.zr.File[i]
	raw := io.NewSectionReader(r, p.offsets[i], int64(f.CompressedSize64))
	m := &member{p: p, f: f, src: raw, size: f.UncompressedSize64, crc: crc32.NewIEEE(),
		noCRC: f.CRC32 == 0 && f.Flags&0x8 != 0}
	switch f.Method {
	case zip.Store:
	case zip.Deflate:
		if *fr == nil {
			*fr = flate.NewReader(raw)
		} else if err := (*fr).(flate.Resetter).Reset(raw, nil); err != nil {
			return nil, p.errorf(f.Name, ErrCorrupt, "", err)
		}
		m.src = *fr
	default:
		return nil, p.errorf(f.Name, ErrUnsupported, "method "+strconv.Itoa(int(f.Method)), nil)
	}
	return m, nil
}

func (m *member) fail(sentinel error, detail string, cause error) error {
	m.err = m.p.errorf(m.f.Name, sentinel, detail, cause)
	return m.err
}

func (m *member) Read(b []byte) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	if m.n == m.size {
		return 0, m.finish()
	}
	if rest := m.size - m.n; uint64(len(b)) > rest {
		b = b[:rest]
	}
	if m.left != nil {
		// Concurrent readers may each take what is left: the total is
		// passed by at most one read per goroutine, within the slack.
		left := m.left.Load()
		if left <= 0 {
			return 0, m.fail(ErrTooLarge, "members deliver more than the manifest's lengths declare in total", nil)
		}
		if int64(len(b)) > left {
			b = b[:left]
		}
	}
	k, err := m.src.Read(b)
	m.n += uint64(k)
	if m.left != nil {
		m.left.Add(-int64(k))
	}
	m.crc.Write(b[:k])
	switch {
	case err == io.EOF && m.n < m.size:
		return k, m.fail(ErrSizeMismatch, "data ends after "+strconv.FormatUint(m.n, 10)+" of "+
			strconv.FormatUint(m.size, 10)+" declared bytes", nil)
	case err != nil && err != io.EOF:
		return k, m.fail(ErrCorrupt, "", err)
	case m.n == m.size && k == 0:
		return 0, m.finish()
	}
	return k, nil
}

// finish runs once the declared size is reached: one more byte from the
// source means the header lied; otherwise the CRC-32 must match.
func (m *member) finish() error {
	if !m.probed {
		m.probed = true
		var one [1]byte
		k, err := io.ReadFull(m.src, one[:])
		if k > 0 {
			return m.fail(ErrSizeMismatch, "data is longer than the declared "+strconv.FormatUint(m.size, 10)+" bytes", nil)
		}
		if err != io.EOF { // a truncated deflate stream is io.ErrUnexpectedEOF
			return m.fail(ErrCorrupt, "", err)
		}
		if !m.noCRC && m.crc.Sum32() != m.f.CRC32 {
			return m.fail(ErrCorrupt, "CRC-32 mismatch", zip.ErrChecksum)
		}
	}
	return io.EOF
}
