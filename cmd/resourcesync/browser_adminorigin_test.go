package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/browsertest"
)

// TestBrowserServeAdminSharedOrigin: serve --hub-admin-token serves the
// Source's files from the admin's origin; an HTML file among them (a
// Source publishing what others deposit) must not read the admin pages
// with the logged-in admin's session, by fetch or through a window it
// opens (it would get the CSRF token: replay, log out).
func TestBrowserServeAdminSharedOrigin(t *testing.T) {
	b := browsertest.New(t)
	dir := t.TempDir()
	evil := `<!doctype html><title>deposit</title><p id="fetch">pending</p><p id="win">pending</p><script>
fetch(".resourcesync/hub/admin/", {credentials: "include"}).then(r => r.text()).then(t => {
  document.getElementById("fetch").textContent = /name="csrf"/.test(t) ? "leak" : "none";
}).catch(e => { document.getElementById("fetch").textContent = "error"; });
var w = window.open(".resourcesync/hub/admin/");
setTimeout(function () {
  var out;
  try { out = /name="csrf"/.test(w.document.documentElement.innerHTML) ? "leak" : "none"; } catch (e) { out = "blocked"; }
  document.getElementById("win").textContent = out;
}, 1500);
</script>`
	if err := os.WriteFile(filepath.Join(dir, "deposit.html"), []byte(evil), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	base := "http://" + addr + "/"
	sout, _ := background(t, "serve", "--addr", addr, "--allow-private-callbacks", "--hub-admin-token", "adm", "--state", t.TempDir(), dir)
	waitFor(t, "the Source", 15*time.Second, func() bool { return strings.Contains(sout.String(), "change notifications") })

	b.Navigate(t, base+".resourcesync/hub/admin/")
	b.Key(t, "#token", "adm")
	b.Key(t, "#token", "\r")
	waitFor(t, "the login", 10*time.Second, func() bool {
		return len(b.Attrs(t, `input[name="csrf"]`, "value")) > 0
	})
	b.Navigate(t, base+"deposit.html")
	// The resources are sandboxed (Content-Security-Policy: sandbox):
	// the script does not even run ("pending" stays). Were it to run, the
	// Fetch Metadata check and COOP would still stop it ("none",
	// "blocked"): TestAdminSameOriginPage checks those on their own.
	time.Sleep(2500 * time.Millisecond)
	f, w := b.Text(t, "#fetch"), b.Text(t, "#win")
	t.Logf("the deposit's script: fetch %s, window %s", f, w)
	if f == "leak" || w == "leak" {
		t.Errorf("a file of the Source read the admin pages: fetch %s, window %s", f, w)
	}
	b.Navigate(t, base+".resourcesync/hub/admin/")
	if len(b.Attrs(t, `input[name="csrf"]`, "value")) == 0 {
		t.Error("the admin's own navigation lost the session")
	}
}
