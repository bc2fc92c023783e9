package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/s3test"
	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/s3"
)

// bucketSite is what a CDN in front of one bucket does: GET /KEY answers
// the object data/KEY (the collection) or, for the documents
// (.well-known/, .resourcesync/, robots.txt), site/KEY, with the
// Content-Type stored with the object. versitygw serves no anonymous
// website GETs, so this handler reads the bucket through storage/s3 (the
// SDK, signed) and nothing else: what it answers is what is in the bucket.
func bucketSite(t *testing.T, srv *s3test.Server, bucket string) *httptest.Server {
	t.Helper()
	ctx := s3.WithOptions(context.Background(), s3.Options{Endpoint: srv.Endpoint})
	open := func(loc string) storage.Content {
		c, err := storage.OpenContent(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	data, site := open("s3://"+bucket+"/data"), open("s3://"+bucket+"/site")
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.URL.Path, "/")
		c := data
		if strings.HasPrefix(key, ".well-known/") || strings.HasPrefix(key, ".resourcesync/") || key == "robots.txt" {
			c = site
		}
		rc, info, err := c.Open(r.Context(), key, 0, -1)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer rc.Close()
		if info.ContentType != "" {
			w.Header().Set("Content-Type", info.ContentType)
		}
		w.Header().Set("Content-Length", fmt.Sprint(info.Size))
		io.Copy(w, rc)
	}))
	t.Cleanup(hs.Close)
	return hs
}

// TestPublishIntoBucket: `publish --out s3://BUCKET/site` of a bucket
// Source (s3://BUCKET/data), the endpoint given by --s3-endpoint alone
// (no AWS_ENDPOINT_URL): every document is an object with its media type
// (read by aws s3api head-object), an object that publish did not write
// is left alone, a second run rewrites only what changed, and `sync` of
// the bucket served as a CDN would serve it mirrors the collection byte
// for byte.
func TestPublishIntoBucket(t *testing.T) {
	srv := s3test.Shared(t)
	s3test.SkipAWS(t)
	srv.SetEnv(t)
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	syncLoopbackOnly(t)
	bucket := srv.NewBucket(t)
	files := map[string]string{}
	for i := range 6 {
		k := fmt.Sprintf("d%d/r %d.txt", i%2, i)
		files[k] = strings.Repeat(fmt.Sprint(i), 50*i+1)
		srv.Put(t, bucket, "data/"+k, []byte(files[k]))
	}
	srv.Put(t, bucket, "site/robots.txt", []byte("theirs\n"))
	site := bucketSite(t, srv, bucket)
	state := t.TempDir()
	publishRun := func(what string) string {
		t.Helper()
		code, out, errOut := runCLI(t, "publish", "--dumps", "--s3-endpoint", srv.Endpoint, "--state", state,
			"--base-url", site.URL+"/", "--out", "s3://"+bucket+"/site", "s3://"+bucket+"/data")
		if code != 0 {
			t.Fatalf("%s: publish: exit %d\n%s\n%s", what, code, out, errOut)
		}
		return out
	}
	out := publishRun("baseline")
	if !strings.Contains(out, "to s3://"+bucket+"/site") || !strings.Contains(out, "1 not ours left alone") {
		t.Fatalf("publish said %q", out)
	}
	if got := string(srv.Get(t, bucket, "site/robots.txt")); got != "theirs\n" {
		t.Errorf("robots.txt, not publish's, is now %q", got)
	}
	// Every staged document is in the bucket, byte for byte (read back
	// by aws in one recursive copy), with its media type (aws s3api
	// head-object, once per kind of document).
	got := t.TempDir()
	srv.AWS(t, nil, "s3", "cp", "--recursive", "--only-show-errors", "s3://"+bucket+"/site/", got)
	headed := map[string]bool{}
	staged := filepath.Join(state, "out")
	err := filepath.WalkDir(staged, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".tmp-") {
			return err
		}
		rel, _ := filepath.Rel(staged, p)
		key := filepath.ToSlash(rel)
		if key == "robots.txt" {
			return nil
		}
		want, _ := os.ReadFile(p)
		if b, _ := os.ReadFile(filepath.Join(got, rel)); string(b) != string(want) {
			t.Errorf("site/%s: %d bytes in the bucket, %d published", key, len(b), len(want))
		}
		wantType := "application/xml"
		switch {
		case d.Name() == "robots.txt":
			wantType = "text/plain; charset=utf-8"
		case strings.HasSuffix(key, ".html"):
			wantType = "text/html; charset=utf-8"
		case strings.HasSuffix(key, ".zip"):
			wantType = "application/zip"
		}
		if headed[wantType] {
			return nil
		}
		headed[wantType] = true
		var head struct{ ContentType string }
		if err := json.Unmarshal(srv.AWS(t, nil, "s3api", "head-object", "--bucket", bucket, "--key", "site/"+key), &head); err != nil {
			t.Fatal(err)
		}
		if head.ContentType != wantType {
			t.Errorf("site/%s has Content-Type %q, want %q", key, head.ContentType, wantType)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(headed) != 4 {
		t.Errorf("documents of the types %v: want sitemaps, pages, dump packages and robots.txt", headed)
	}
	dest := t.TempDir()
	syncRun := func(what string) {
		t.Helper()
		if code, out, errOut := runCLI(t, "sync", "--progress", "quiet", site.URL+"/", dest); code != 0 {
			t.Fatalf("%s: sync: exit %d\n%s\n%s", what, code, out, errOut)
		}
		for k, v := range files {
			if got, err := os.ReadFile(filepath.Join(dest, filepath.FromSlash(k))); string(got) != v {
				t.Errorf("%s: %s: %d bytes, want %d (%v)", what, k, len(got), len(v), err)
			}
		}
	}
	syncRun("baseline")

	// A change: an addition and a deletion in the collection, published
	// again; only the documents that changed are sent.
	files["d0/new.txt"] = "new"
	srv.Put(t, bucket, "data/d0/new.txt", []byte("new"))
	srv.Remove(t, bucket, "data/d1/r 1.txt")
	delete(files, "d1/r 1.txt")
	out = publishRun("update")
	if !strings.Contains(out, "1 created, 0 updated, 1 deleted") || strings.Contains(out, " 0 unchanged") {
		t.Errorf("second publish said %q", out)
	}
	syncRun("update")
	if _, err := os.Stat(filepath.Join(dest, "d1", "r 1.txt")); err == nil {
		t.Error("the deleted resource is still in the mirror")
	}
}

// TestNoSecretInBucketErrors: with a wrong secret key (the server refuses
// every signature), publish from a bucket, publish into one and sync into
// one fail, and neither the secret nor the access key's pairing with it
// appears in what they print.
func TestNoSecretInBucketErrors(t *testing.T) {
	srv := s3test.Shared(t)
	srv.SetEnv(t)
	syncLoopbackOnly(t)
	const secret = "WSECRET-0123456789abcdefghijklmnopqrstuv"
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	bucket := srv.NewBucket(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	base, _ := serveDir(t, dir)
	var all strings.Builder
	for _, args := range [][]string{
		{"publish", "--base-url", "http://127.0.0.1:9/", "--out", t.TempDir(), "--state", t.TempDir(), "s3://" + bucket + "/data"},
		{"publish", "--base-url", "http://127.0.0.1:9/", "--out", "s3://" + bucket + "/site", dir},
		{"sync", "--json", "--state", t.TempDir(), base, "s3://" + bucket + "/m"},
		{"sync", "--progress", "lines", "--state", t.TempDir(), base, "s3://" + bucket + "/m"},
	} {
		code, out, errOut := runCLI(t, args...)
		if code == 0 {
			t.Errorf("%s with a wrong secret: exit 0\n%s\n%s", args[0], out, errOut)
		}
		all.WriteString(out + errOut)
	}
	if !strings.Contains(all.String(), bucket) {
		t.Fatalf("no output names the bucket:\n%s", all.String())
	}
	if strings.Contains(all.String(), secret) || strings.Contains(all.String(), "WSECRET") {
		t.Errorf("an output holds the secret key:\n%s", all.String())
	}
}

// TestBucketTLSFlags: an HTTPS endpoint signed by a private CA, named by
// --s3-endpoint: without --ca-cert publish fails naming the flag; with
// --ca-cert (or --insecure, warned) publish writes into the bucket and
// reads from it, and sync (whose --ca-cert serves the Source and the
// endpoint alike) mirrors into it.
func TestBucketTLSFlags(t *testing.T) {
	srv, ca := s3test.StartTLS(t)
	srv.SetEnv(t)
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	syncLoopbackOnly(t)
	bucket := srv.NewBucket(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha"), 0o644)
	out := "s3://" + bucket + "/site"
	publishTo := func(extra ...string) (int, string) {
		args := append([]string{"publish", "--s3-endpoint", srv.Endpoint, "--base-url", "http://127.0.0.1:9/", "--out", out}, extra...)
		code, o, e := runCLI(t, append(args, dir)...)
		return code, o + e
	}
	if code, o := publishTo(); code != exitUsage || !strings.Contains(o, "--ca-cert") {
		t.Fatalf("without --ca-cert: exit %d\n%s", code, o)
	}
	if code, o := publishTo("--ca-cert", ca); code != 0 {
		t.Fatalf("with --ca-cert: exit %d\n%s", code, o)
	}
	if code, o := publishTo("--insecure"); code != 0 || !strings.Contains(o, "warning: --insecure") {
		t.Fatalf("with --insecure: exit %d\n%s", code, o)
	}
	// The bucket as a Source: the documents publish put there are hidden
	// (.well-known, .resourcesync), robots.txt is its one resource.
	code, o, e := runCLI(t, "publish", "--s3-endpoint", srv.Endpoint, "--ca-cert", ca, "--state", t.TempDir(),
		"--base-url", "http://127.0.0.1:9/", "--out", t.TempDir(), out)
	if code != 0 || !strings.Contains(o, "published 1 resources") {
		t.Fatalf("publish of the bucket: exit %d\n%s\n%s", code, o, e)
	}
	base, _ := serveDir(t, dir)
	code, o, e = runCLI(t, "sync", "--progress", "quiet", "--s3-endpoint", srv.Endpoint, "--ca-cert", ca, "--state", t.TempDir(), base, "s3://"+bucket+"/m")
	if code != 0 {
		t.Fatalf("sync into the bucket: exit %d\n%s\n%s", code, o, e)
	}
}
