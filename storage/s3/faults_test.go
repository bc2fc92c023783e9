package s3

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourcesync-go/resourcesync/internal/testing/s3test"
	"github.com/resourcesync-go/resourcesync/storage"
)

// retries records what the retry policy was asked to do.
type retries struct {
	mu    sync.Mutex
	ns    []int
	waits []time.Duration
	errs  []string
}

func (r *retries) on(op string, n int, err error, wait time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ns = append(r.ns, n)
	r.waits = append(r.waits, wait)
	r.errs = append(r.errs, err.Error())
	return nil
}

// TestFaults: between the Target or Content and versitygw, a proxy fails
// requests the ways S3 and networks fail. Each case says what must come
// out: the retries internal/retry allows (counted by the proxy and by
// OnRetry, with its backoff), nothing partial or wrong under the key after
// a failed Commit, and an error that says what happened.
func TestFaults(t *testing.T) {
	t.Parallel()
	tb := newTestBucket(t)
	p := tb.srv.FaultProxy(t)
	var rec retries
	o := tb.options(p.Endpoint)
	o.OnRetry = rec.on
	tg, err := OpenTarget(context.Background(), tb.loc(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx := context.Background()
	small, big := pattern(1500, 9), pattern(MinPartSize+100, 10)
	type want struct {
		fail    string // substring of Commit's error; "" for success
		retries int    // OnRetry calls
		puts    int    // PUT requests the proxy saw (-1: not checked)
	}
	for _, tc := range []struct {
		name  string
		data  []byte
		opt   storage.PutOptions
		rules []s3test.Rule
		want  want
	}{
		{"put-slowdown", small, storage.PutOptions{Size: -1}, []s3test.Rule{{Method: "PUT", Fault: s3test.SlowDown, Times: 2}}, want{"", 2, 3}},
		{"put-500", small, storage.PutOptions{Size: -1}, []s3test.Rule{{Method: "PUT", Fault: s3test.Internal, Times: 2}}, want{"", 2, 3}},
		{"put-reset", small, storage.PutOptions{Size: -1}, []s3test.Rule{{Method: "PUT", Fault: s3test.ResetBefore, Times: 2}}, want{"", 2, 3}},
		// The first PUT is done but its answer lost: the retry's 412 finds
		// the object its own.
		{"put-reset-after-noreplace", small, storage.PutOptions{Size: -1, NoReplace: true}, []s3test.Rule{{Method: "PUT", Fault: s3test.ResetAfter, Times: 1}}, want{"", 1, 2}},
		// Bytes damaged on the way: the server's digest check refuses them,
		// the retry sends them again.
		{"put-corrupt", small, storage.PutOptions{Size: -1}, []s3test.Rule{{Method: "PUT", Fault: s3test.CorruptBody, Times: 1}}, want{"", 1, 2}},
		// A garbled ETag in the answer: a HEAD shows the object right.
		{"put-wrong-etag", small, storage.PutOptions{Size: -1}, []s3test.Rule{{Method: "PUT", Fault: s3test.WrongETag, Times: 1}}, want{"", 0, 1}},
		{"put-slowdown-always", small, storage.PutOptions{Size: -1}, []s3test.Rule{{Method: "PUT", Fault: s3test.SlowDown}}, want{"503 SlowDown: Please reduce your request rate. (after 5 attempts)", 4, 5}},
		{"put-500-then-reset", small, storage.PutOptions{Size: -1}, []s3test.Rule{{Method: "PUT", Fault: s3test.Internal, Times: 1}, {Method: "PUT", Fault: s3test.ResetBefore, Times: 1}}, want{"", 2, 3}},
		{"put-reset-always", small, storage.PutOptions{Size: -1}, []s3test.Rule{{Method: "PUT", Fault: s3test.ResetBefore}}, want{"(after 5 attempts)", 4, 5}},
		{"part-corrupt", big, storage.PutOptions{Size: -1}, []s3test.Rule{{Method: "PUT", Query: "partNumber", Fault: s3test.CorruptBody, Times: 1}}, want{"", 1, 3}},
		{"part-wrong-etag", big, storage.PutOptions{Size: -1}, []s3test.Rule{{Method: "PUT", Query: "partNumber", Fault: s3test.WrongETag, Times: 1}}, want{"", 1, 3}},
		{"part-reset", big, storage.PutOptions{Size: -1}, []s3test.Rule{{Method: "PUT", Query: "partNumber", Fault: s3test.ResetBefore, Times: 2}}, want{"", 2, 4}},
		{"complete-500", big, storage.PutOptions{Size: -1}, []s3test.Rule{{Method: "POST", Query: "uploadId", Fault: s3test.Internal, Times: 2}}, want{"", 2, 2}},
		{"complete-reset-after-noreplace", big, storage.PutOptions{Size: -1, NoReplace: true}, []s3test.Rule{{Method: "POST", Query: "uploadId", Fault: s3test.ResetAfter, Times: 1}}, want{"", 1, 2}},
		{"complete-500-always", big, storage.PutOptions{Size: -1}, []s3test.Rule{{Method: "POST", Query: "uploadId", Fault: s3test.Internal}}, want{"500 InternalError", 4, 2}},
		{"part-slowdown-always", big, storage.PutOptions{Size: -1}, []s3test.Rule{{Method: "PUT", Query: "partNumber", Fault: s3test.SlowDown}}, want{"503 SlowDown", 4, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "f/" + tc.name
			rec = retries{}
			p.SetRules(tc.rules...)
			puts := p.Requests("PUT")
			in, err := write(t, tg, key, tc.data, tc.opt)
			p.SetRules()
			switch {
			case tc.want.fail == "" && err != nil:
				t.Fatalf("Commit: %v", err)
			case tc.want.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.want.fail)):
				t.Fatalf("Commit: %v, want an error with %q", err, tc.want.fail)
			}
			if len(rec.ns) != tc.want.retries {
				t.Errorf("%d retries, want %d: %q", len(rec.ns), tc.want.retries, rec.errs)
			}
			for i, n := range rec.ns {
				// internal/retry's backoff: retry n waits at most
				// BaseDelay·2ⁿ⁻¹ (capped), jittered.
				if n < 1 || rec.waits[i] <= 0 || rec.waits[i] > min(fastRetry.BaseDelay<<(n-1), fastRetry.MaxDelay) {
					t.Errorf("retry %d waited %v", n, rec.waits[i])
				}
			}
			if got := p.Requests("PUT") - puts; tc.want.puts >= 0 && got != tc.want.puts {
				t.Errorf("%d PUT requests, want %d", got, tc.want.puts)
			}
			if tc.want.fail != "" {
				t.Logf("Commit: %v", err)
				if tb.exists(t, key) {
					t.Error("an object is under the key after a failed Commit")
				}
			} else {
				got, err := tb.raw.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(tb.name), Key: aws.String(tb.prefix + key)})
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(got.Body)
				got.Body.Close()
				if !bytes.Equal(b, tc.data) || version(aws.ToString(got.ETag)) != in.Version {
					t.Errorf("stored %d bytes (want %d), ETag %s, Commit's %s", len(b), len(tc.data), aws.ToString(got.ETag), in.Version)
				}
			}
			if n := tb.uploads(t); n != 0 {
				t.Errorf("%d multipart uploads left", n)
			}
			if tc.want.fail != "" && (strings.Contains(err.Error(), tb.srv.SecretKey) || strings.Contains(err.Error(), tb.srv.AccessKey)) {
				t.Errorf("the error holds a key: %v", err)
			}
		})
	}
}

// TestFaultsRead: a read cut short (a truncated body, a reset) is resumed
// where it stopped; when the object changed meanwhile the resumed read
// fails with ErrChanged instead of mixing versions; listings and
// deletions are retried.
func TestFaultsRead(t *testing.T) {
	t.Parallel()
	tb := newTestBucket(t)
	p := tb.srv.FaultProxy(t)
	o := tb.options(p.Endpoint)
	c, err := OpenContent(context.Background(), tb.loc(), o)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := OpenTarget(context.Background(), tb.loc(), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := pattern(300_000, 11)
	tb.put(t, "obj", data)

	for _, tc := range []struct {
		name   string
		rules  []s3test.Rule
		offset int64
	}{
		{"truncated", []s3test.Rule{{Method: "GET", NoQuery: "list-type", Fault: s3test.Truncated, Times: 2}}, 0},
		{"truncated-range", []s3test.Rule{{Method: "GET", NoQuery: "list-type", Fault: s3test.Truncated, Times: 2}}, 1000},
		{"reset-then-slowdown", []s3test.Rule{{Method: "GET", Fault: s3test.ResetBefore, Times: 1}, {Method: "GET", Fault: s3test.SlowDown, Times: 1}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.SetRules(tc.rules...)
			defer p.SetRules()
			r, _, err := c.Open(ctx, "obj", tc.offset, -1)
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, r); !bytes.Equal(got, data[tc.offset:]) {
				t.Errorf("read %d bytes, want %d", len(got), len(data)-int(tc.offset))
			}
		})
	}

	t.Run("changed-while-read", func(t *testing.T) {
		p.SetRules(s3test.Rule{Method: "GET", Fault: s3test.Truncated, Times: 1})
		defer p.SetRules()
		r, in, err := c.Open(ctx, "obj", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		tb.put(t, "obj", pattern(300_000, 12))
		got, err := io.ReadAll(r)
		r.Close()
		if !errors.Is(err, ErrChanged) || len(got) >= len(data) {
			t.Fatalf("read %d bytes of a changed object, err %v", len(got), err)
		}
		if !strings.Contains(err.Error(), "changed while it was read") || in.Version != version(in.Version) {
			t.Errorf("error: %v", err)
		}
	})

	t.Run("wrong-etag-on-resume", func(t *testing.T) {
		tb.put(t, "obj2", data)
		p.SetRules(s3test.Rule{Method: "GET", NoQuery: "list-type", Fault: s3test.Truncated, Times: 1},
			s3test.Rule{Method: "GET", NoQuery: "list-type", Fault: s3test.WrongETag, Times: 1})
		defer p.SetRules()
		r, _, err := c.Open(ctx, "obj2", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if !errors.Is(err, ErrChanged) || len(got) >= len(data) || !bytes.Equal(got, data[:len(got)]) {
			t.Fatalf("read %d bytes, err %v", len(got), err)
		}
		t.Log(err)
	})

	t.Run("list-and-delete", func(t *testing.T) {
		p.SetRules(s3test.Rule{Method: "GET", Query: "list-type", Fault: s3test.SlowDown, Times: 2},
			s3test.Rule{Method: "DELETE", Fault: s3test.Internal, Times: 2})
		defer p.SetRules()
		tg.Remove(ctx, "obj2", "")
		if got := keysOf(listKeys(t, c, "")); len(got) != 1 || got[0] != "obj" {
			t.Errorf("listed %q", got)
		}
		if err := tg.Remove(ctx, "obj", ""); err != nil {
			t.Fatal(err)
		}
		if tb.exists(t, "obj") {
			t.Error("not removed")
		}
		if p.Injected(s3test.SlowDown) < 2 || p.Injected(s3test.Internal) < 2 {
			t.Errorf("faults not injected: %d %d", p.Injected(s3test.SlowDown), p.Injected(s3test.Internal))
		}
	})
}
