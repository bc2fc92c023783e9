package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/oaitest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/oai"
	"github.com/resourcesync-go/resourcesync/oai/harvest"
)

// TestOAIUsage: the arguments of --oai-pmh are checked before anything
// is created or dialed (exit 2 naming what is wrong), and the help of
// serve and publish explains them.
func TestOAIUsage(t *testing.T) {
	dir := t.TempDir()
	recs, state := filepath.Join(dir, "records"), filepath.Join(dir, "state")
	const repo = "http://127.0.0.1:1/oai"
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no DIR", []string{"serve", "--oai-pmh", repo, "--state", state}, "give one DIR"},
		{"no state", []string{"serve", "--oai-pmh", repo, recs}, "give --state"},
		{"state inside DIR", []string{"serve", "--oai-pmh", repo, "--state", filepath.Join(recs, ".rs"), recs}, "outside DIR"},
		{"watch", []string{"serve", "--oai-pmh", repo, "--watch", "--state", state, recs}, "--watch with --oai-pmh"},
		{"set", []string{"serve", "--oai-pmh", repo, "--set", "a=" + recs, "--state", state}, "no --set"},
		{"not http", []string{"serve", "--oai-pmh", "ftp://x/oai", "--state", state, recs}, "http(s) base URL"},
		{"prefix without oai-pmh", []string{"serve", "--metadata-prefix", "marcxml", dir}, "needs --oai-pmh"},
		{"publish no state", []string{"publish", "--oai-pmh", repo, "--base-url", "http://x/", "--out", filepath.Join(dir, "out"), recs}, "give --state"},
		{"publish oai-set without oai-pmh", []string{"publish", "--oai-set", "s", "--base-url", "http://x/", "--out", filepath.Join(dir, "out"), dir}, "needs --oai-pmh"},
		{"negative full-every", []string{"serve", "--oai-pmh", repo, "--oai-full-every", "-1h", "--state", state, recs}, "--oai-full-every"},
		{"zero max-records", []string{"serve", "--oai-pmh", repo, "--oai-max-records", "0", "--state", state, recs}, "--oai-max-records"},
		{"negative min-free", []string{"serve", "--oai-pmh", repo, "--oai-min-free", "-1", "--state", state, recs}, "--oai-min-free"},
		{"max-records without oai-pmh", []string{"serve", "--oai-max-records", "5", dir}, "needs --oai-pmh"},
		{"zero max-delete", []string{"serve", "--oai-pmh", repo, "--oai-max-delete", "0", "--state", state, recs}, "--oai-max-delete"},
		{"max-delete without oai-pmh", []string{"serve", "--oai-max-delete", "20", dir}, "needs --oai-pmh"},
		{"postgres", []string{"serve", "--oai-pmh", repo, "--store", "postgres://u@127.0.0.1:1/db", "--state", state, recs}, "not supported"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(t, c.args...)
			if code != exitUsage || !strings.Contains(errs+out, c.want) {
				t.Fatalf("%v: exit %d, want %d naming %q:\n%s%s", c.args, code, exitUsage, c.want, out, errs)
			}
		})
	}
	for _, cmd := range []string{"serve", "publish"} {
		_, out, _ := runCLI(t, cmd, "--help")
		for _, want := range []string{"See also: resourcesync help", " oai-pmh", "--oai-pmh", "--metadata-prefix", "--oai-set", "--oai-full-every", "--oai-max-records", "--oai-max-delete", "--oai-min-free"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s --help lacks %q", cmd, want)
			}
		}
	}
	_, out, _ := runCLI(t, "help", "oai-pmh")
	for _, want := range []string{"OAI-PMH REPOSITORY", "STATE/oai-pmh", "--oai-full-every", "--oai-max-delete"} {
		if !strings.Contains(out, want) {
			t.Errorf("help oai-pmh lacks %q", want)
		}
	}
	if _, out, _ := runCLI(t, "serve", "--help"); !strings.Contains(out, "--oai-interval") {
		t.Error("serve --help lacks --oai-interval")
	}
}

// oaiDC is a small oai_dc record.
func oaiDC(title string) map[string]string {
	return map[string]string{oai.DCPrefix: `<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>` + title + `</dc:title></oai_dc:dc>`}
}

// TestOAIPublish: publish --oai-pmh harvests a repository into DIR and
// publishes it: a first run lists every record (Resource List at
// RecordPath URLs, the records journaled as created), a second one the
// changes (an update and a deletion in the Change List); a repository that
// fails exits 1 and keeps the published state.
func TestOAIPublish(t *testing.T) {
	syncLoopbackOnly(t)
	repo := oaitest.New(t, oaitest.Options{PageSize: 2})
	for i := range 5 {
		repo.Put(fmt.Sprintf("oai:x:%d", i), nil, oaiDC(fmt.Sprint("record ", i)))
	}
	root := t.TempDir()
	dir, state, out := filepath.Join(root, "records"), filepath.Join(root, "state"), filepath.Join(root, "out")
	args := []string{"publish", "--oai-pmh", repo.URL, "--base-url", "http://127.0.0.1/", "--out", out, "--state", state, dir}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("publish: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "published 5 resources") {
		t.Fatalf("publish: %s", stdout)
	}
	rl, err := os.ReadFile(filepath.Join(out, ".resourcesync", "default", "resourcelist.xml"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		rel := harvest.RecordPath(fmt.Sprintf("oai:x:%d", i), oai.DCPrefix)
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
			t.Errorf("record %d: %v", i, err)
		}
		if !strings.Contains(string(rl), ">http://127.0.0.1/"+(&url.URL{Path: rel}).EscapedPath()+"<") {
			t.Errorf("the Resource List does not name %s:\n%s", rel, rl)
		}
	}
	repo.Advance(time.Hour)
	repo.Put("oai:x:1", nil, oaiDC("record 1, updated"))
	repo.Delete("oai:x:2")
	if code, stdout, stderr = runCLI(t, args...); code != 0 || !strings.Contains(stdout, "published 4 resources") {
		t.Fatalf("second publish: exit %d\n%s%s", code, stdout, stderr)
	}
	cls, _ := filepath.Glob(filepath.Join(out, ".resourcesync", "default", "changelists", "*.xml"))
	var cl string
	for _, f := range cls {
		b, _ := os.ReadFile(f)
		cl += string(b)
	}
	for _, want := range []string{`change="updated"`, `change="deleted"`} {
		if !strings.Contains(cl, want) {
			t.Errorf("the Change Lists lack %s:\n%s", want, cl)
		}
	}
	repo.Fail(1000, 404, 0) // not retried, unlike an unreachable repository
	code, stdout, stderr = runCLI(t, args...)
	if code != exitProblems || !strings.Contains(stderr, "harvest failed") || !strings.Contains(stdout, "published 4 resources") {
		t.Fatalf("publish of an unreachable repository: exit %d, want %d naming the failed harvest, the state published:\n%s%s", code, exitProblems, stdout, stderr)
	}
}

// TestOAIServeStatus: serve --oai-pmh harvests at start and shows the
// repository, the last harvest and its rate on the status page; a change
// in the repository is published at the next --oai-interval.
func TestOAIServeStatus(t *testing.T) {
	syncLoopbackOnly(t)
	repo := oaitest.New(t, oaitest.Options{PageSize: 3})
	for i := range 7 {
		repo.Put(fmt.Sprintf("oai:x:%d", i), nil, oaiDC(fmt.Sprint("record ", i)))
	}
	root := t.TempDir()
	addr := freeAddr(t)
	base := "http://" + addr + "/"
	ctx, cancel := context.WithCancel(context.Background())
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"resourcesync", "serve", "--addr", addr, "--oai-pmh", repo.URL, "--oai-interval", "100ms",
			"--state", filepath.Join(root, "state"), filepath.Join(root, "records")}, &out, &errs)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve: exit %d\n%s", code, errs.String())
		}
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
	waitFor(t, "the harvested records on the status page", 20*time.Second, func() bool {
		p := get(base + ".resourcesync/")
		return strings.Contains(p, `data-figure="oai-records">7<`) && strings.Contains(p, `data-figure="oai-rate"`) &&
			strings.Contains(p, repo.URL) && strings.Contains(p, `data-figure="resources" data-value="7"`)
	})
	repo.Advance(time.Minute)
	repo.Put("oai:x:new", nil, oaiDC("new"))
	rel := harvest.RecordPath("oai:x:new", oai.DCPrefix)
	waitFor(t, "the new record in a Change List", 20*time.Second, func() bool {
		return strings.Contains(get(base+".resourcesync/default/changelist.xml")+get(base+".resourcesync/default/resourcelist.xml"), (&url.URL{Path: rel}).EscapedPath())
	})
	if got := get(base + (&url.URL{Path: rel}).EscapedPath()); !strings.Contains(got, "<dc:title>new</dc:title>") && !strings.Contains(got, ">new<") {
		t.Fatalf("the record as served: %q", got)
	}
}
