package s3

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/resourcesync-go/resourcesync/storage"
)

// hostile is a small S3 server on loopback that answers as a broken or
// hostile one would: its listing and GET handlers are the test's.
type hostile struct {
	srv    *httptest.Server
	lists  atomic.Int64 // ListObjectsV2 requests
	list   func(w http.ResponseWriter, r *http.Request, n int64)
	object func(w http.ResponseWriter, r *http.Request)
}

func newHostile(t *testing.T) *hostile {
	t.Helper()
	h := &hostile{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Path style: /bucket or /bucket/key.
		_, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if key == "" && r.URL.Query().Get("list-type") == "2" {
			n := h.lists.Add(1)
			if n == 1 || h.list == nil { // open's probe
				writeList(w, false, "", nil)
				return
			}
			h.list(w, r, n)
			return
		}
		if h.object != nil {
			h.object(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hostile) options() Options {
	return Options{
		Endpoint:    h.srv.URL,
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIAHOSTILEHOSTILE01", "hostile-secret-key", ""),
		Retry:       fastRetry,
	}
}

// writeList answers a ListObjectsV2 page with keys (of 1 byte each).
func writeList(w http.ResponseWriter, truncated bool, next string, keys []string) {
	w.Header().Set("Content-Type", "application/xml")
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix></Prefix><KeyCount>%d</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>%t</IsTruncated>`, len(keys), truncated)
	if next != "" {
		fmt.Fprintf(&b, `<NextContinuationToken>%s</NextContinuationToken>`, next)
	}
	for _, k := range keys {
		fmt.Fprintf(&b, `<Contents><Key>%s</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>"0cc175b9c0f1b6a831c399e269772661"</ETag><Size>1</Size><StorageClass>STANDARD</StorageClass></Contents>`, k)
	}
	b.WriteString(`</ListBucketResult>`)
	io.WriteString(w, b.String())
}

// TestHostileListEndless: a server whose listing never ends — pages
// without a key, truncated, that hand back the token they were asked
// with, or a new one each time — must make List fail, not loop for ever
// (a rescan of `serve s3://` would hang with the inventory's lock held).
func TestHostileListEndless(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		next func(token string, n int64) string
	}{
		{"same-token", func(token string, n int64) string { return "t" }},
		{"new-token-each-page", func(token string, n int64) string { return "t" + strconv.FormatInt(n, 10) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHostile(t)
			h.list = func(w http.ResponseWriter, r *http.Request, n int64) {
				writeList(w, true, tc.next(r.URL.Query().Get("continuation-token"), n), nil)
			}
			c, err := OpenContent(context.Background(), "s3://b/", h.options())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = c.List(ctx, "", func(storage.Info) error { return nil })
			if err == nil || ctx.Err() != nil {
				t.Fatalf("List of an endless listing: %v after %d pages (want an error naming the loop, before the deadline)", err, h.lists.Load())
			}
			t.Logf("%v (after %d pages)", err, h.lists.Load())
		})
	}
}

// TestHostileRangeIgnored: a server (or a proxy before it) that ignores
// Range and answers 200 with the whole object must not have its first
// bytes served as the range's: Open at an offset fails, or reads the
// right bytes, never the wrong ones. `serve s3://` answers a client's
// Range request, and resumes a cut read, through such an Open.
func TestHostileRangeIgnored(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	data := []byte("0123456789abcdefghij")
	h.object = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("Last-Modified", "Thu, 01 Jan 2026 00:00:00 GMT")
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		if r.Method == http.MethodHead {
			return
		}
		w.Write(data) // Range or not
	}
	c, err := OpenContent(context.Background(), "s3://b/", h.options())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, _, err := c.Open(context.Background(), "k", 10, 5)
	if err != nil {
		t.Logf("Open refused: %v", err)
		return
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err == nil && string(got) != "abcde" {
		t.Fatalf("Open(k, 10, 5) read %q, want %q or an error", got, "abcde")
	}
	t.Logf("read %q, %v", got, err)
}

// TestHostileListControlKey: S3 lists a key holding a control character
// (any writer may make one: "a\x01b") as an XML character reference
// (&#x1;) that XML 1.0 forbids, unless the listing is URL-encoded. One such
// object must not make every listing of the bucket fail (a Source that
// can never rescan, a mirror that can never be audited).
func TestHostileListControlKey(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	h.list = func(w http.ResponseWriter, r *http.Request, n int64) {
		if r.URL.Query().Get("encoding-type") == "url" {
			w.Header().Set("Content-Type", "application/xml")
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix></Prefix><KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>`+
				`<Contents><Key>a+b%25</Key><ETag>"e"</ETag><Size>1</Size></Contents>`+
				`<Contents><Key>ctl%01key</Key><ETag>"e"</ETag><Size>1</Size></Contents>`+
				`<Contents><Key>z</Key><ETag>"e"</ETag><Size>1</Size></Contents></ListBucketResult>`)
			return
		}
		writeList(w, false, "", []string{"a b%", "ctl&#x1;key", "z"})
	}
	c, err := OpenContent(context.Background(), "s3://b/", h.options())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var keys []string
	err = c.List(context.Background(), "", func(in storage.Info) error {
		keys = append(keys, in.Key)
		return nil
	})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if want := []string{"a b%", "ctl\x01key", "z"}; fmt.Sprint(keys) != fmt.Sprint(want) {
		t.Errorf("listed %q, want %q", keys, want)
	}
}

// TestHostileNoContentLength: a GET answered without Content-Length
// (chunked, as some proxies in front of a bucket answer) must not read as
// an empty object: a scan would publish it with length 0 and the digest
// of nothing.
func TestHostileNoContentLength(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	data := []byte("0123456789abcdefghij")
	h.object = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("Last-Modified", "Thu, 01 Jan 2026 00:00:00 GMT")
		if r.Method == http.MethodHead {
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			return
		}
		w.Write(data[:5])
		w.(http.Flusher).Flush() // chunked from here: no Content-Length
		w.Write(data[5:])
	}
	c, err := OpenContent(context.Background(), "s3://b/", h.options())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, in, err := c.Open(context.Background(), "k", 0, -1)
	if err != nil {
		t.Logf("Open refused: %v", err)
		return
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err == nil && (string(got) != string(data) || in.Size != int64(len(data))) {
		t.Fatalf("Open(k, 0, -1) read %q, Info.Size %d; want %q, %d, or an error", got, in.Size, data, len(data))
	}
}

// TestHostileCheckStoredOtherWriter: on a server whose ETags are not MD5s
// (the first write of a run cannot know it), a Commit reads the object
// back to tell; if another writer has put its own object under the key
// meanwhile, that object is not ours to remove. The server here answers
// the PUT with its own ETag "ours-etag", then shows the other writer's
// object (ETag "their-etag").
func TestHostileCheckStoredOtherWriter(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	theirs := []byte("the other writer's bytes")
	var deletes atomic.Int64
	h.object = func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut:
			io.Copy(io.Discard, r.Body)
			w.Header().Set("ETag", `"ours-etag"`)
		case http.MethodHead, http.MethodGet:
			w.Header().Set("ETag", `"their-etag"`)
			w.Header().Set("Last-Modified", "Thu, 01 Jan 2026 00:00:00 GMT")
			w.Header().Set("Content-Length", strconv.Itoa(len(theirs)))
			if r.Method == http.MethodGet {
				w.Write(theirs)
			}
		case http.MethodDelete:
			deletes.Add(1)
			if m := r.Header.Get("If-Match"); m != "" && m != `"their-etag"` {
				w.WriteHeader(http.StatusPreconditionFailed)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}
	}
	tg, err := OpenTarget(context.Background(), "s3://b/", h.options())
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	_, err = write(t, tg, "k", []byte("our bytes"), storage.PutOptions{Size: 9, NoReplace: true})
	t.Logf("Commit: %v", err)
	if deletes.Load() > 0 {
		t.Errorf("the other writer's object was removed (%d DELETE answered)", deletes.Load())
	}
}

// TestHostileHugeSize: the size a Source declares (PutOptions.Size) sets
// the part size of a multipart upload, and a part is buffered whole in
// memory: a hostile Source declaring a petabyte would have each writer
// buffer without bound. An object larger than S3 takes (5 TiB) is
// refused at Create; any other keeps parts S3 takes (5 GiB at most).
func TestHostileHugeSize(t *testing.T) {
	t.Parallel()
	h := newHostile(t)
	tg, err := OpenTarget(context.Background(), "s3://b/", h.options())
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	for _, size := range []int64{1 << 50, 1 << 62, MaxObjectSize + 1} {
		w, err := tg.Create(context.Background(), "k", storage.PutOptions{Size: size})
		if err == nil {
			t.Errorf("Create of %d bytes: part size %d, want an error", size, w.(*writer).partSize)
			w.Abort()
		}
	}
	w, err := tg.Create(context.Background(), "k", storage.PutOptions{Size: MaxObjectSize})
	if err != nil {
		t.Fatal(err)
	}
	if ps := w.(*writer).partSize; ps > 5<<30 || ps*maxParts < MaxObjectSize {
		t.Errorf("part size %d for %d bytes", ps, int64(MaxObjectSize))
	}
	w.Abort()
}

// TestLocationNamesTheBucket: Location names the bucket, the prefix and
// the endpoint, one way whatever the spelling: a mirror's default state
// is named after it, so that one bucket spelled twice keeps one state and
// two buckets of one name on two endpoints keep two.
func TestLocationNamesTheBucket(t *testing.T) {
	t.Parallel()
	h1, h2 := newHostile(t), newHostile(t)
	loc := func(h *hostile, l string) string {
		t.Helper()
		tg, err := OpenTarget(context.Background(), l, h.options())
		if err != nil {
			t.Fatal(err)
		}
		defer tg.Close()
		return tg.Location()
	}
	a := loc(h1, "s3://b/p")
	for _, l := range []string{"S3://b/p/", "s3://b//p//"} {
		if got := loc(h1, l); got != a {
			t.Errorf("Location of %s: %q, of s3://b/p: %q", l, got, a)
		}
	}
	if b := loc(h2, "s3://b/p"); b == a {
		t.Errorf("one Location %q for a bucket on two endpoints", a)
	}
}
