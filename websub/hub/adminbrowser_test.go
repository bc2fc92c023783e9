package hub

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/browsertest"
)

// evilPage is a page another party put on the admin's origin (serve
// --hub-admin-token serves the Source's files, HTML included, from the
// origin of BASE/.resourcesync/hub/admin/): its script tries to read the
// admin pages with the admin's session, by fetch and through a window it
// opens.
const evilPage = `<!doctype html><title>evil</title><p id="fetch">pending</p><p id="win">pending</p><script>
fetch("/admin/dead-letters", {headers: {Accept: "text/html"}, credentials: "include"}).then(r => r.text()).then(t => {
  document.getElementById("fetch").textContent = /SECRETPATH|name="csrf"/.test(t) ? "leak" : "none";
}).catch(e => { document.getElementById("fetch").textContent = "error"; });
var w = window.open("/admin/dead-letters");
setTimeout(function () {
  var out;
  try { out = /SECRETPATH|name="csrf"/.test(w.document.documentElement.innerHTML) ? "leak" : "none"; } catch (e) { out = "blocked"; }
  document.getElementById("win").textContent = out;
}, 1500);
</script>`

// TestAdminSameOriginPage: a page on the admin's origin cannot read the
// admin pages with the logged-in admin's session (so neither their
// callback URLs nor the CSRF token that would let it replay and log out).
func TestAdminSameOriginPage(t *testing.T) {
	browsertest.Skip(t)
	h, st := openHub(t)
	seedDeadLetter(t, st, "http://127.0.0.1:1/cb/SECRETPATH", "refused")
	mux := http.NewServeMux()
	mux.Handle("/admin/", h.Admin(AdminOptions{Token: adminToken}))
	mux.HandleFunc("/evil.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, evilPage)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	b := browsertest.New(t)
	b.Navigate(t, srv.URL+"/admin/")
	b.Key(t, "#token", adminToken)
	b.Key(t, "#token", "\r")
	time.Sleep(500 * time.Millisecond)
	b.Navigate(t, srv.URL+"/admin/dead-letters")
	if !strings.Contains(b.Text(t, "main"), "SECRETPATH") {
		t.Fatalf("not logged in: %s", b.Text(t, "main"))
	}
	b.Navigate(t, srv.URL+"/evil.html")
	var fetchR, winR string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		fetchR, winR = b.Text(t, "#fetch"), b.Text(t, "#win")
		if fetchR != "pending" && winR != "pending" {
			break
		}
	}
	if fetchR == "leak" || winR == "leak" || fetchR == "pending" || winR == "pending" {
		t.Errorf("a same-origin page read the admin pages: fetch %s, window %s", fetchR, winR)
	}
	t.Logf("fetch %s, window %s", fetchR, winR)
	// The admin still works by navigation.
	b.Navigate(t, srv.URL+"/admin/dead-letters")
	if !strings.Contains(b.Text(t, "main"), "SECRETPATH") {
		t.Errorf("the admin's own navigation refused: %s", b.Text(t, "main"))
	}
}
