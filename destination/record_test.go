package destination

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestRecordRoundTrip: every field survives the binary form, whichever
// shortcut (path in the key, rebuilt hash attribute, mtime = lastmod)
// applies or does not.
func TestRecordRoundTrip(t *testing.T) {
	lm := time.Date(2024, 3, 1, 12, 0, 0, 123456789, time.UTC)
	sha := "6742683f31b2d49bd0708416f2cf34c2d5f559526f4d97d639946d02ff53da14"
	md := "39493caacf60abdbf246128a5c279ed2"
	sha1 := "a9993e364706816aba3e25717850c26c9cd0d89d"
	cases := []struct {
		uri string
		r   Record
	}{
		{"http://h/d/f.bin", Record{Set: "default", Path: "d/f.bin", Length: 787, SHA256: sha, MD5: md,
			RemoteHash: "md5:" + md + " sha-256:" + sha, LastMod: lm, MTime: lm.UnixNano()}},
		{"http://h/d/f.bin", Record{Set: "s", Path: "other/f.bin", Length: 0, SHA1: sha1, RemoteHash: "sha-1:" + sha1,
			Changed: lm.Add(time.Hour), MTime: 42, NotOwned: true}},
		{"http://h/x", Record{Path: "x", SHA256: "ABC", MD5: "nothex", RemoteHash: "sha-256:ABC md5:nothex xyz:1", MTime: -5}},
		{"http://h/%C3%A9", Record{Path: "é", Length: -1, LastMod: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), MTime: 7}},
		{"http://h/a", Record{Path: "a", LastMod: lm, MTime: lm.UnixNano() + 1, RemoteHash: "sha-256:" + sha, SHA256: sha}},
		{"http://h/", Record{}},
		// Verified the strongest only: the Source's md5 is not the record's.
		{"http://h/s", Record{Path: "s", SHA256: sha, RemoteHash: "md5:" + md + " sha-256:" + sha + " sha-1:" + sha1}},
		{"http://h/t", Record{Path: "t", MD5: md, RemoteHash: "md5:" + strings.ToUpper(md) + " xyz:abc foo"}},
		{"http://h/u", Record{Path: "u", MD5: md, RemoteHash: "md5:" + md + "  md5:" + md}},
		{"http://h/v", Record{Path: "v", RemoteHash: " "}},
		// A Target's object: its Version (an ETag, a local "size:mtime:inode").
		{"http://h/w", Record{Path: "w", Length: 3, SHA256: sha, LastMod: lm, MTime: lm.UnixNano(), Version: `"9b2cf535f27731c974343645a3985328"`}},
		{"http://h/d/y", Record{Path: "d/y", MTime: 9, Version: "3:9:12345"}},
	}
	for i, c := range cases {
		v := encodeRecord(c.uri, &c.r)
		got, err := decodeRecord(c.uri, v)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, c.r) {
			t.Errorf("case %d:\n got %+v\nwant %+v", i, got, c.r)
		}
		js, _ := json.Marshal(c.r)
		if i == 0 && len(v)*3 > len(js) {
			t.Errorf("binary record %d bytes, JSON %d: not compact", len(v), len(js))
		}
		// Truncated or extended forms are errors, never a wrong record.
		for n := 0; n < len(v); n++ {
			if _, err := decodeRecord(c.uri, v[:n]); err == nil {
				t.Errorf("case %d: %d of %d bytes decoded", i, n, len(v))
			}
		}
		if _, err := decodeRecord(c.uri, append(v, 0)); err == nil {
			t.Errorf("case %d: trailing byte accepted", i)
		}
	}
}

// TestRecordV1: records in the first binary form are still read.
func TestRecordV1(t *testing.T) {
	md := "900150983cd24fb0d6963f7d28e17f72"
	raw, _ := hex.DecodeString(md)
	v := append([]byte{recordV1, fPathInKey | fRHashCombo, 1, 's', 1, 6, 0, 1}, raw...)
	v = append(v, 0, 2, 14) // no sha-1; rhashCombos[2] ("md5"); mtime 7
	got, err := decodeRecord("http://h/a", v)
	want := Record{Set: "s", Path: "a", Length: 3, MD5: md, RemoteHash: "md5:" + md, MTime: 7}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v %v, want %+v", got, err, want)
	}
}

// TestStateReadsJSONRecords: a state written by an earlier version holds
// JSON records and no persisted freelist; it opens, its records read,
// and a record written again takes the binary form.
func TestStateReadsJSONRecords(t *testing.T) {
	dest := t.TempDir()
	st, err := openState(dest, false)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	// As an earlier version left it: no freelist, JSON records.
	p := dest + "/" + StateDirName + "/state.db"
	db, err := bolt.Open(p, 0o600, &bolt.Options{NoFreelistSync: true})
	if err != nil {
		t.Fatal(err)
	}
	lm := time.Date(2024, 3, 1, 12, 0, 0, 5, time.UTC)
	old := Record{Set: "s", Path: "a/b", Length: 3, MD5: "900150983cd24fb0d6963f7d28e17f72", RemoteHash: "md5:900150983cd24fb0d6963f7d28e17f72", LastMod: lm, MTime: lm.UnixNano()}
	err = db.Update(func(tx *bolt.Tx) error {
		v, _ := json.Marshal(old)
		if err := tx.Bucket(bucketRes).Put([]byte("http://h/a/b"), v); err != nil {
			return err
		}
		return tx.Bucket(bucketPath).Put([]byte("a/b"), []byte("http://h/a/b"))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if freelistSynced(t, p) {
		t.Fatal("setup: the old-style state has a freelist")
	}
	for _, ro := range []bool{true, false} {
		st, err := openState(dest, ro)
		if err != nil {
			t.Fatal(err)
		}
		r, ok, err := st.get("http://h/a/b")
		if err != nil || !ok || !reflect.DeepEqual(r, old) {
			t.Fatalf("read-only %v: %+v %v %v", ro, r, ok, err)
		}
		n := 0
		if err := st.each("s", func(uri string, r Record) error { n++; return nil }); err != nil || n != 1 {
			t.Fatalf("each: %d %v", n, err)
		}
		st.Close()
	}
	if !freelistSynced(t, p) {
		t.Error("no freelist persisted after a writable open")
	}
	st, err = openState(dest, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	old.Length = 4
	if err := st.apply([]stateOp{{uri: "http://h/a/b", rec: &old}}); err != nil {
		t.Fatal(err)
	}
	st.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketRes).Get([]byte("http://h/a/b")); len(v) == 0 || v[0] != recordV2 {
			t.Errorf("rewritten record: %q", v)
		}
		return nil
	})
	if r, _, err := st.get("http://h/a/b"); err != nil || !reflect.DeepEqual(r, old) {
		t.Errorf("rewritten record reads %+v %v", r, err)
	}
}

// freelistSynced reads the current meta page of the bbolt file at p and
// reports whether it names a freelist page.
func freelistSynced(t *testing.T, p string) bool {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Page header 16 bytes; meta: magic, version, pageSize, flags (4 each),
	// root bucket (16), freelist, pgid, txid (8 each).
	le := binary.LittleEndian
	ps := int(le.Uint32(b[16+8:]))
	var best, txid uint64
	for i := 0; i < 2; i++ {
		m := b[i*ps+16:]
		if tx := le.Uint64(m[48:]); i == 0 || tx > txid {
			txid, best = tx, le.Uint64(m[32:])
		}
	}
	return best != ^uint64(0)
}

// TestStateApplySplit: a batch that modifies more pages than one
// transaction takes (maxTxNodes) is applied whole, in several.
func TestStateApplySplit(t *testing.T) {
	st, err := openState(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 20000
	uri := func(i int) string { return fmt.Sprintf("http://h/d/%06d", i) }
	var ops []stateOp
	for i := 0; i < n; i++ {
		ops = append(ops, stateOp{uri: uri(i), rec: &Record{Set: "s", Path: fmt.Sprintf("d/%06d", i), Length: 1}})
	}
	if err := st.apply(ops); err != nil {
		t.Fatal(err)
	}
	// Every 7th record, in an order that spreads over all pages.
	ops = ops[:0]
	for k := 0; k < n/7; k++ {
		i := (k * 7919 * 7) % n
		ops = append(ops, stateOp{uri: uri(i), rec: &Record{Set: "s", Path: fmt.Sprintf("d/%06d", i), Length: 2}})
	}
	ops = append(ops, stateOp{uri: uri(1)}) // and a deletion
	if err := st.apply(ops); err != nil {
		t.Fatal(err)
	}
	changed := map[string]bool{}
	for _, op := range ops[:len(ops)-1] {
		changed[op.uri] = true
	}
	got := 0
	err = st.each("s", func(u string, r Record) error {
		got++
		if want := map[bool]int64{true: 2, false: 1}[changed[u]]; r.Length != want {
			t.Errorf("%s: length %d, want %d", u, r.Length, want)
		}
		if o, _ := st.pathOwner(r.Path); o != u {
			t.Errorf("%s: path owner %q", r.Path, o)
		}
		return nil
	})
	if err != nil || got != n-1 || changed[uri(1)] {
		t.Errorf("%d records (%v), want %d", got, err, n-1)
	}
}
