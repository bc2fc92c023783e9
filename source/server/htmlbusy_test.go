package server

import (
	"github.com/resourcesync-go/resourcesync/internal/web"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestHTMLViewsBounded: while every HTML slot is taken, a browser's
// request waits, then gets 503 with Retry-After; a machine client gets
// the XML at once as ever; a slot freed serves the view again.
func TestHTMLViewsBounded(t *testing.T) {
	docs := t.TempDir()
	p := filepath.Join(docs, ".resourcesync", "default", "changelist.xml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="changelist" from="2026-01-01T00:00:00Z"/><url><loc>http://src.example/a</loc><rs:md change="created" datetime="2026-01-01T00:00:00Z"/></url></urlset>`), 0o644)
	h := &Handler{Docs: docs, Mount: "/"}
	old := web.SlotWait
	web.SlotWait = 50 * time.Millisecond
	defer func() { web.SlotWait = old }()
	get := func(accept string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "http://src.example/.resourcesync/default/changelist.xml", nil)
		r.Header.Set("Accept", accept)
		if accept == chromiumAccept {
			r.Header.Set("Sec-Fetch-Dest", "document")
			r.Header.Set("Sec-Fetch-Mode", "navigate")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	for range cap(web.Slots) {
		web.Slots <- struct{}{}
	}
	if rec := get(chromiumAccept); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("busy: %d %v", rec.Code, rec.Header())
	}
	if rec := get("application/xml"); rec.Code != 200 || rec.Header().Get("Content-Type") != "application/xml" {
		t.Errorf("XML while busy: %d %v", rec.Code, rec.Header())
	}
	for range cap(web.Slots) {
		<-web.Slots
	}
	if rec := get(chromiumAccept); rec.Code != 200 || len(web.Slots) != 0 {
		t.Errorf("after: %d, %d slots taken", rec.Code, len(web.Slots))
	}
}
