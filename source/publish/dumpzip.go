package publish

import (
	"encoding/binary"
	"time"
	"unicode/utf8"
)

// The layout of a package produced on demand (see dumplazy.go): the bytes
// archive/zip's Writer writes for the same members added with CreateHeader
// (method Store, Modified set, a data descriptor after each member's
// bytes), computed here member by member so that any byte range of the
// package can be produced without the bytes before it. Everything but the
// CRC-32s (in the data descriptors and the central directory) follows from
// the names, sizes and times of the inventory; TestZipLayoutMatchesWriter
// holds the two to the same bytes.

const (
	zipMax32      = 1<<32 - 1
	zipMax16      = 1<<16 - 1
	zipLocalLen   = 30
	zipCentralLen = 46
	zipEndLen     = 22
	zip64EndLen   = 56
	zip64LocLen   = 20
	zipExtTimeLen = 9  // the extended-timestamp extra field archive/zip writes
	zip64ExtraLen = 28 // a zip64 extra field with both sizes and the offset
	zipVersion20  = 20
	zipVersion45  = 45
)

// zipMember is one member of a package layout.
type zipMember struct {
	name string
	size int64
	mod  time.Time // zero: no time fields
	off  int64     // of the local header
}

func (m *zipMember) zip64() bool { return m.size >= zipMax32 }

func (m *zipMember) extraLen() int {
	if m.mod.IsZero() {
		return 0
	}
	return zipExtTimeLen
}

func (m *zipMember) headerLen() int64 { return zipLocalLen + int64(len(m.name)+m.extraLen()) }

func (m *zipMember) descLen() int64 {
	if m.zip64() {
		return 24
	}
	return 16
}

// end is the offset just past the member's data descriptor.
func (m *zipMember) end() int64 { return m.off + m.headerLen() + m.size + m.descLen() }

func (m *zipMember) flags() uint16 {
	f := uint16(0x8)
	if valid, require := zipDetectUTF8(m.name); valid && require {
		f |= 0x800
	}
	return f
}

// zipDetectUTF8 is archive/zip's rule for setting the UTF-8 flag.
func zipDetectUTF8(s string) (valid, require bool) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r < 0x20 || r > 0x7d || r == 0x5c {
			if !utf8.ValidRune(r) || (r == utf8.RuneError && size == 1) {
				return false, false
			}
			require = true
		}
	}
	return true, require
}

func (m *zipMember) dosTime() (date, tm uint16) {
	if m.mod.IsZero() {
		return 0, 0
	}
	t := m.mod
	date = uint16(t.Day() + int(t.Month())<<5 + (t.Year()-1980)<<9)
	tm = uint16(t.Second()/2 + t.Minute()<<5 + t.Hour()<<11)
	return date, tm
}

func (m *zipMember) appendExtTime(b []byte) []byte {
	if m.mod.IsZero() {
		return b
	}
	b = binary.LittleEndian.AppendUint16(b, 0x5455)
	b = binary.LittleEndian.AppendUint16(b, 5)
	b = append(b, 1)
	return binary.LittleEndian.AppendUint32(b, uint32(m.mod.Unix()))
}

// appendHeader appends the member's local file header.
func (m *zipMember) appendHeader(b []byte) []byte {
	le := binary.LittleEndian
	date, tm := m.dosTime()
	b = le.AppendUint32(b, 0x04034b50)
	b = le.AppendUint16(b, zipVersion20)
	b = le.AppendUint16(b, m.flags())
	b = le.AppendUint16(b, 0) // Store
	b = le.AppendUint16(b, tm)
	b = le.AppendUint16(b, date)
	b = append(b, make([]byte, 12)...) // crc and sizes: in the data descriptor
	b = le.AppendUint16(b, uint16(len(m.name)))
	b = le.AppendUint16(b, uint16(m.extraLen()))
	b = append(b, m.name...)
	return m.appendExtTime(b)
}

// appendDesc appends the member's data descriptor.
func (m *zipMember) appendDesc(b []byte, crc uint32) []byte {
	le := binary.LittleEndian
	b = le.AppendUint32(b, 0x08074b50)
	b = le.AppendUint32(b, crc)
	if m.zip64() {
		b = le.AppendUint64(b, uint64(m.size))
		return le.AppendUint64(b, uint64(m.size))
	}
	b = le.AppendUint32(b, uint32(m.size))
	return le.AppendUint32(b, uint32(m.size))
}

func (m *zipMember) central64() bool { return m.zip64() || m.off >= zipMax32 }

func (m *zipMember) centralLen() int64 {
	n := int64(zipCentralLen + len(m.name) + m.extraLen())
	if m.central64() {
		n += zip64ExtraLen
	}
	return n
}

func (m *zipMember) appendCentral(b []byte, crc uint32) []byte {
	le := binary.LittleEndian
	date, tm := m.dosTime()
	ver := uint16(zipVersion20)
	if m.zip64() {
		ver = zipVersion45
	}
	extra := m.extraLen()
	if m.central64() {
		extra += zip64ExtraLen
	}
	b = le.AppendUint32(b, 0x02014b50)
	b = le.AppendUint16(b, zipVersion20) // creator
	b = le.AppendUint16(b, ver)
	b = le.AppendUint16(b, m.flags())
	b = le.AppendUint16(b, 0)
	b = le.AppendUint16(b, tm)
	b = le.AppendUint16(b, date)
	b = le.AppendUint32(b, crc)
	if m.central64() {
		b = le.AppendUint32(b, zipMax32)
		b = le.AppendUint32(b, zipMax32)
	} else {
		b = le.AppendUint32(b, uint32(m.size))
		b = le.AppendUint32(b, uint32(m.size))
	}
	b = le.AppendUint16(b, uint16(len(m.name)))
	b = le.AppendUint16(b, uint16(extra))
	b = le.AppendUint16(b, 0)             // comment
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0) // disk, internal and external attributes
	if m.off > zipMax32 {
		b = le.AppendUint32(b, zipMax32)
	} else {
		b = le.AppendUint32(b, uint32(m.off))
	}
	b = append(b, m.name...)
	b = m.appendExtTime(b)
	if m.central64() {
		b = le.AppendUint16(b, 0x0001)
		b = le.AppendUint16(b, 24)
		b = le.AppendUint64(b, uint64(m.size))
		b = le.AppendUint64(b, uint64(m.size))
		b = le.AppendUint64(b, uint64(m.off))
	}
	return b
}

// zipLayout is the layout of a whole package.
type zipLayout struct {
	members []zipMember
	cdStart int64
	cdLen   int64
	size    int64
}

// newZipLayout places members (their off is set) and returns the layout.
// It reports false for a name archive/zip would refuse (too long).
func newZipLayout(members []zipMember) (*zipLayout, bool) {
	l := &zipLayout{members: members}
	var off int64
	for i := range members {
		m := &members[i]
		if len(m.name) > zipMax16 {
			return nil, false
		}
		m.off = off
		off = m.end()
	}
	l.cdStart = off
	for i := range members {
		l.cdLen += members[i].centralLen()
	}
	l.size = l.cdStart + l.cdLen + l.endLen()
	return l, true
}

func (l *zipLayout) zip64End() bool {
	return len(l.members) >= zipMax16 || l.cdLen >= zipMax32 || l.cdStart >= zipMax32
}

func (l *zipLayout) endLen() int64 {
	if l.zip64End() {
		return zip64EndLen + zip64LocLen + zipEndLen
	}
	return zipEndLen
}

// tail returns the central directory and the end records.
func (l *zipLayout) tail(crcs []uint32) []byte {
	b := make([]byte, 0, l.cdLen+l.endLen())
	for i := range l.members {
		b = l.members[i].appendCentral(b, crcs[i])
	}
	le := binary.LittleEndian
	records, size, offset := uint64(len(l.members)), uint64(l.cdLen), uint64(l.cdStart)
	if l.zip64End() {
		b = le.AppendUint32(b, 0x06064b50)
		b = le.AppendUint64(b, zip64EndLen-12)
		b = le.AppendUint16(b, zipVersion45)
		b = le.AppendUint16(b, zipVersion45)
		b = le.AppendUint32(b, 0)
		b = le.AppendUint32(b, 0)
		b = le.AppendUint64(b, records)
		b = le.AppendUint64(b, records)
		b = le.AppendUint64(b, size)
		b = le.AppendUint64(b, offset)
		b = le.AppendUint32(b, 0x07064b50)
		b = le.AppendUint32(b, 0)
		b = le.AppendUint64(b, uint64(l.cdStart+l.cdLen))
		b = le.AppendUint32(b, 1)
		records, size, offset = zipMax16, zipMax32, zipMax32
	}
	b = le.AppendUint32(b, 0x06054b50)
	b = append(b, 0, 0, 0, 0)
	b = le.AppendUint16(b, uint16(records))
	b = le.AppendUint16(b, uint16(records))
	b = le.AppendUint32(b, uint32(size))
	b = le.AppendUint32(b, uint32(offset))
	return le.AppendUint16(b, 0)
}

// member returns the index of the member whose bytes (header, data or
// descriptor) hold offset off < cdStart.
func (l *zipLayout) member(off int64) int {
	lo, hi := 0, len(l.members)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.members[m].end() <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
