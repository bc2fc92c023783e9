package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/oaitest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// TestOAIServeFailingRepositorySecrets: a repository that fails every
// request, reached with a password in the URL's userinfo and an API key
// in its query: serve keeps serving, the status page shows the error
// (escaped) without either secret, nothing is logged with them, and the
// repository is not hammered (one Identify per --oai-interval).
func TestOAIServeFailingRepositorySecrets(t *testing.T) {
	syncLoopbackOnly(t)
	var hits atomic.Int64
	repo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/xml")
		io.WriteString(w, `<?xml version="1.0"?><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2020-01-01T00:00:00Z</responseDate><request>x</request><error code="badArgument">&lt;script&gt;alert(1)&lt;/script&gt; no</error></OAI-PMH>`)
	}))
	defer repo.Close()
	const user, pw, key = "harvesterUser", "s3cretPassw0rd", "t0kenValue42"
	endpoint := strings.Replace(repo.URL, "http://", "http://"+user+":"+pw+"@", 1) + "/oai?apikey=" + key
	root := t.TempDir()
	addr := freeAddr(t)
	base := "http://" + addr + "/"
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"resourcesync", "serve", "--addr", addr, "--oai-pmh", endpoint, "--oai-interval", "1h",
			"--state", filepath.Join(root, "state"), filepath.Join(root, "records")}, &out, &errs)
	}()
	c, _ := testnet.Client(t)
	get := func(u string) string {
		resp, err := c.Get(u)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var page string
	waitFor(t, "the harvest's error on the status page", 20*time.Second, func() bool {
		page = get(base + ".resourcesync/")
		return strings.Contains(page, `data-figure="oai-error"`)
	})
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve: exit %d\n%s", code, errs.String())
	}
	if strings.Contains(page, user) {
		t.Errorf("the public status page shows the user name %q:\n%s", user, page)
	}
	for _, secret := range []string{pw, key} {
		if strings.Contains(page, secret) {
			t.Errorf("the status page shows the secret %q:\n%s", secret, page)
		}
		if strings.Contains(errs.String()+out.String(), secret) {
			t.Errorf("the log shows the secret %q:\n%s", secret, errs.String())
		}
	}
	if strings.Contains(page, "<script>alert") {
		t.Errorf("the repository's message is not escaped:\n%s", page)
	}
	if !strings.Contains(page, repo.URL[len("http://"):]) {
		t.Errorf("the status page does not name the repository %s:\n%s", repo.URL, page)
	}
	if n := hits.Load(); n > 3 {
		t.Errorf("%d requests to a failing repository within one --oai-interval", n)
	}
}

// TestOAIServeFirstHarvestUnavailable: while the first harvest (the
// baseline) runs, serve answers 503 with Retry-After (a Destination comes
// back later) instead of holding connections until it ends; then the
// Source is served.
func TestOAIServeFirstHarvestUnavailable(t *testing.T) {
	syncLoopbackOnly(t)
	repo := oaitest.New(t, oaitest.Options{PageSize: 2})
	for i := range 5 {
		repo.Put(fmt.Sprintf("oai:x:%d", i), nil, oaiDC(fmt.Sprint("record ", i)))
	}
	release := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })
	repo.OnRequest(func(verb string, _ url.Values) {
		if verb == "ListRecords" {
			<-release
		}
	})
	root := t.TempDir()
	addr := freeAddr(t)
	base := "http://" + addr + "/"
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"resourcesync", "serve", "--addr", addr, "--oai-pmh", repo.URL, "--oai-interval", "1h",
			"--state", filepath.Join(root, "state"), filepath.Join(root, "records")}, &out, &errs)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve: exit %d\n%s", code, errs.String())
		}
	}()
	c, _ := testnet.Client(t)
	c.Timeout = 5 * time.Second // a hanging connection fails the wait below
	status := func() (int, string) {
		resp, err := c.Get(base + ".well-known/resourcesync")
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	waitFor(t, "503 with Retry-After during the first harvest", 20*time.Second, func() bool {
		code, ra := status()
		return code == http.StatusServiceUnavailable && ra != ""
	})
	once.Do(func() { close(release) })
	waitFor(t, "the Source served after the first harvest", 20*time.Second, func() bool {
		code, _ := status()
		return code == http.StatusOK
	})
	resp, err := c.Get(base + ".resourcesync/default/resourcelist.xml")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(b), "<url>"); n != 5 {
		t.Errorf("the baseline Resource List has %d records, want 5:\n%s", n, b)
	}
}

// TestOAIServeMirrorWhileFollowing: oai serve --mirror starts (taking the
// Source's base URL from the mirror) while sync --follow keeps the
// mirror's state open for writing; it used to fail with "locked".
func TestOAIServeMirrorWhileFollowing(t *testing.T) {
	syncLoopbackOnly(t)
	dir, dest := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	base, _ := startServe(t, dir)
	fo, _ := background(t, "sync", "--follow", base, dest)
	waitFor(t, "sync --follow to mirror a.txt", 20*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(dest, "a.txt"))
		return err == nil
	})
	addr := freeAddr(t)
	o, stop := background(t, "oai", "serve", "--mirror", "--addr", addr, dest)
	waitFor(t, "oai serve --mirror", 20*time.Second, func() bool {
		return strings.Contains(o.String(), "serving OAI-PMH") || strings.Contains(o.String(), "locked")
	})
	if !strings.Contains(o.String(), "serving OAI-PMH at http://"+addr+"/ (resources under "+base+")") {
		t.Fatalf("oai serve --mirror beside sync --follow: %s\n(sync: %s)", o.String(), fo.String())
	}
	stop()
}
