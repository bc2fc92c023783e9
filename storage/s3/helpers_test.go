package s3

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/internal/testing/s3test"
	"github.com/resourcesync-go/resourcesync/storage"
)

// fastRetry keeps the tests' retries quick: the count is the default's,
// the waits are short.
var fastRetry = retry.Policy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

// testBucket is a fresh bucket of the shared versitygw.
type testBucket struct {
	srv    *s3test.Server
	name   string
	prefix string // "" or ending in "/"
	raw    *s3.Client
}

func newTestBucket(t testing.TB) *testBucket {
	t.Helper()
	srv := s3test.Shared(t)
	return &testBucket{srv: srv, name: srv.NewBucket(t), prefix: "pre/", raw: rawClient(srv, srv.Endpoint)}
}

// rawClient is a plain SDK client (its own retryer, no wrapper of this
// package): the fillers' and the benchmarks' baseline.
func rawClient(srv *s3test.Server, endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region:       srv.Region,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
		HTTPClient:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
	})
}

func (tb *testBucket) loc() string { return "s3://" + tb.name + "/" + tb.prefix }

// options reaches the bucket at endpoint ("" the server's) with the
// server's keys.
func (tb *testBucket) options(endpoint string) Options {
	if endpoint == "" {
		endpoint = tb.srv.Endpoint
	}
	return Options{
		Endpoint:    endpoint,
		Region:      tb.srv.Region,
		Credentials: credentials.NewStaticCredentialsProvider(tb.srv.AccessKey, tb.srv.SecretKey, ""),
		Retry:       fastRetry,
		PartSize:    MinPartSize,
	}
}

func (tb *testBucket) target(t testing.TB, endpoint string) *Target {
	t.Helper()
	tg, err := OpenTarget(context.Background(), tb.loc(), tb.options(endpoint))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	return tg
}

func (tb *testBucket) content(t testing.TB, endpoint string) *Content {
	t.Helper()
	c, err := OpenContent(context.Background(), tb.loc(), tb.options(endpoint))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Put writes an object behind the Content's back, with the plain client
// (key relative to the prefix).
func (tb *testBucket) Put(t *testing.T, key string, data []byte) { tb.put(t, key, data) }

func (tb *testBucket) put(t testing.TB, key string, data []byte) {
	t.Helper()
	_, err := tb.raw.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(tb.name), Key: aws.String(tb.prefix + key), Body: bytes.NewReader(data),
	})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// Delete removes an object behind the Content's back.
func (tb *testBucket) Delete(t *testing.T, key string) {
	t.Helper()
	_, err := tb.raw.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(tb.name), Key: aws.String(tb.prefix + key)})
	if err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
}

// newTestContent returns an empty Content on a fresh bucket of versitygw
// and the filler that changes it behind its back, for the contract suite:
//
//	func TestContentSuite(t *testing.T) {
//		storagetest.ContentSuite(t, func(t *testing.T) (storage.Content, storagetest.Filler) { return newTestContent(t) })
//	}
//	func TestTargetSuite(t *testing.T) { storagetest.TargetSuite(t, newTestTarget) }
//
// (both suites, as on the content and target branches, pass here).
func newTestContent(t *testing.T) (storage.Content, *testBucket) {
	tb := newTestBucket(t)
	return tb.content(t, ""), tb
}

// newTestTarget returns an empty Target on a fresh bucket of versitygw
// (for storagetest.TargetSuite).
func newTestTarget(t *testing.T) storage.Target {
	return newTestBucket(t).target(t, "")
}

// exists reports whether the key holds an object, by the plain client.
func (tb *testBucket) exists(t testing.TB, key string) bool {
	t.Helper()
	_, err := tb.raw.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(tb.name), Key: aws.String(tb.prefix + key)})
	if err == nil {
		return true
	}
	if _, cerr := classify(err); errors.Is(cerr, storage.ErrNotExist) {
		return false
	}
	t.Fatalf("head %s: %v", key, err)
	return false
}

// uploads returns the multipart uploads in progress in the bucket.
func (tb *testBucket) uploads(t testing.TB) int {
	t.Helper()
	out, err := tb.raw.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(tb.name)})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Uploads)
}

// write stores data under key through tg.
func write(t testing.TB, tg storage.Target, key string, data []byte, opt storage.PutOptions) (storage.Info, error) {
	t.Helper()
	ctx := context.Background()
	w, err := tg.Create(ctx, key, opt)
	if err != nil {
		t.Fatal(err)
	}
	// In pieces of odd sizes: parts must not depend on how Write is called.
	for b := data; len(b) > 0; {
		n := min(len(b), 1<<20+7)
		if _, err := w.Write(b[:n]); err != nil {
			return storage.Info{}, err
		}
		b = b[n:]
	}
	return w.Commit(ctx)
}

func readAll(t testing.TB, r io.ReadCloser) []byte {
	t.Helper()
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pattern returns n bytes that differ from position to position.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

func s3testSkipAWS(t testing.TB) {
	t.Helper()
	s3test.SkipAWS(t)
}
