package scan_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/source/scan"
)

// TestBaselineCommitsWhileHashing: a baseline smaller than BatchSize is
// not committed in one batch once every file is hashed (a commit nothing
// overlaps, the whole scan's worth of inserts on the publish's critical
// path); batches go to the committer while the workers hash the rest.
func TestBaselineCommitsWhileHashing(t *testing.T) {
	root := t.TempDir()
	const n = 1200 // more than eagerBatch (1024)
	for i := range n {
		write(t, root, fmt.Sprintf("d%02d/f%05d.txt", i%10, i), fmt.Sprint("file ", i))
	}
	db := openDB(t, filepath.Join(t.TempDir(), "state.db"))
	s, err := scan.New(scan.Options{Root: root, Store: db, Logger: quiet()}) // BatchSize: its default, more than n
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !st.BaselineDone || st.Created != n {
		t.Fatalf("%+v", st)
	}
	if st.Batches < 2 {
		t.Errorf("%d files committed in %d batch(es) after the last was hashed", n, st.Batches)
	}
	ss, err := db.Stats(context.Background())
	if err != nil || ss.Resources != n || ss.LastSeq != 0 {
		t.Fatalf("%+v %v", ss, err)
	}
}
