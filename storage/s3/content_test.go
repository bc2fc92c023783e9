package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourcesync-go/resourcesync/storage"
)

func listKeys(t testing.TB, c interface {
	List(context.Context, string, func(storage.Info) error) error
}, after string) []storage.Info {
	t.Helper()
	var out []storage.Info
	if err := c.List(context.Background(), after, func(in storage.Info) error {
		out = append(out, in)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func keysOf(in []storage.Info) []string {
	var k []string
	for _, i := range in {
		k = append(k, i.Key)
	}
	return k
}

// TestContentList: keys relative to the prefix, in byte order, after a
// key, without folder markers, invalid keys or keys outside the prefix.
func TestContentList(t *testing.T) {
	t.Parallel()
	c, tb := newTestContent(t)
	keys := []string{"a0", "a/b", "a.txt", "a-b", "a/b.c/d", "a/bc", "b c/d e.txt", "ü.txt", "日本/語.txt", "Z", "z", "a+", "~"}
	for _, k := range keys {
		tb.put(t, k, []byte("data of "+k))
	}
	// Outside the prefix, a folder marker, a key no storage holds.
	tb.put(t, "dir/", nil)
	tb.raw.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(tb.name), Key: aws.String("prefix-sibling"), Body: bytes.NewReader(nil)})
	want := slices.Clone(keys)
	slices.Sort(want)
	got := listKeys(t, c, "")
	if !slices.Equal(keysOf(got), want) {
		t.Fatalf("List:\n got %q\nwant %q", keysOf(got), want)
	}
	for _, in := range got {
		if in.Size != int64(len("data of "+in.Key)) || len(in.Version) != 32 || in.ModTime.IsZero() {
			t.Errorf("List %q: %+v", in.Key, in)
		}
	}
	for _, after := range []string{"a", "a/", "a/b", "z", "~", "\xff"} {
		var exp []string
		for _, k := range want {
			if k > after {
				exp = append(exp, k)
			}
		}
		if g := keysOf(listKeys(t, c, after)); !slices.Equal(g, exp) {
			t.Errorf("List after %q:\n got %q\nwant %q", after, g, exp)
		}
	}
	// fn's error ends the listing and is returned.
	stop := errors.New("stop")
	n := 0
	if err := c.List(context.Background(), "", func(storage.Info) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("List with fn failing: %v after %d", err, n)
	}
}

// TestContentListPages: a listing longer than a page goes on with the
// continuation token, each key once.
func TestContentListPages(t *testing.T) {
	t.Parallel()
	c, tb := newTestContent(t)
	const n = listPage + 37
	// Written as files of the posix backend's bucket directory: thousand
	// PUTs would cost seconds, and the listing is the server's either way.
	dir := filepath.Join(tb.srv.Root, tb.name, "pre")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("k%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := keysOf(listKeys(t, c, ""))
	if len(got) != n || got[0] != "k00000" || got[n-1] != fmt.Sprintf("k%05d", n-1) || !slices.IsSorted(got) {
		t.Fatalf("listed %d keys (want %d): first %q", len(got), n, got[:min(3, len(got))])
	}
	if got := listKeys(t, c, "k01000"); len(got) != 36 {
		t.Errorf("after k01000: %d keys", len(got))
	}
}

// TestContentEmpty: an empty bucket and a missing prefix list nothing (the
// Source refuses that as an empty root); a missing bucket is ErrNotExist.
func TestContentEmpty(t *testing.T) {
	t.Parallel()
	tb := newTestBucket(t)
	c := tb.content(t, "")
	if got := listKeys(t, c, ""); len(got) != 0 {
		t.Errorf("empty bucket listed %v", keysOf(got))
	}
	tb.put(t, "x", []byte("x"))
	tb.Delete(t, "x")
	if got := listKeys(t, c, ""); len(got) != 0 {
		t.Errorf("emptied prefix listed %v", keysOf(got))
	}
	o := tb.options("")
	_, err := OpenContent(context.Background(), "s3://no-such-bucket-here/p", o)
	if !errors.Is(err, storage.ErrNotExist) || !errors.Is(err, ErrNoBucket) {
		t.Errorf("missing bucket: %v", err)
	}
}

// TestContentStatOpen: Stat and Open of objects with and without the
// "mtime" metadata, over a table of ranges.
func TestContentStatOpen(t *testing.T) {
	t.Parallel()
	c, tb := newTestContent(t)
	ctx := context.Background()
	data := pattern(1000, 1)
	tb.put(t, "plain", data)
	mt := time.Date(2020, 2, 3, 4, 5, 6, 789012345, time.UTC)
	_, err := tb.raw.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(tb.name), Key: aws.String(tb.prefix + "timed"), Body: bytes.NewReader(data),
		Metadata: map[string]string{"mtime": formatMtime(mt)}, ContentType: aws.String("text/plain"),
	})
	if err != nil {
		t.Fatal(err)
	}
	tb.put(t, "empty", nil)

	pl, err := c.Stat(ctx, "plain")
	if err != nil || pl.Size != 1000 || pl.ModTime.IsZero() || time.Since(pl.ModTime) > time.Hour || len(pl.Version) != 32 {
		t.Fatalf("Stat plain: %+v %v", pl, err)
	}
	ti, err := c.Stat(ctx, "timed")
	if err != nil || !ti.ModTime.Equal(mt) || ti.ContentType != "text/plain" || ti.Meta["mtime"] == "" || ti.Version != pl.Version {
		t.Fatalf("Stat timed: %+v %v", ti, err)
	}
	if _, err := c.Stat(ctx, "missing"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat missing: %v", err)
	}
	if _, err := c.Stat(ctx, "a/../b"); !errors.Is(err, storage.ErrBadKey) {
		t.Errorf("Stat bad key: %v", err)
	}
	for _, tc := range []struct {
		key            string
		offset, length int64
		want           []byte
	}{
		{"timed", 0, -1, data},
		{"timed", 0, 10, data[:10]},
		{"timed", 10, 20, data[10:30]},
		{"timed", 990, -1, data[990:]},
		{"timed", 990, 100, data[990:]},
		{"timed", 1000, -1, nil},
		{"timed", 2000, 5, nil},
		{"timed", 5, 0, nil},
		{"empty", 0, -1, nil},
		{"empty", 0, 10, nil},
	} {
		t.Run(fmt.Sprintf("%s@%d+%d", tc.key, tc.offset, tc.length), func(t *testing.T) {
			r, in, err := c.Open(ctx, tc.key, tc.offset, tc.length)
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, r); !bytes.Equal(got, tc.want) {
				t.Errorf("read %d bytes, want %d", len(got), len(tc.want))
			}
			if in.Key != tc.key || in.Version == "" || (tc.key == "timed" && (in.Size != 1000 || !in.ModTime.Equal(mt))) {
				t.Errorf("Info %+v", in)
			}
		})
	}
	if _, _, err := c.Open(ctx, "missing", 0, -1); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Open missing: %v", err)
	}
	if _, _, err := c.Open(ctx, "missing", 5, 5); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Open missing range: %v", err)
	}
}

// TestRegistry: the scheme "s3" opens through the storage registry with
// the standard chain: keys, region and AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL in the environment (path-style for the custom
// endpoint), or AWS_PROFILE naming a profile of the shared config and
// credentials files; with the location's ?endpoint=; with WithOptions.
func TestRegistry(t *testing.T) {
	tb := newTestBucket(t)
	tb.srv.SetEnv(t)
	tb.put(t, "k", []byte("v"))
	ctx := context.Background()
	dir := t.TempDir()
	cfgFile, credFile := filepath.Join(dir, "config"), filepath.Join(dir, "credentials")
	os.WriteFile(cfgFile, []byte("[profile mirror]\nregion = us-east-1\nendpoint_url = "+tb.srv.Endpoint+"\n"), 0o600)
	os.WriteFile(credFile, []byte("[mirror]\naws_access_key_id = "+tb.srv.AccessKey+"\naws_secret_access_key = "+tb.srv.SecretKey+"\n"), 0o600)
	unset := func(t *testing.T, names ...string) {
		for _, n := range names {
			t.Setenv(n, "")
			os.Unsetenv(n)
		}
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		loc  string
		env  func(t *testing.T)
	}{
		{"env-s3", ctx, "s3://" + tb.name + "/pre", func(t *testing.T) { unset(t, "AWS_ENDPOINT_URL") }},
		{"env-general", ctx, "s3://" + tb.name + "/pre", func(t *testing.T) { unset(t, "AWS_ENDPOINT_URL_S3") }},
		{"profile", ctx, "s3://" + tb.name + "/pre", func(t *testing.T) {
			unset(t, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_DEFAULT_REGION")
			t.Setenv("AWS_PROFILE", "mirror")
			t.Setenv("AWS_CONFIG_FILE", cfgFile)
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", credFile)
		}},
		{"query", ctx, "s3://" + tb.name + "/pre/?endpoint=" + tb.srv.Endpoint + "&region=us-east-1", nil},
		{"options", WithOptions(ctx, Options{Endpoint: tb.srv.Endpoint}), "s3://" + tb.name + "/pre", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != nil {
				tc.env(t)
			} else {
				// The location or the options win over the chain's.
				t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
				t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
			}
			c, err := storage.OpenContent(tc.ctx, tc.loc)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := keysOf(listKeys(t, c, "")); !slices.Equal(got, []string{"k"}) {
				t.Errorf("listed %q", got)
			}
			tg, err := storage.OpenTarget(tc.ctx, tc.loc)
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			if _, err := tg.Stat(ctx, "k"); err != nil {
				t.Error(err)
			}
		})
	}
}
