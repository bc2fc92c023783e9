package boltstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// TestLockedSaysWho: a hub state held by another open says which process
// holds it and what to do (issue 32 item 3; flock conflicts between two
// opens of one process as between two processes).
func TestLockedSaysWho(t *testing.T) {
	p := filepath.Join(t.TempDir(), "hub.db")
	s, err := Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(p, nil)
	if !errors.Is(err, hubstore.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	for _, want := range []string{fmt.Sprintf("pid %d", os.Getpid()), "stop it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}
