package source

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/store/memstore"
)

// TestReplicaOtherBaseURL: a replica started with another --base-url than
// the scanner's cannot serve the same documents. It must say so (an error
// naming the settings), not render Change Lists with its own URLs and
// retry the Resource List every half second forever in silence.
func TestReplicaOtherBaseURL(t *testing.T) {
	dir := t.TempDir()
	for i := range 5 {
		write(t, dir, filepath.Join("d", string(rune('a'+i))), "v1")
	}
	open := memOpener(memstore.New())
	a := startReplica(t, open, dir, t.TempDir())
	// The leader's publish, not the empty list every replica renders
	// before one leads: only then does the meta name its base URL.
	for deadline := time.Now().Add(10 * time.Second); !a.leads() || bytes.Count(docs(t, a.src.Out())[".resourcesync/default/resourcelist.xml"], []byte("<url>")) != 5; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first replica does not lead and publish")
		}
	}
	b, err := Open(Config{BaseURL: "http://127.0.0.1:2/other/", Sets: []SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(),
		OpenStore: open, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Until the leader's meta is complete (the Change Lists' is written
	// after the Resource List), a render is "behind", not refused.
	for err == nil && ctx.Err() == nil {
		_, err = b.Render(ctx)
		time.Sleep(20 * time.Millisecond)
	}
	if !errors.Is(err, publish.ErrConfig) || !strings.Contains(err.Error(), "base URL") {
		t.Fatalf("render with another base URL: %v; want publish.ErrConfig naming the base URL", err)
	}
	if d := docs(t, b.Out()); len(d[".resourcesync/default/changelist.xml"]) > 0 {
		t.Errorf("Change Lists rendered with another base URL")
	}
}
