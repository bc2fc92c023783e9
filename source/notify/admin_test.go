package notify_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/notify"
)

// The embedded hub's admin is served at BASE/.resourcesync/hub/admin/
// with ServiceConfig.AdminToken, and not at all without.
func TestEmbeddedHubAdmin(t *testing.T) {
	for _, tok := range []string{"", "adm"} {
		cfg := source.Config{BaseURL: "http://127.0.0.1:1/src/", StateDir: t.TempDir(), Sets: []source.SetConfig{{Name: "s"}}}
		svc, err := notify.Setup(&cfg, notify.ServiceConfig{AdminToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		h := svc.Handlers()[".resourcesync/hub"]
		get := func(path, bearer string) *httptest.ResponseRecorder {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.Header.Set("Accept", "text/html")
			if bearer != "" {
				r.Header.Set("Authorization", "Bearer "+bearer)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			return rec
		}
		login := get("/src/.resourcesync/hub/admin/", "")
		stats := get("/src/.resourcesync/hub/admin/stats", tok)
		if tok == "" {
			if strings.Contains(login.Body.String(), "Admin token") || stats.Code == 200 {
				t.Errorf("admin served without a token: %d %d", login.Code, stats.Code)
			}
		} else {
			if login.Code != 200 || !strings.Contains(login.Body.String(), `<label for="token">Admin token</label>`) {
				t.Errorf("login page: %d %s", login.Code, login.Body)
			}
			if stats.Code != 200 || !strings.Contains(stats.Body.String(), `"Subscriptions": 0`) {
				t.Errorf("stats: %d %s", stats.Code, stats.Body)
			}
			if rec := get("/src/.resourcesync/hub/admin", ""); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/src/.resourcesync/hub/admin/" {
				t.Errorf("admin without its slash: %d %v", rec.Code, rec.Header())
			}
		}
		svc.Close()
	}
}
