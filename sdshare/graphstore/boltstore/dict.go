package boltstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"

	"go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// maxKeyLen is the longest term encoding used as its own dictionary key.
const maxKeyLen = 512

// encodeTerm returns the encoding of an IRI or literal (see doc.go).
func encodeTerm(dst []byte, t rdf.Term) []byte {
	if t.Kind == rdf.KindIRI {
		dst = append(dst, 'I')
		return append(dst, t.Value...)
	}
	dst = append(dst, 'L')
	dst = binary.AppendUvarint(dst, uint64(len(t.Datatype)))
	dst = append(dst, t.Datatype...)
	dst = binary.AppendUvarint(dst, uint64(len(t.Lang)))
	dst = append(dst, t.Lang...)
	return append(dst, t.Value...)
}

func decodeTerm(b []byte) (rdf.Term, error) {
	if len(b) == 0 {
		return rdf.Term{}, fmt.Errorf("%w: empty term encoding", graphstore.ErrCorrupt)
	}
	switch b[0] {
	case 'I':
		return rdf.Term{Kind: rdf.KindIRI, Value: string(b[1:])}, nil
	case 'L':
		rest := b[1:]
		var parts [2]string
		for i := range parts {
			n, k := binary.Uvarint(rest)
			if k <= 0 || n > uint64(len(rest)-k) {
				return rdf.Term{}, fmt.Errorf("%w: bad literal encoding", graphstore.ErrCorrupt)
			}
			parts[i] = string(rest[k : k+int(n)])
			rest = rest[k+int(n):]
		}
		return rdf.Term{Kind: rdf.KindLiteral, Datatype: parts[0], Lang: parts[1], Value: string(rest)}, nil
	}
	return rdf.Term{}, fmt.Errorf("%w: term encoding of kind %q", graphstore.ErrCorrupt, b[0])
}

// dictKey returns the t2i key of a term encoding.
func dictKey(enc []byte) []byte {
	if len(enc) <= maxKeyLen {
		return enc
	}
	h := sha256.Sum256(enc)
	return append([]byte{'H'}, h[:]...)
}

func isBlank(id uint64) bool { return id&1 == 1 }

// blankTerm is how the store writes out its blank node id.
func blankTerm(id uint64) rdf.Term { return rdf.Blank("b" + strconv.FormatUint(id>>1, 10)) }

// maxInline is the longest literal encoding kept in the index key itself
// rather than in the dictionary. Most distinct terms of real data are
// literals used once; inline they cost no dictionary entry, lookup or
// reference count.
const maxInline = 200

// Object tags, the first byte of an index key's object part.
const (
	objID     = 0 // 8-byte node id follows
	objInline = 1 // a literal's encoding follows
)

// inline returns the object part of an inline literal, or nil when t is
// kept in the dictionary.
func inline(t rdf.Term) []byte {
	if !t.IsLiteral() {
		return nil
	}
	b := encodeTerm([]byte{objInline}, t)
	if len(b) > maxInline {
		return nil
	}
	return b
}

// idObject is the object part of a node id.
func idObject(id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{objID}, id)
}

// tripleKey is an SPO index key: s, p and the object part.
func tripleKey(s, p uint64, o []byte) []byte {
	k := make([]byte, 16, 16+len(o))
	binary.BigEndian.PutUint64(k, s)
	binary.BigEndian.PutUint64(k[8:], p)
	return append(k, o...)
}

// splitKey returns the ids of an index key; o is 0 for an inline literal
// (then k[17:] is its encoding).
func splitKey(k []byte) (s, p, o uint64, ok bool) {
	if len(k) < 18 {
		return 0, 0, 0, false
	}
	s, p = binary.BigEndian.Uint64(k), binary.BigEndian.Uint64(k[8:])
	switch k[16] {
	case objID:
		if len(k) != 25 {
			return 0, 0, 0, false
		}
		return s, p, binary.BigEndian.Uint64(k[17:]), true
	case objInline:
		return s, p, 0, true
	}
	return 0, 0, 0, false
}

// wtx is one write transaction's view of the dictionary: it interns
// terms, hands out blank node ids and sums reference count changes, which
// finish writes.
type wtx struct {
	tx                 *bbolt.Tx
	meta, t2i, i2t, rc *bbolt.Bucket
	graphs, data       *bbolt.Bucket
	next               uint64 // the node counter, as it will be written
	nextDirty          bool
	ids                map[rdf.Term]uint64
	fresh              []newTerm // interned by this transaction, ids ascending
	delta              map[uint64]int64
	buf                []byte
}

func newWtx(tx *bbolt.Tx) *wtx {
	w := &wtx{tx: tx, meta: tx.Bucket(bMeta), t2i: tx.Bucket(bT2I), i2t: tx.Bucket(bI2T), rc: tx.Bucket(bRC),
		graphs: tx.Bucket(bGraphs), data: tx.Bucket(bData),
		ids: map[rdf.Term]uint64{}, delta: map[uint64]int64{}}
	w.next = be(w.meta.Get(kNext))
	return w
}

func (w *wtx) alloc(blank bool) uint64 {
	w.next++
	w.nextDirty = true
	if blank {
		return w.next<<1 | 1
	}
	return w.next << 1
}

// lookup returns the id of an IRI or literal, or 0 if it is not in the
// dictionary.
func (w *wtx) lookup(t rdf.Term) uint64 {
	if id, ok := w.ids[t]; ok {
		return id
	}
	w.buf = encodeTerm(w.buf[:0], t)
	id := be(w.t2i.Get(dictKey(w.buf)))
	if id != 0 {
		w.ids[t] = id
	}
	return id
}

// intern returns the id of an IRI or literal, adding it to the
// dictionary if needed (written by finish, in key order: bbolt splits
// nodes only at commit, so random inserts into a large transaction cost a
// copy each). Its reference count is the caller's to raise.
func (w *wtx) intern(t rdf.Term) (uint64, error) {
	if id := w.lookup(t); id != 0 {
		return id, nil
	}
	id := w.alloc(false)
	enc := encodeTerm(nil, t)
	w.fresh = append(w.fresh, newTerm{id, enc, dictKey(enc)})
	w.ids[t] = id
	return id, nil
}

// insert adds the index key k to the graph bucket gb; false if it was
// there.
func (w *wtx) insert(gb *bbolt.Bucket, k []byte) (bool, error) {
	if gb.Get(k) != nil {
		return false, nil
	}
	if err := gb.Put(k, nil); err != nil {
		return false, err
	}
	w.refKey(k, 1)
	return true, nil
}

// refKey changes the reference counts of the terms index key k names.
func (w *wtx) refKey(k []byte, d int64) {
	if s, p, o, ok := splitKey(k); ok {
		w.ref(s, d)
		w.ref(p, d)
		w.ref(o, d)
	}
}

func (w *wtx) ref(id uint64, d int64) {
	if id != 0 && !isBlank(id) {
		w.delta[id] += d
	}
}

// finish writes the node counter and the reference counts, and drops the
// terms no key names any more.
func (w *wtx) finish() error {
	if w.nextDirty {
		if err := w.meta.Put(kNext, u64(w.next)); err != nil {
			return err
		}
	}
	// A term interned by one fragment of a batch (ApplyFragments) may be
	// unused again by a later one: it never reaches the dictionary.
	w.fresh = slices.DeleteFunc(w.fresh, func(t newTerm) bool { return w.delta[t.id] <= 0 })
	for _, t := range w.fresh { // ids ascend: appends
		if err := w.i2t.Put(u64(t.id), t.enc); err != nil {
			return err
		}
	}
	slices.SortFunc(w.fresh, func(a, b newTerm) int { return bytes.Compare(a.key, b.key) })
	for _, t := range w.fresh {
		if err := w.t2i.Put(t.key, u64(t.id)); err != nil {
			return err
		}
	}
	ids := make([]uint64, 0, len(w.delta))
	for id, d := range w.delta {
		if d != 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		d := w.delta[id]
		k := u64(id)
		var n int64
		if v := w.rc.Get(k); v != nil {
			c, m := binary.Uvarint(v)
			if m <= 0 {
				return fmt.Errorf("%w: bad reference count of node %d", graphstore.ErrCorrupt, id)
			}
			n = int64(c)
		}
		n += d
		switch {
		case n < 0:
			return fmt.Errorf("%w: reference count of node %d below zero", graphstore.ErrCorrupt, id)
		case n == 0:
			enc := w.i2t.Get(k)
			if enc == nil {
				return fmt.Errorf("%w: node %d is not in the dictionary", graphstore.ErrCorrupt, id)
			}
			if err := w.t2i.Delete(bytes.Clone(dictKey(enc))); err != nil {
				return err
			}
			if err := w.i2t.Delete(k); err != nil {
				return err
			}
			if err := w.rc.Delete(k); err != nil {
				return err
			}
		default:
			if err := w.rc.Put(k, binary.AppendUvarint(nil, uint64(n))); err != nil {
				return err
			}
		}
	}
	return nil
}

type newTerm struct {
	id       uint64
	enc, key []byte
}

// decoder turns node ids into terms within one transaction, caching a
// bounded number of them.
type decoder struct {
	i2t   *bbolt.Bucket
	cache map[uint64]rdf.Term
}

func newDecoder(tx *bbolt.Tx) *decoder {
	return &decoder{i2t: tx.Bucket(bI2T), cache: map[uint64]rdf.Term{}}
}

func (d *decoder) term(id uint64) (rdf.Term, error) {
	if isBlank(id) {
		return blankTerm(id), nil
	}
	if t, ok := d.cache[id]; ok {
		return t, nil
	}
	enc := d.i2t.Get(u64(id))
	if enc == nil {
		return rdf.Term{}, fmt.Errorf("%w: node %d is not in the dictionary", graphstore.ErrCorrupt, id)
	}
	t, err := decodeTerm(enc)
	if err != nil {
		return rdf.Term{}, err
	}
	if len(d.cache) >= 1<<16 {
		clear(d.cache)
	}
	d.cache[id] = t
	return t, nil
}

func (d *decoder) triple(k []byte) (rdf.Triple, error) {
	s, p, o, ok := splitKey(k)
	if !ok {
		return rdf.Triple{}, fmt.Errorf("%w: index key of %d bytes", graphstore.ErrCorrupt, len(k))
	}
	var t rdf.Triple
	var err error
	if t.S, err = d.term(s); err != nil {
		return t, err
	}
	if t.P, err = d.term(p); err != nil {
		return t, err
	}
	if o == 0 {
		t.O, err = decodeTerm(k[17:])
	} else {
		t.O, err = d.term(o)
	}
	return t, err
}
