package destination

import (
	"encoding/json"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestStateMigratesKeys: a state written before URIs were normalised is
// rewritten on open: keys in normal form, the path index built.
func TestStateMigratesKeys(t *testing.T) {
	dest := t.TempDir()
	st, err := openState(dest, false)
	if err != nil {
		t.Fatal(err)
	}
	// Make it look like an old state: a key as the list spelled it, no
	// layout, no path index.
	err = st.db.Update(func(tx *bolt.Tx) error {
		v, _ := json.Marshal(Record{Set: "s", Path: "aA", Length: 1})
		if err := tx.Bucket(bucketRes).Put([]byte("http://h/a%41"), v); err != nil {
			return err
		}
		if err := tx.DeleteBucket(bucketPath); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Delete([]byte("layout"))
	})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st, err = openState(dest, false); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok, _ := st.get("http://h/a%41"); ok {
		t.Error("old key kept")
	}
	if r, ok, err := st.get("http://h/aA"); !ok || err != nil || r.Path != "aA" {
		t.Errorf("normalised key: %+v %v %v", r, ok, err)
	}
	if u, _ := st.pathOwner("aA"); u != "http://h/aA" {
		t.Errorf("path index: %q", u)
	}
}

// TestStatePathTransfer: a record installed at a path another URI's
// record names replaces that record; a deletion frees the path.
func TestStatePathTransfer(t *testing.T) {
	st, err := openState(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.apply([]stateOp{{uri: "u1", rec: &Record{Path: "p"}}}))
	must(st.apply([]stateOp{{uri: "u2", rec: &Record{Path: "p"}}}))
	if _, ok, _ := st.get("u1"); ok {
		t.Error("u1 still recorded at p")
	}
	if u, _ := st.pathOwner("p"); u != "u2" {
		t.Errorf("owner %q", u)
	}
	must(st.apply([]stateOp{{uri: "u2", rec: &Record{Path: "q"}}}))
	if u, _ := st.pathOwner("p"); u != "" {
		t.Errorf("p still owned by %q after u2 moved", u)
	}
	must(st.apply([]stateOp{{uri: "u2"}}))
	if u, _ := st.pathOwner("q"); u != "" {
		t.Errorf("q still owned by %q after u2 was deleted", u)
	}
}
