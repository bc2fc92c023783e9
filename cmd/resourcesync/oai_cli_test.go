package main

import (
	"path/filepath"
	"strings"
	"testing"
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
		for _, want := range []string{"OAI-PMH REPOSITORY", "--oai-pmh", "--metadata-prefix", "--oai-set", "--oai-full-every", "STATE/oai-pmh"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s --help lacks %q", cmd, want)
			}
		}
	}
	if _, out, _ := runCLI(t, "serve", "--help"); !strings.Contains(out, "--oai-interval") {
		t.Error("serve --help lacks --oai-interval")
	}
}
