package bolt_test

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

// appendV1 encodes a resource value as format version 1 wrote it.
func appendV1(b []byte, r *store.Resource) []byte {
	var flags byte
	for i, t := range []time.Time{r.ModTime, r.LastMod, r.Changed} {
		if !t.IsZero() {
			flags |= 1 << i
		}
	}
	tm := func(b []byte, t time.Time) []byte {
		if t.IsZero() {
			return b
		}
		return binary.AppendVarint(b, t.UnixNano())
	}
	b = append(b, 1, flags)
	b = binary.AppendUvarint(b, uint64(r.Size))
	b = tm(b, r.ModTime)
	b = binary.AppendUvarint(b, r.Inode)
	b = append(b, r.MD5[:]...)
	b = append(b, r.SHA256[:]...)
	b = binary.AppendUvarint(b, uint64(len(r.Type)))
	b = append(b, r.Type...)
	b = tm(b, r.LastMod)
	return tm(b, r.Changed)
}

// TestReadsVersion1: a state of format version 1 (as main wrote it before
// the compact values) opens, its records read as written, new records mix
// with them, and the state is then marked version 2.
func TestReadsVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	// Version 1 records: one of a known type with lastmod == mtime, one of
	// an unknown type with another lastmod, one with zero times.
	a := ptr(storetest.Res("a", "text"))
	a.Type, a.LastMod, a.Changed = "text/plain; charset=utf-8", a.ModTime, storetest.T0
	b := ptr(storetest.Res("b\xff", "other"))
	b.Type, b.LastMod, b.Changed = "application/x-unknown", storetest.T0.Add(-time.Hour), storetest.T0
	c := ptr(storetest.Res("c", "zero times"))
	c.ModTime, c.LastMod, c.Changed, c.Type = time.Time{}, time.Time{}, storetest.T0, ""

	raw, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = raw.Update(func(tx *bbolt.Tx) error {
		info, _ := tx.CreateBucket([]byte("info"))
		info.Put([]byte("version"), binary.BigEndian.AppendUint32(nil, 1))
		info.Put([]byte("count"), binary.BigEndian.AppendUint64(nil, 3))
		inv, _ := tx.CreateBucket([]byte("inv"))
		jnl, _ := tx.CreateBucket([]byte("jnl"))
		tx.CreateBucket([]byte("meta"))
		for i, r := range []*store.Resource{a, b, c} {
			inv.Put([]byte(r.Path), appendV1(nil, r))
			ch := []byte{'c'}
			ch = binary.AppendVarint(ch, storetest.T0.UnixNano())
			ch = binary.AppendUvarint(ch, uint64(len(r.Path)))
			ch = append(ch, r.Path...)
			jnl.Put(binary.BigEndian.AppendUint64(nil, uint64(i+1)), appendV1(ch, r))
		}
		return nil
	})
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}

	db, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*store.Resource{a, b, c} {
		if got, err := db.Get(ctx, r.Path); err != nil || !storetest.Equal(got, *r) {
			t.Errorf("Get(%q) = %+v, %v; want %+v", r.Path, got, err, *r)
		}
	}
	n := 0
	for ch, err := range db.Journal(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if want := []*store.Resource{a, b, c}[n]; ch.Kind != rs.Created || !storetest.Equal(ch.Resource, *want) {
			t.Errorf("journal %d: %+v", ch.Seq, ch)
		}
		n++
	}
	if n != 3 {
		t.Errorf("%d journal records", n)
	}
	// New values (version 2) beside the old ones.
	d := ptr(storetest.Res("d", "new"))
	d.Type, d.LastMod = "image/png", d.ModTime
	b2 := *b
	b2.Size++
	if _, _, err := db.Apply(ctx, store.Batch{Changes: []store.Change{
		{Kind: rs.Updated, Time: storetest.T0.Add(time.Second), Resource: b2},
		{Kind: rs.Created, Time: storetest.T0.Add(time.Second), Resource: *d},
	}}); err != nil {
		t.Fatal(err)
	}
	b2.Changed, d.Changed = storetest.T0.Add(time.Second), storetest.T0.Add(time.Second)
	var got []store.Resource
	for r, err := range db.ResourcesIn(ctx, "", "") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := []store.Resource{*a, b2, *c, *d}
	if len(got) != len(want) {
		t.Fatalf("inventory %+v", got)
	}
	for i := range want {
		if !storetest.Equal(got[i], want[i]) {
			t.Errorf("inventory %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if err := storetest.CheckReplay(ctx, db); err != nil {
		t.Error(err)
	}
	db.Close()

	raw, err = bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket([]byte("info")).Get([]byte("version")); binary.BigEndian.Uint32(v) != 2 {
			t.Errorf("state version %d after the upgrade", binary.BigEndian.Uint32(v))
		}
		return nil
	})
}

func ptr(r store.Resource) *store.Resource { return &r }
