package destination

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Records are stored in a compact binary form (about 100 bytes for a
// small file's record, against 420 as JSON): what a state holds per
// resource is what a pass over it reads, so its size is both the disk and
// the memory cost of a baseline or an audit of millions of resources.
// States written by earlier versions hold JSON records; both are read (a
// JSON record always starts with '{'), and a record is written back in
// the binary form whenever it changes.
//
// Layout (version 1):
//
//	0x01 flags set path length digests [rhash] [lastmod] [changed] [mtime]
//
// strings are a uvarint length and the bytes (the path only its length
// when the URI ends with it); integers are varints; a
// time is a varint of Unix seconds and a uvarint of nanoseconds. Each
// digest (sha-256, md5, sha-1) is one kind byte — 0 absent, 1 raw bytes
// of its algorithm's length (the hex was lower-case), 2 a string — and
// its data.
const recordV1 = 0x01

const (
	fNotOwned   = 1 << iota
	fPathInKey  // path is the URI's last len(path) bytes, after a '/'
	fHasLastMod // lastmod follows
	fHasChanged // changed follows
	fMTimeIsLM  // mtime equals lastmod (in ns): not stored
	fRHashCombo // rhash is rhashCombos[next byte] of the record's own digests
)

// rhashCombos are the spellings of the Source's hash attribute that can be
// rebuilt from the record's digests: most Sources write the digests the
// destination verified, in this order.
var rhashCombos = [][]string{
	{"md5", "sha-256"}, {"sha-256"}, {"md5"}, {"sha-1"}, {"md5", "sha-1"},
	{"md5", "sha-1", "sha-256"}, {"sha-1", "sha-256"}, {"sha-256", "md5"},
}

func (r *Record) digest(alg string) string {
	switch alg {
	case "md5":
		return r.MD5
	case "sha-1":
		return r.SHA1
	case "sha-256":
		return r.SHA256
	}
	return ""
}

// rhashCombo returns the index of the combination that spells
// r.RemoteHash, or -1.
func (r *Record) rhashCombo() int {
	if r.RemoteHash == "" {
		return -1
	}
outer:
	for i, c := range rhashCombos {
		var b strings.Builder
		for k, alg := range c {
			d := r.digest(alg)
			if d == "" {
				continue outer
			}
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(alg + ":" + d)
		}
		if b.String() == r.RemoteHash {
			return i
		}
	}
	return -1
}

func pathInKey(uri, path string) bool {
	return path != "" && len(uri) > len(path) && strings.HasSuffix(uri, path) && uri[len(uri)-len(path)-1] == '/'
}

// encodeRecord returns the stored form of r, the record of uri.
func encodeRecord(uri string, r *Record) []byte {
	b := make([]byte, 2, 128)
	b[0] = recordV1
	var flags byte
	if r.NotOwned {
		flags |= fNotOwned
	}
	b = appendString(b, r.Set)
	if pathInKey(uri, r.Path) {
		flags |= fPathInKey
		b = binary.AppendUvarint(b, uint64(len(r.Path)))
	} else {
		b = appendString(b, r.Path)
	}
	b = binary.AppendVarint(b, r.Length)
	for _, d := range [...]struct {
		hex string
		n   int
	}{{r.SHA256, 32}, {r.MD5, 16}, {r.SHA1, 20}} {
		switch raw, err := hex.DecodeString(d.hex); {
		case d.hex == "":
			b = append(b, 0)
		case err == nil && len(raw) == d.n && hex.EncodeToString(raw) == d.hex:
			b = append(b, 1)
			b = append(b, raw...)
		default:
			b = append(b, 2)
			b = appendString(b, d.hex)
		}
	}
	if c := r.rhashCombo(); c >= 0 {
		flags |= fRHashCombo
		b = append(b, byte(c))
	} else {
		b = appendString(b, r.RemoteHash)
	}
	if !r.LastMod.IsZero() {
		flags |= fHasLastMod
		b = appendTime(b, r.LastMod)
	}
	if !r.Changed.IsZero() {
		flags |= fHasChanged
		b = appendTime(b, r.Changed)
	}
	if !r.LastMod.IsZero() && inNanoRange(r.LastMod) && r.MTime == r.LastMod.UnixNano() {
		flags |= fMTimeIsLM
	} else {
		b = binary.AppendVarint(b, r.MTime)
	}
	b[1] = flags
	return b
}

// inNanoRange reports whether t's UnixNano is exact (years 1678–2262).
func inNanoRange(t time.Time) bool {
	return time.Unix(0, t.UnixNano()).Equal(t)
}

var errRecord = errors.New("malformed record")

// decodeRecord reads a stored record of uri, binary or JSON.
func decodeRecord(uri string, v []byte) (Record, error) {
	var r Record
	if len(v) > 0 && v[0] == '{' {
		err := json.Unmarshal(v, &r)
		return r, err
	}
	if len(v) < 2 || v[0] != recordV1 {
		return r, fmt.Errorf("%w: unknown format", errRecord)
	}
	d := recDecoder{b: v[2:]}
	flags := v[1]
	r.NotOwned = flags&fNotOwned != 0
	r.Set = d.str()
	if flags&fPathInKey != 0 {
		n := d.uvarint()
		if n == 0 || n >= uint64(len(uri)) || uri[len(uri)-int(n)-1] != '/' {
			return Record{}, fmt.Errorf("%w: path not in the key", errRecord)
		}
		r.Path = uri[len(uri)-int(n):]
	} else {
		r.Path = d.str()
	}
	r.Length = d.varint()
	for _, dg := range [...]struct {
		dst *string
		n   int
	}{{&r.SHA256, 32}, {&r.MD5, 16}, {&r.SHA1, 20}} {
		switch d.byte() {
		case 0:
		case 1:
			*dg.dst = hex.EncodeToString(d.bytes(dg.n))
		case 2:
			*dg.dst = d.str()
		default:
			d.err = errRecord
		}
	}
	if flags&fRHashCombo != 0 {
		c := int(d.byte())
		if c >= len(rhashCombos) {
			d.err = errRecord
		} else {
			var parts []string
			for _, alg := range rhashCombos[c] {
				parts = append(parts, alg+":"+r.digest(alg))
			}
			r.RemoteHash = strings.Join(parts, " ")
		}
	} else {
		r.RemoteHash = d.str()
	}
	if flags&fHasLastMod != 0 {
		r.LastMod = d.time()
	}
	if flags&fHasChanged != 0 {
		r.Changed = d.time()
	}
	if flags&fMTimeIsLM != 0 {
		r.MTime = r.LastMod.UnixNano()
	} else {
		r.MTime = d.varint()
	}
	if d.err != nil {
		return Record{}, d.err
	}
	if len(d.b) != 0 {
		return Record{}, fmt.Errorf("%w: %d bytes left over", errRecord, len(d.b))
	}
	return r, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

type recDecoder struct {
	b   []byte
	err error
}

func (d *recDecoder) fail() { d.err, d.b = errRecord, nil }

func (d *recDecoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *recDecoder) bytes(n int) []byte {
	if len(d.b) < n {
		d.fail()
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *recDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recDecoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	return string(d.bytes(int(n)))
}

func (d *recDecoder) time() time.Time {
	s := d.varint()
	ns := d.uvarint()
	if ns >= 1e9 {
		d.fail()
		return time.Time{}
	}
	return time.Unix(s, int64(ns)).UTC()
}
