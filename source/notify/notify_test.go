package notify_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/notify"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/validate"
)

// capture is a Publisher that keeps what it is given, or fails on demand.
type capture struct {
	mu       sync.Mutex
	payloads [][]byte
	links    [][]string
	fail     error
}

func (c *capture) Publish(ctx context.Context, topic, ct string, body []byte, links []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return c.fail
	}
	c.payloads = append(c.payloads, bytes.Clone(body))
	c.links = append(c.links, links)
	return nil
}

func TestNotifyContiguousSplitRetried(t *testing.T) {
	dir := t.TempDir()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ln.Close()
	base := "http://" + ln.Addr().String() + "/"
	src, err := source.Open(source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(), ChangeListPeriod: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	pub := &capture{}
	n := &notify.Notifier{Pub: pub, Hub: base + ".resourcesync/hub", MaxEntries: 3,
		Topic:          func(s string) string { return base + ".resourcesync/" + s + "/notifications" },
		CapabilityList: src.CapabilityListURL, ResourceBase: src.ResourceBase}
	ctx := context.Background()
	os.WriteFile(filepath.Join(dir, "before.txt"), []byte("before"), 0o644)
	if _, err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Init(ctx, "default", src.Store("default")); err != nil {
		t.Fatal(err)
	}
	// The first notification continues from the baseline: the first
	// Resource List's at (nothing changed between them).
	// (Stored compressed in serve's own tree: publish.Config.GzipLists.)
	rl, err := os.Open(filepath.Join(src.Out(), ".resourcesync", "default", "resourcelist.xml"+publish.GzipSuffix))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(rl)
	if err != nil {
		t.Fatal(err)
	}
	rlHead, err := rs.NewDecoder(zr).Head()
	rl.Close()
	if err != nil {
		t.Fatal(err)
	}
	step := func(fn func()) {
		fn()
		time.Sleep(5 * time.Millisecond)
		if _, err := src.Update(ctx); err != nil {
			t.Fatal(err)
		}
	}
	step(func() {
		for i := range 7 {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprint(i)), 0o644)
		}
	})
	if err := n.Notify(ctx, "default", src.Store("default")); err != nil {
		t.Fatal(err)
	}
	// The hub is down: nothing moves, and the next Notify sends it all.
	step(func() { os.Remove(filepath.Join(dir, "f0.txt")) })
	pub.fail = errors.New("hub down")
	if err := n.Notify(ctx, "default", src.Store("default")); err == nil {
		t.Fatal("no error from a failing hub")
	}
	pub.fail = nil
	if err := n.Notify(ctx, "default", src.Store("default")); err != nil {
		t.Fatal(err)
	}
	if len(pub.payloads) != 4 { // 3 + 3 + 1, then the deletion
		t.Fatalf("%d payloads", len(pub.payloads))
	}
	var prevUntil rs.Time
	total := 0
	for i, p := range pub.payloads {
		var problems []string
		if _, err := validate.Document(fmt.Sprint("payload ", i), bytes.NewReader(p), validate.Options{}, func(pr validate.Problem) {
			if pr.Severity.String() == "error" {
				problems = append(problems, pr.String())
			}
		}); err != nil || len(problems) > 0 {
			t.Fatalf("payload %d: %v %v\n%s", i, err, problems, p)
		}
		dec := rs.NewDecoder(bytes.NewReader(p))
		h, _ := dec.Head()
		if h.Capability() != rs.CapChangeNotification || h.MD.From.IsZero() || h.MD.Until.IsZero() {
			t.Fatalf("payload %d head %+v", i, h.MD)
		}
		if i == 0 && !h.MD.From.Time().Equal(rlHead.MD.At.Time()) {
			t.Errorf("first payload from %s, want the baseline Resource List's at %s", h.MD.From, rlHead.MD.At)
		}
		if i > 0 && !h.MD.From.Time().Equal(prevUntil.Time()) {
			t.Errorf("payload %d from %s, previous until %s", i, h.MD.From, prevUntil)
		}
		prevUntil = h.MD.Until
		for e, err := range dec.All() {
			if err != nil {
				t.Fatal(err)
			}
			if e.MD.DateTime.Time().Before(h.MD.From.Time()) || e.MD.DateTime.Time().After(h.MD.Until.Time()) {
				t.Errorf("payload %d: entry at %s outside [%s, %s]", i, e.MD.DateTime, h.MD.From, h.MD.Until)
			}
			total++
		}
	}
	if total != 8 {
		t.Errorf("%d entries notified, want 8 (before.txt is in the baseline, not notified)", total)
	}
	if l := pub.links[0]; len(l) != 3 {
		t.Errorf("links %v", l)
	}
}
