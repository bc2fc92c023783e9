package dump

import (
	"encoding/binary"
	"io"
)

// declaredMembers returns the member count the end of central directory
// record (or its ZIP64 form) declares, found as archive/zip finds it; ok is
// false when there is none, and archive/zip then reports the error.
//
// It lets Open refuse an archive with too many members before
// archive/zip allocates a File for each of them. (archive/zip reads
// records until a bad one, whatever the count says, so its memory is in
// the end bounded by the directory's size on disk, not by this check.)
func declaredMembers(r io.ReaderAt, size int64) (n uint64, ok bool) {
	const endLen, locLen, end64Len = 22, 20, 56
	bLen := min(size, 65*1024)
	if bLen < endLen {
		return 0, false
	}
	b := make([]byte, bLen)
	if _, err := r.ReadAt(b, size-bLen); err != nil && err != io.EOF {
		return 0, false
	}
	le := binary.LittleEndian
	p := -1
	for i := len(b) - endLen; i >= 0; i-- {
		if le.Uint32(b[i:]) == 0x06054b50 && i+endLen+int(le.Uint16(b[i+20:])) <= len(b) {
			p = i
			break
		}
	}
	if p < 0 {
		return 0, false
	}
	n = uint64(le.Uint16(b[p+10:]))
	if n != 0xffff && le.Uint32(b[p+12:]) != 0xffff && le.Uint32(b[p+16:]) != 0xffffffff {
		return n, true
	}
	// ZIP64: a locator just before the record points at the ZIP64 record.
	endOff := size - bLen + int64(p)
	if endOff < locLen {
		return 0, false
	}
	var loc [locLen]byte
	if _, err := r.ReadAt(loc[:], endOff-locLen); err != nil || le.Uint32(loc[:]) != 0x07064b50 {
		return 0, false
	}
	off := le.Uint64(loc[8:])
	if off > uint64(size) || uint64(size)-off < end64Len {
		return 0, false
	}
	var e64 [end64Len]byte
	if _, err := r.ReadAt(e64[:], int64(off)); err != nil || le.Uint32(e64[:]) != 0x06064b50 {
		return 0, false
	}
	return le.Uint64(e64[32:]), true
}
