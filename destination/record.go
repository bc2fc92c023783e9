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
//	0x01 flags set path length digests [rhash] [lastmod] [changed] [mtime] [version]
//
// strings are a uvarint length and the bytes (the path only its length
// when the URI ends with it); integers are varints; a
// time is a varint of Unix seconds and a uvarint of nanoseconds. Each
// digest (sha-256, md5, sha-1) is one kind byte — 0 absent, 1 raw bytes
// of its algorithm's length (the hex was lower-case), 2 a string — and
// its data.
//
// Version 2 differs in the hash attribute only: with fRHashCombo it is a
// count of tokens, each a kind byte — 0 a string "alg:value", 1–3 the
// record's own md5, sha-1 or sha-256, 4–6 a digest of md5, sha-1 or
// sha-256 as raw bytes (a Source's md5 that was not verified here).
// Version 1 records (the first binary form) are still read.
const (
	recordV1 = 0x01
	recordV2 = 0x02
)

var rhashAlgs = [...]struct {
	alg string
	n   int
}{{"md5", 16}, {"sha-1", 20}, {"sha-256", 32}}

const (
	fNotOwned   = 1 << iota
	fPathInKey  // path is the URI's last len(path) bytes, after a '/'
	fHasLastMod // lastmod follows
	fHasChanged // changed follows
	fMTimeIsLM  // mtime equals lastmod (in ns): not stored
	fRHashCombo // v1: rhash is rhashCombos[next byte]; v2: rhash is tokens
	fHasVersion // the object's storage Version follows, last (a Target's)
)

// rhashCombos (version 1) are the spellings of the Source's hash attribute that can be
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

// rhashTokens encodes r.RemoteHash as tokens (version 2), or ok=false
// when the tokens would not spell it exactly.
func (r *Record) rhashTokens() (_ []byte, ok bool) {
	if r.RemoteHash == "" {
		return nil, false
	}
	toks := strings.Split(r.RemoteHash, " ")
	b := binary.AppendUvarint(nil, uint64(len(toks)))
	for _, t := range toks {
		alg, val, found := strings.Cut(t, ":")
		kind := -1
		for i, a := range rhashAlgs {
			if found && alg == a.alg && val != "" {
				if val == r.digest(alg) {
					kind = 1 + i
				} else if raw, err := hex.DecodeString(val); err == nil && len(raw) == a.n && hex.EncodeToString(raw) == val {
					kind = 4 + i
					b = append(b, byte(kind))
					b = append(b, raw...)
				}
			}
		}
		switch {
		case kind < 0:
			if t == "" {
				return nil, false // two spaces in a row: kept as written
			}
			b = append(b, 0)
			b = appendString(b, t)
		case kind <= 3:
			b = append(b, byte(kind))
		}
	}
	return b, true
}

// readTokens decodes what rhashTokens wrote (the record's digests are
// read already).
func (r *Record) readTokens(d *recDecoder) string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	var sb strings.Builder
	for i := uint64(0); i < n && d.err == nil; i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		switch k := d.byte(); {
		case k == 0:
			sb.WriteString(d.str())
		case k >= 1 && k <= 3:
			a := rhashAlgs[k-1]
			if r.digest(a.alg) == "" {
				d.fail()
			}
			sb.WriteString(a.alg + ":" + r.digest(a.alg))
		case k >= 4 && k <= 6:
			a := rhashAlgs[k-4]
			sb.WriteString(a.alg + ":" + hex.EncodeToString(d.bytes(a.n)))
		default:
			d.fail()
		}
	}
	return sb.String()
}

func pathInKey(uri, path string) bool {
	return path != "" && len(uri) > len(path) && strings.HasSuffix(uri, path) && uri[len(uri)-len(path)-1] == '/'
}

// encodeRecord returns the stored form of r, the record of uri.
func encodeRecord(uri string, r *Record) []byte {
	b := make([]byte, 2, 128)
	b[0] = recordV2
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
	if t, ok := r.rhashTokens(); ok {
		flags |= fRHashCombo
		b = append(b, t...)
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
	if r.Version != "" {
		flags |= fHasVersion
		b = appendString(b, r.Version)
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
	if len(v) < 2 || v[0] != recordV1 && v[0] != recordV2 {
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
	if flags&fRHashCombo != 0 && v[0] == recordV2 {
		r.RemoteHash = r.readTokens(&d)
	} else if flags&fRHashCombo != 0 {
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
	if flags&fHasVersion != 0 {
		r.Version = d.str()
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
