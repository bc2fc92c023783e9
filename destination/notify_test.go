package destination_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/notify"
)

type captured struct {
	mu       sync.Mutex
	payloads [][]byte
}

func (c *captured) Publish(_ context.Context, _, _ string, body []byte, _ []string) error {
	c.mu.Lock()
	c.payloads = append(c.payloads, bytes.Clone(body))
	c.mu.Unlock()
	return nil
}

func parse(t *testing.T, b []byte) (*rs.Head, []*rs.Entry) {
	t.Helper()
	dec := rs.NewDecoder(bytes.NewReader(b))
	h, err := dec.Head()
	if err != nil {
		t.Fatal(err)
	}
	var es []*rs.Entry
	for e, err := range dec.All() {
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	return h, es
}

// TestApplyOrderAndDuplicates: notifications are applied when they
// continue from the checkpoint; an early one is refused as a gap, a
// duplicate or late one is ignored.
func TestApplyOrderAndDuplicates(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("a1"))
	pub := &captured{}
	ctx := context.Background()
	var n *notify.Notifier
	// The channel starts before the first Resource List, as serve does it.
	beforeFirstUpdate = func(ts *testSource) {
		n = &notify.Notifier{Pub: pub, Hub: ts.base + "hub", Topic: func(string) string { return ts.base + "topic" },
			CapabilityList: ts.src.CapabilityListURL, ResourceBase: ts.src.ResourceBase}
		if err := n.Init(ctx, "default", ts.src.Store("default")); err != nil {
			t.Fatal(err)
		}
	}
	ts := startSource(t, dir, nil, nil)
	beforeFirstUpdate = nil
	st := ts.src.Store("default")
	dest := t.TempDir()
	m, err := destination.Open(ctx, ts.base, syncOpts(t, dest))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "b.txt", []byte("b"))
	ts.update(t)
	n.Notify(ctx, "default", st)
	writeFile(t, dir, "c.txt", []byte("c"))
	os.Remove(filepath.Join(dir, "a.txt"))
	ts.update(t)
	n.Notify(ctx, "default", st)
	if len(pub.payloads) != 2 {
		t.Fatalf("%d payloads", len(pub.payloads))
	}
	h1, e1 := parse(t, pub.payloads[0])
	h2, e2 := parse(t, pub.payloads[1])

	if _, err := m.Apply(ctx, "default", h2, e2); !errors.Is(err, destination.ErrNotContiguous) {
		t.Fatalf("second before first: %v", err)
	}
	sr, err := m.Apply(ctx, "default", h1, e1)
	if err != nil || sr.Fetched != 1 {
		t.Fatalf("first: %+v %v", sr, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "b.txt")); string(b) != "b" {
		t.Fatalf("b.txt = %q", b)
	}
	sr, err = m.Apply(ctx, "default", h1, e1)
	if err != nil || sr.Fetched != 0 || sr.Skipped != len(e1) {
		t.Fatalf("duplicate: %+v %v", sr, err)
	}
	sr, err = m.Apply(ctx, "default", h2, e2)
	if err != nil || sr.Fetched != 1 || sr.Deleted != 1 {
		t.Fatalf("second: %+v %v", sr, err)
	}
	sameTree(t, dir, dest)
	if !sr.Checkpoint.Until.Equal(h2.MD.Until.Time()) {
		t.Errorf("checkpoint %v, want the notification's until %v", sr.Checkpoint.Until, h2.MD.Until)
	}
}
