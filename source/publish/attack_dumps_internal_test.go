package publish

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/source/store"
)

// TestAttackDumpTinyFileBuffer: a tiny file read whole (up to
// lazyReadAhead of them are held per download) does not pin a buffer of
// smallFile bytes, which made every concurrent download of a package of
// tiny files hold some 8 MB.
func TestAttackDumpTinyFileBuffer(t *testing.T) {
	dir := t.TempDir()
	body := []byte("a tiny file")
	if err := os.WriteFile(filepath.Join(dir, "t.txt"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	r := &store.Resource{Path: "t.txt", Size: int64(len(body)), SHA256: sha256.Sum256(body)}
	sm := readWhole(&Set{Dir: dir}, r)
	if sm.err != nil || string(sm.b) != string(body) {
		t.Fatalf("readWhole: %q %v", sm.b, sm.err)
	}
	if c := cap(*sm.bp); c > 64<<10 {
		t.Errorf("a %d-byte file holds a buffer of %d bytes", len(body), c)
	}
	putSmallBuf(sm.bp)
}
