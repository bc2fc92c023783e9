package ldesgraph

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// A run's versions are spooled (internal/extsort) rather than held in a
// map: the versions of every object changed since the last run, each
// with its statements, would be held at once otherwise. A record's group
// is the object's IRI, its rank the inverted time (the newest first; of
// two at the same time the first read), its payload encodeVersion's.

// rankOf orders newer times first.
func rankOf(t time.Time) []byte {
	var k [12]byte
	binary.BigEndian.PutUint64(k[:], ^(uint64(t.Unix()) ^ 1<<63))
	binary.BigEndian.PutUint32(k[8:], ^uint32(t.Nanosecond()))
	return k[:]
}

// encodeVersion appends a version: a deletion flag and the statements,
// each term as its kind and three strings.
func encodeVersion(b []byte, deleted bool, ts []rdf.Triple) []byte {
	if deleted {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(ts)))
	for _, t := range ts {
		for _, term := range [3]rdf.Term{t.S, t.P, t.O} {
			b = append(b, byte(term.Kind))
			for _, s := range [3]string{term.Value, term.Lang, term.Datatype} {
				b = binary.AppendUvarint(b, uint64(len(s)))
				b = append(b, s...)
			}
		}
	}
	return b
}

var errVersion = errors.New("ldesgraph: damaged spooled version")

// decodeVersion reads what encodeVersion wrote.
func decodeVersion(b []byte) (deleted bool, ts []rdf.Triple, err error) {
	if len(b) == 0 || b[0] > 1 {
		return false, nil, errVersion
	}
	deleted, b = b[0] == 1, b[1:]
	n, k := binary.Uvarint(b)
	// A term takes 4 bytes at least: no more statements than bytes/12.
	if k <= 0 || n > uint64(len(b))/12 {
		return false, nil, errVersion
	}
	b = b[k:]
	ts = make([]rdf.Triple, 0, n)
	for range n {
		var t rdf.Triple
		for _, term := range [3]*rdf.Term{&t.S, &t.P, &t.O} {
			if len(b) == 0 {
				return false, nil, errVersion
			}
			term.Kind, b = rdf.Kind(b[0]), b[1:]
			for _, s := range [3]*string{&term.Value, &term.Lang, &term.Datatype} {
				l, k := binary.Uvarint(b)
				if k <= 0 || l > uint64(len(b)-k) {
					return false, nil, errVersion
				}
				*s, b = string(b[k:k+int(l)]), b[k+int(l):]
			}
		}
		ts = append(ts, t)
	}
	if len(b) != 0 {
		return false, nil, errVersion
	}
	return deleted, ts, nil
}
