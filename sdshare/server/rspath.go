package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// The ResourceSync view names each resource by a path a Destination can
// write as a file on any platform: a resource IRI such as
// http://example.org/a holds "//", ":" and "?" and may be longer than a
// file name, so scan.EscapePath of the IRI would make empty path segments
// (which a Destination rightly refuses) and names too long to create.
//
// rsPath(iri) is: two hex digits of the IRI's SHA-256 (a fan-out of 256
// directories), "/", then the IRI with every byte outside [a-z0-9-]
// written as _XX (upper-case hex; upper-case letters too, so that names
// differing only in case never meet on a case-insensitive filesystem), cut
// into segments of at most rsSegment bytes, each but the last ending in
// "~", the last ending in ".nt". '.', '~' and '_' are always escaped, so
// the markers cannot occur inside the encoding, and the mapping is
// injective and reversible (rsIRI).
const rsSegment = 200

var errRSPath = errors.New("not a resource path")

func rsPath(iri string) string {
	sum := sha256.Sum256([]byte(iri))
	var enc strings.Builder
	const hexd = "0123456789ABCDEF"
	for i := 0; i < len(iri); i++ {
		c := iri[i]
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' {
			enc.WriteByte(c)
			continue
		}
		enc.WriteByte('_')
		enc.WriteByte(hexd[c>>4])
		enc.WriteByte(hexd[c&15])
	}
	e := enc.String()
	var b strings.Builder
	b.WriteString(hex.EncodeToString(sum[:1]))
	b.WriteByte('/')
	for len(e) > rsSegment {
		b.WriteString(e[:rsSegment])
		b.WriteString("~/")
		e = e[rsSegment:]
	}
	b.WriteString(e)
	b.WriteString(".nt")
	return b.String()
}

// rsIRI is the inverse of rsPath; any path rsPath does not produce is an
// error.
func rsIRI(p string) (string, error) {
	fan, rest, ok := strings.Cut(p, "/")
	if !ok || len(fan) != 2 {
		return "", errRSPath
	}
	segs := strings.Split(rest, "/")
	var e strings.Builder
	for i, s := range segs {
		if i < len(segs)-1 {
			s, ok = strings.CutSuffix(s, "~")
		} else {
			s, ok = strings.CutSuffix(s, ".nt")
		}
		if !ok {
			return "", errRSPath
		}
		e.WriteString(s)
	}
	enc := e.String()
	out := make([]byte, 0, len(enc))
	for i := 0; i < len(enc); i++ {
		if enc[i] != '_' {
			out = append(out, enc[i])
			continue
		}
		if i+2 >= len(enc) {
			return "", errRSPath
		}
		v, err := hex.DecodeString(enc[i+1 : i+3])
		if err != nil {
			return "", errRSPath
		}
		out = append(out, v[0])
		i += 2
	}
	iri := string(out)
	if rsPath(iri) != p { // one name per resource: no aliases
		return "", errRSPath
	}
	return iri, nil
}
