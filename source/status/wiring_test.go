package status_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/status"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/memstore"
)

var figureRE = regexp.MustCompile(`data-[a-z]+="[^"]*"|<title>[^<]*</title>|<a href="[^"]*">`)

func body(t *testing.T, h http.Handler, url string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", url, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

// TestSourceHandler: source.Source.Handler serves the page at
// BASE/.resourcesync/ (and redirects the bare .resourcesync), without a
// hub section when there are no notifications.
func TestSourceHandler(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644)
	src, err := source.Open(source.Config{BaseURL: "http://src.test/x/", Sets: []source.SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := src.Handler(nil)
	code, b := body(t, h, "http://src.test/x/.resourcesync/")
	if code != 200 || !strings.Contains(b, `data-figure="resources" data-value="1"`) || !strings.Contains(b, `href="http://src.test/x/.resourcesync/default/changelist.xml"`) {
		t.Fatalf("%d\n%s", code, b)
	}
	if strings.Contains(b, `id="notifications"`) || strings.Contains(b, "Metrics") {
		t.Error("a hub section or metrics link without notifications")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://src.test/x/.resourcesync", nil))
	if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/x/.resourcesync/" {
		t.Errorf("bare: %d %s", rec.Code, rec.Header().Get("Location"))
	}
}

// TestReplicasSameFigures: two pages over two handles of one shared state
// (replicas) show the same figures, also after a change through one.
func TestReplicasSameFigures(t *testing.T) {
	db := memstore.New()
	a, b := db.Open("s"), db.Open("s")
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	mk := func(st store.Store) *status.Handler {
		return status.New(status.Config{BaseURL: "http://src.test/", Sets: []status.Set{{Name: "s", Store: st, ResourceBase: "http://src.test/"}},
			Now: func() time.Time { return now }, MaxAge: time.Nanosecond, Wait: 10 * time.Second, BytesInterval: -1})
	}
	ha, hb := mk(a), mk(b)
	defer ha.Close()
	defer hb.Close()
	figures := func(h http.Handler) string {
		_, s := body(t, h, "/")
		// the figures, the newest records and the bars (not the charts'
		// element ids, unique per page)
		return strings.Join(figureRE.FindAllString(s, -1), " ")
	}
	for i, p := range []string{"one", "two", "three"} {
		if _, _, err := a.Apply(context.Background(), store.Batch{Changes: []store.Change{{Kind: rs.Created, Time: now, Resource: store.Resource{Path: p, Size: int64(10 * (i + 1))}}}}); err != nil {
			t.Fatal(err)
		}
		fa, fb := figures(ha), figures(hb)
		if fa != fb {
			t.Fatalf("after %s:\n%s\n---\n%s", p, fa, fb)
		}
		if !strings.Contains(fb, `data-figure="bytes" data-value="`) {
			t.Fatal("no size")
		}
	}
	if !strings.Contains(figures(hb), `data-figure="bytes" data-value="60"`) {
		t.Error("size not 60")
	}
}
