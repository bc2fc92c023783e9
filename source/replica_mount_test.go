package source

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/memstore"
)

// syncBuffer is a log destination the test reads while replicas write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestReplicaEmptyMount: a replica whose shared directory is not mounted
// (an empty mount point) takes the scanner role when the leader stops. It
// must not journal the deletion of every resource (which every
// Destination would then apply): a scan of an empty root against a
// non-empty inventory fails instead, changing nothing, and the replica
// gives the role up for a while, so that one with the directory mounted
// scans.
func TestReplicaEmptyMount(t *testing.T) {
	setYieldPause.Do(func() { yieldPause = 3 * time.Second }) // once: a replica of an earlier run (-count) may still read it
	dir := t.TempDir()
	for i := range 5 {
		write(t, dir, filepath.Join("d", string(rune('a'+i))), "v1")
	}
	db := memstore.New()
	open := memOpener(db)
	a := startReplica(t, open, dir, t.TempDir())
	var logs syncBuffer
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s\n%s", what, logs.String())
			}
		}
	}
	// Leading is not enough: the leader's first scan (the one that fills
	// the inventory) runs after it takes the role. Were it stopped before
	// that scan commits, the unmounted replica would find an empty
	// inventory, which an empty directory rightly matches.
	st := db.Open("default")
	defer st.Close()
	until("the first replica to lead and fill the inventory", func() bool {
		s, _ := st.Stats(context.Background())
		return a.leads() && s.Resources == 5
	})
	unmounted := t.TempDir()
	b, err := Open(Config{BaseURL: "http://127.0.0.1:1/", Sets: []SetConfig{{Name: "default", Dir: unmounted}}, StateDir: t.TempDir(),
		OpenStore: open, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, RunOptions{RescanInterval: 50 * time.Millisecond}) }()
	t.Cleanup(func() { cancel(); <-done; b.Close() })
	a.stop()
	until("the unmounted replica to take the role and give it up", func() bool { return strings.Contains(logs.String(), "given up") })
	noDeletion(t, st)
	if !strings.Contains(logs.String(), "not mounted?") {
		t.Errorf("the log does not say why:\n%s", logs.String())
	}
	c := startReplica(t, open, dir, t.TempDir())
	write(t, dir, "d/new", "new")
	until("the replica with the directory mounted to scan", func() bool {
		s, _ := st.Stats(context.Background())
		return s.LastSeq >= 1 && c.leads()
	})
	noDeletion(t, st)
}

var setYieldPause sync.Once

func noDeletion(t *testing.T, st store.Store) {
	t.Helper()
	for c, err := range st.Journal(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Kind == rs.Deleted {
			t.Fatalf("journal: %s deleted: an empty mount point emptied the collection", c.Path())
		}
	}
}
