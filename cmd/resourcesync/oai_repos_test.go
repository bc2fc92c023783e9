package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/oaitest"
	"github.com/resourcesync-go/resourcesync/oai"
	"github.com/resourcesync-go/resourcesync/oai/harvest"
)

// TestOAIFullEveryZero: --oai-full-every 0 means no full pass (it meant
// 24h); --oai-max-records and --oai-min-free stop a harvest that would
// cross them with exit 1 naming the flag.
func TestOAIFullEveryZero(t *testing.T) {
	syncLoopbackOnly(t)
	repo := oaitest.New(t, oaitest.Options{PageSize: 2, DeletedRecord: "no"})
	for i := range 5 {
		repo.Put(fmt.Sprintf("oai:x:%d", i), nil, oaiDC(fmt.Sprint("record ", i)))
	}
	for _, full := range []string{"0", "24h"} {
		t.Run(full, func(t *testing.T) {
			root := t.TempDir()
			dir, state, out := filepath.Join(root, "records"), filepath.Join(root, "state"), filepath.Join(root, "out")
			args := []string{"publish", "--oai-pmh", repo.URL, "--oai-full-every", full, "--base-url", "http://127.0.0.1/", "--out", out, "--state", state, dir}
			if code, stdout, stderr := runCLI(t, args...); code != 0 {
				t.Fatalf("publish: exit %d\n%s%s", code, stdout, stderr)
			}
			repo.Advance(48 * time.Hour)
			repo.Delete("oai:x:3")
			defer repo.Put("oai:x:3", nil, oaiDC("record 3"))
			if code, stdout, stderr := runCLI(t, args...); code != 0 {
				t.Fatalf("publish: exit %d\n%s%s", code, stdout, stderr)
			}
			_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(harvest.RecordPath("oai:x:3", oai.DCPrefix))))
			if gone := err != nil; gone != (full != "0") {
				t.Errorf("--oai-full-every %s: the deleted record's file gone: %v, want %v", full, gone, full != "0")
			}
		})
	}
	root := t.TempDir()
	code, stdout, stderr := runCLI(t, "publish", "--oai-pmh", repo.URL, "--oai-max-records", "3", "--base-url", "http://127.0.0.1/",
		"--out", filepath.Join(root, "out"), "--state", filepath.Join(root, "state"), filepath.Join(root, "records"))
	if code != exitProblems || !strings.Contains(stderr, "--oai-max-records") || !strings.Contains(stderr, "more than 3 records") {
		t.Errorf("publish of 5 records with --oai-max-records 3: exit %d\n%s%s", code, stdout, stderr)
	}
	root = t.TempDir()
	code, stdout, stderr = runCLI(t, "publish", "--oai-pmh", repo.URL, "--oai-min-free", fmt.Sprint(int64(1)<<62), "--base-url", "http://127.0.0.1/",
		"--out", filepath.Join(root, "out"), "--state", filepath.Join(root, "state"), filepath.Join(root, "records"))
	if code != exitProblems || !strings.Contains(stderr, "--oai-min-free") {
		t.Errorf("publish with --oai-min-free 4 EiB: exit %d\n%s%s", code, stdout, stderr)
	}
}
