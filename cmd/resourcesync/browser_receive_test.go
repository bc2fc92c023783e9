package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/browsertest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
)

// TestBrowserReceiveCrossOrigin: a page from another loopback origin (a
// port of its own), opened in headless Chromium, tries what any page can
// do to a receiver without asking: a no-cors fetch POST of text/plain
// N-Triples, an empty POST (a deletion), a form POSTed as text/plain
// whose body parses as N-Triples, and a CORS fetch of
// application/n-triples (preflighted). The receiver refuses every one
// (its counters say it saw them) and the store holds what the genuine
// sender pushed. Before, the text/plain writes and the delete were applied.
func TestBrowserReceiveCrossOrigin(t *testing.T) {
	b := browsertest.New(t)
	const g, a = "http://ex.org/g", "http://ex.org/a"
	dir := t.TempDir()
	raddr := freeAddr(t)
	rout, stop := background(t, "sdshare", "receive", "--addr", raddr, "--store", dir, "--graph", g)
	waitFor(t, "sdshare receive", 20*time.Second, func() bool { return strings.Contains(rout.String(), "listening on") })
	base := "http://" + raddr + "/"
	target := base + "?" + url.Values{"resource": {a}}.Encode()
	hc, _ := testnet.Client(t)
	genuine := "<" + a + "> <http://ex.org/p> \"genuine\" .\n"
	resp, err := hc.Post(target, "application/n-triples", strings.NewReader(genuine))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("genuine push: %d", resp.StatusCode)
	}

	planted := `<` + a + `> <http://ex.org/p> "planted" .`
	page := fmt.Sprintf(`<!doctype html><title>a page</title><p id="st">pending</p>
<form id="f" method="post" enctype="text/plain" action="%[1]s" target="sink"><input name="%[2]s #" value="x"></form>
<iframe name="sink"></iframe>
<script>
const target = %[3]q, body = %[4]q;
const out = [];
async function attempt(name, init) {
  try { const r = await fetch(target, init); out.push(name + ":" + (r.type === "opaque" ? "opaque" : r.status)); }
  catch (e) { out.push(name + ":blocked"); }
}
(async () => {
  await attempt("nocors-text", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: body});
  await attempt("nocors-empty", {method: "POST", mode: "no-cors"});
  await attempt("cors-ntriples", {method: "POST", headers: {"Content-Type": "application/n-triples"}, body: body});
  document.getElementById("f").submit();
  document.getElementById("st").textContent = out.join(" ");
})();
</script>`, target, strings.ReplaceAll(planted, `"`, "&quot;"), target, planted+"\n")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	}))
	defer other.Close()
	b.Navigate(t, other.URL+"/")
	var st string
	waitFor(t, "the page's script", 20*time.Second, func() bool {
		st = browsertest.Eval[string](t, b, `document.getElementById("st").textContent`)
		return st != "pending"
	})
	t.Logf("the page's attempts: %s", st)
	if !strings.Contains(st, "cors-ntriples:blocked") {
		t.Errorf("the preflighted CORS push was not blocked by the browser: %s", st)
	}
	// The receiver saw and refused the three simple requests.
	waitFor(t, "the receiver's refusals", 20*time.Second, func() bool {
		resp, err := hc.Get(base + "status")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		s, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(s), "refused cross-origin 3\n")
	})
	if n := strings.Count(rout.String(), "refused a request from a web page of another origin"); n != 3 {
		t.Errorf("%d refusals logged, want 3:\n%s", n, rout)
	}
	if code := stop(); code != 0 {
		t.Fatalf("receive exit %d\n%s", code, rout)
	}
	s, err := boltstore.OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []string
	for tr, err := range s.Triples(context.Background(), g) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tr.String())
	}
	if len(got) != 1 || !strings.Contains(got[0], `"genuine"`) {
		t.Errorf("the store holds %q, want only the genuine statement", got)
	}
}
