package destination_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
)

func TestParseDeleteLimit(t *testing.T) {
	for _, tc := range []struct {
		in, str string
		bad     bool
	}{
		{"10", "10", false},
		{"0", "0", false},
		{"-1", "-1", false},
		{"100%", "-1", false},
		{"25%", "25%", false},
		{"12.5%", "12.5%", false},
		{"-2", "", true},
		{"101%", "", true},
		{"x", "", true},
		{"%", "", true},
		{"NaN%", "", true},
	} {
		l, err := destination.ParseDeleteLimit(tc.in)
		if (err != nil) != tc.bad || err == nil && l.String() != tc.str {
			t.Errorf("ParseDeleteLimit(%q) = %v, %v", tc.in, l, err)
		}
	}
	if s := (destination.DeleteLimit{}).String(); s != "50% (default)" {
		t.Errorf("default: %s", s)
	}
}

// TestApplyMaxDeleteWindow (sync --follow): notifications that each
// delete a fifth of a 150-file set go through until the deletions within
// the window pass half the set; that notification deletes nothing and
// holds the checkpoint before its deletions; once the window has passed,
// the same notification is applied.
func TestApplyMaxDeleteWindow(t *testing.T) {
	dir := t.TempDir()
	for i := range 150 {
		writeFile(t, dir, fmt.Sprintf("f%03d", i), []byte(fmt.Sprint(i)))
	}
	ts, pub, notifyNow := notifiedSource(t, dir)
	ctx := context.Background()
	dest := t.TempDir()
	var skew atomic.Int64
	opt := syncOpts(t, dest)
	opt.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	m, err := destination.Open(ctx, ts.base, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if rep, err := m.Sync(ctx); err != nil || !rep.OK(false, false) {
		t.Fatalf("baseline: %v", err)
	}
	for b := range 3 {
		for i := b * 30; i < (b+1)*30; i++ {
			os.Remove(filepath.Join(dir, fmt.Sprintf("f%03d", i)))
		}
		ts.update(t)
		notifyNow()
	}
	if len(pub.payloads) != 3 {
		t.Fatalf("%d payloads", len(pub.payloads))
	}
	for b := range 2 {
		h, es := parse(t, pub.payloads[b])
		sr, err := m.Apply(ctx, "default", h, es)
		if err != nil || sr.Deleted != 30 || sr.DeleteRefused != 0 {
			t.Fatalf("notification %d: %+v %v", b, sr, err)
		}
	}
	h, es := parse(t, pub.payloads[2])
	sr, err := m.Apply(ctx, "default", h, es)
	if err != nil || sr.Deleted != 0 || sr.DeleteRefused != 30 || sr.DeleteRefusedOf != 150 {
		t.Fatalf("third notification: %+v %v", sr, err)
	}
	if !sr.Checkpoint.Until.Before(h.MD.Until.Time()) {
		t.Errorf("checkpoint %v moved to the notification's until", sr.Checkpoint.Until)
	}
	if _, err := os.Stat(filepath.Join(dest, "f060")); err != nil {
		t.Errorf("f060 deleted: %v", err)
	}
	skew.Store(int64(2 * time.Hour))
	sr, err = m.Apply(ctx, "default", h, es)
	if err != nil || sr.Deleted != 30 || sr.DeleteRefused != 0 || !sr.Checkpoint.Until.Equal(h.MD.Until.Time()) {
		t.Fatalf("after the window: %+v %v", sr, err)
	}
	sameTree(t, dir, dest)
}
