package boltstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLockedSaysWho: an aggregator state held by another open says which
// process holds it and what to do (issue 32 item 3).
func TestLockedSaysWho(t *testing.T) {
	p := filepath.Join(t.TempDir(), "agg.db")
	s, err := Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(p, &Options{LockTimeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	for _, want := range []string{fmt.Sprintf("pid %d", os.Getpid()), "stop it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}
