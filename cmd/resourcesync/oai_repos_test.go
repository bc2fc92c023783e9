package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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

// oaiFromShifted forwards to the repository at target with from moved a
// month forward: the bug of a real PHP provider.
func oaiFromShifted(t *testing.T, target string, g oai.Granularity) string {
	c, _ := testnet.Client(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if f := q.Get("from"); f != "" {
			if d, _, err := oai.ParseDatestamp(f); err == nil {
				q.Set("from", g.Format(d.AddDate(0, 1, 0)))
			}
		}
		resp, err := c.Get(target + "?" + q.Encode())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/oai"
}

// TestOAIStatusFromMissed: the status page of serve --oai-pmh says how
// many changes the full pass found that the repository's from had hidden
// from the incremental harvests, and keeps saying it after them.
func TestOAIStatusFromMissed(t *testing.T) {
	repo := oaitest.New(t, oaitest.Options{Granularity: oai.Day, PageSize: 4})
	repo.Generate(10)
	c, _ := testnet.Client(t)
	root := t.TempDir()
	h, err := harvest.New(harvest.Config{Endpoint: oaiFromShifted(t, repo.URL, oai.Day), Client: c,
		Dir: filepath.Join(root, "records"), State: filepath.Join(root, "state"), FullEvery: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	o := &oaiSource{h: h, shown: "http://repo/oai", log: slog.New(slog.DiscardHandler)}
	fact := func(figure string) string {
		for _, f := range o.section().Facts {
			if f.Figure == figure {
				return f.Value
			}
		}
		return ""
	}
	ctx := t.Context()
	if _, err := h.Harvest(ctx); err != nil {
		t.Fatal(err)
	}
	repo.Advance(time.Hour)
	repo.Touch(oaitest.GenID(1))
	repo.Touch(oaitest.GenID(4))
	repo.Touch(oaitest.GenID(8))
	if st, err := h.Harvest(ctx); err != nil || st.Written != 0 {
		t.Fatalf("incremental harvest through the bug: %+v, %v", st, err)
	}
	repo.Advance(24 * time.Hour)
	if st, err := o.harvest(ctx, nil); err != nil || st.Missed != 3 || st.Written != 3 {
		t.Fatalf("harvest with the full pass: %+v, %v", st, err)
	}
	repo.Advance(time.Hour)
	if _, err := o.harvest(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := fact("oai-from-missed"); got != "3" {
		t.Errorf("oai-from-missed = %q, want 3", got)
	}
	if got := fact("oai-full"); !strings.Contains(got, "the repository's from missed 3 changes") {
		t.Errorf("oai-full = %q", got)
	}
}

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
