package activity

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

func TestKinds(t *testing.T) {
	for _, c := range []rs.Change{rs.Created, rs.Updated, rs.Deleted} {
		got, ok := ToChange(FromChange(c))
		if !ok || got != c {
			t.Errorf("%s: round trip gave %q %v", c, got, ok)
		}
	}
	if _, ok := ToChange(Refresh); ok {
		t.Error("Refresh mapped to a change")
	}
}

func TestActivityJSON(t *testing.T) {
	a := Activity{Type: Update, Object: &Ref{ID: "http://127.0.0.1/a", Type: "Document"},
		EndTime: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"Update","object":{"id":"http://127.0.0.1/a","type":"Document"},"endTime":"2026-11-29T08:00:00Z"}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
	var back Activity
	if err := json.NewDecoder(strings.NewReader(string(b))).Decode(&back); err != nil || back.Object.ID != a.Object.ID || !back.EndTime.Equal(a.EndTime) {
		t.Errorf("decode: %v %+v", err, back)
	}
}
