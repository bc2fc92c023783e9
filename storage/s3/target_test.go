package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/s3test"
	"github.com/resourcesync-go/resourcesync/storage"
)

// TestTargetPut: objects of every size class (empty, small, exactly one
// part, one byte more, several parts) are committed whole, with their
// ModTime, ContentType and digests, and read back by Open, Stat and List
// as written.
func TestTargetPut(t *testing.T) {
	t.Parallel()
	tb := newTestBucket(t)
	tg := tb.target(t, "")
	ctx := context.Background()
	mt := time.Date(2021, 6, 7, 8, 9, 10, 123456789, time.UTC)
	for i, tc := range []struct {
		name    string
		size    int
		opt     storage.PutOptions
		digests bool
	}{
		{"empty", 0, storage.PutOptions{Size: 0}, true},
		{"small", 1000, storage.PutOptions{Size: 1000, ContentType: "text/html; charset=utf-8", ModTime: mt}, true},
		{"small-unknown-size", 3000, storage.PutOptions{Size: -1}, false},
		{"one-part", MinPartSize, storage.PutOptions{Size: -1, ModTime: mt}, true},
		{"part-and-a-byte", MinPartSize + 1, storage.PutOptions{Size: -1, ContentType: "application/pdf"}, true},
		{"three-parts", 2*MinPartSize + 12345, storage.PutOptions{Size: 2*MinPartSize + 12345, ModTime: mt}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := pattern(tc.size, byte(i))
			opt := tc.opt
			if tc.digests {
				m, s := md5.Sum(data), sha256.Sum256(data)
				opt.MD5, opt.SHA256 = m[:], s[:]
			}
			key := "dir/" + tc.name + ".bin"
			before := time.Now().Add(-time.Second)
			got, err := write(t, tg, key, data, opt)
			if err != nil {
				t.Fatal(err)
			}
			if got.Key != key || got.Size != int64(tc.size) || got.Version == "" || got.ContentType != opt.ContentType {
				t.Errorf("Commit: %+v", got)
			}
			if !opt.ModTime.IsZero() && !got.ModTime.Equal(mt) || opt.ModTime.IsZero() && got.ModTime.Before(before) {
				t.Errorf("Commit ModTime %v", got.ModTime)
			}
			st, err := tg.Stat(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if st.Version != got.Version || st.Size != got.Size || !st.ModTime.Equal(got.ModTime) || st.ContentType != opt.ContentType && opt.ContentType != "" {
				t.Errorf("Stat %+v\nCommit %+v", st, got)
			}
			r, in, err := tg.Open(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if b := readAll(t, r); !bytes.Equal(b, data) || in.Version != got.Version {
				t.Errorf("Open: %d bytes (want %d), version %s", len(b), len(data), in.Version)
			}
			found := false
			tg.List(ctx, "", func(in storage.Info) error {
				if in.Key == key {
					found = in.Version == got.Version && in.Size == got.Size
				}
				return nil
			})
			if !found {
				t.Error("not listed with its version")
			}
		})
	}
	if n := tb.uploads(t); n != 0 {
		t.Errorf("%d multipart uploads left", n)
	}
}

// TestTargetRefuses: a digest that the bytes do not match, or a bad key,
// writes nothing; a write after Commit fails.
func TestTargetRefuses(t *testing.T) {
	t.Parallel()
	tb := newTestBucket(t)
	tg := tb.target(t, "")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		size int
		opt  func(data []byte) storage.PutOptions
	}{
		{"md5", 100, func(d []byte) storage.PutOptions {
			m := md5.Sum(append(d, 'x'))
			return storage.PutOptions{Size: -1, MD5: m[:]}
		}},
		{"sha256", 100, func(d []byte) storage.PutOptions {
			s := sha256.Sum256(d[1:])
			return storage.PutOptions{Size: -1, SHA256: s[:]}
		}},
		{"sha256-multipart", MinPartSize + 10, func(d []byte) storage.PutOptions {
			s := sha256.Sum256(d[1:])
			return storage.PutOptions{Size: -1, SHA256: s[:]}
		}},
		{"size", 100, func(d []byte) storage.PutOptions { return storage.PutOptions{Size: 101} }},
		{"size-multipart", MinPartSize + 10, func(d []byte) storage.PutOptions { return storage.PutOptions{Size: MinPartSize + 9} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := pattern(tc.size, 3)
			_, err := write(t, tg, tc.name, data, tc.opt(data))
			if !errors.Is(err, storage.ErrIntegrity) || !strings.Contains(err.Error(), "nothing written") {
				t.Fatalf("Commit: %v", err)
			}
			if tb.exists(t, tc.name) {
				t.Error("an object was written")
			}
		})
	}
	if n := tb.uploads(t); n != 0 {
		t.Errorf("%d multipart uploads left", n)
	}
	if _, err := tg.Create(ctx, "a//b", storage.PutOptions{}); !errors.Is(err, storage.ErrBadKey) {
		t.Errorf("Create bad key: %v", err)
	}
	w, _ := tg.Create(ctx, "once", storage.PutOptions{Size: -1})
	w.Write([]byte("x"))
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("y")); err == nil {
		t.Error("Write after Commit")
	}
	if _, err := w.Commit(ctx); err == nil {
		t.Error("Commit twice")
	}
}

// TestTargetAbort: Abort, before or during a multipart upload, leaves
// the key as it was and no upload behind.
func TestTargetAbort(t *testing.T) {
	t.Parallel()
	tb := newTestBucket(t)
	tg := tb.target(t, "")
	ctx := context.Background()
	if _, err := write(t, tg, "kept", []byte("old"), storage.PutOptions{Size: -1}); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{10, 2*MinPartSize + 1} {
		for _, key := range []string{"new", "kept"} {
			w, err := tg.Create(ctx, key, storage.PutOptions{Size: -1})
			if err != nil {
				t.Fatal(err)
			}
			w.Write(pattern(size, 4))
			if err := w.Abort(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if tb.exists(t, "new") {
		t.Error("an aborted object is visible")
	}
	r, _, err := tg.Open(ctx, "kept")
	if err != nil || string(readAll(t, r)) != "old" {
		t.Errorf("kept: %v", err)
	}
	if n := tb.uploads(t); n != 0 {
		t.Errorf("%d multipart uploads left", n)
	}
}

// TestTargetConditional: NoReplace (If-None-Match: *) and IfVersion
// (If-Match) on PUT and on CompleteMultipartUpload, and Remove's
// ifVersion, as versitygw checks them.
func TestTargetConditional(t *testing.T) {
	t.Parallel()
	tb := newTestBucket(t)
	tg := tb.target(t, "")
	ctx := context.Background()
	for _, size := range []int{5, MinPartSize + 5} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			key := fmt.Sprintf("k%d", size)
			v1, err := write(t, tg, key, pattern(size, 1), storage.PutOptions{Size: -1, NoReplace: true})
			if err != nil {
				t.Fatalf("NoReplace on a free key: %v", err)
			}
			if _, err := write(t, tg, key, pattern(size, 2), storage.PutOptions{Size: -1, NoReplace: true}); !errors.Is(err, storage.ErrExists) {
				t.Fatalf("NoReplace on a taken key: %v", err)
			}
			v2, err := write(t, tg, key, pattern(size, 3), storage.PutOptions{Size: -1, IfVersion: v1.Version})
			if err != nil {
				t.Fatalf("IfVersion current: %v", err)
			}
			if _, err := write(t, tg, key, pattern(size, 4), storage.PutOptions{Size: -1, IfVersion: v1.Version}); !errors.Is(err, storage.ErrExists) {
				t.Fatalf("IfVersion stale: %v", err)
			}
			if _, err := write(t, tg, key+"-none", pattern(size, 4), storage.PutOptions{Size: -1, IfVersion: v1.Version}); !errors.Is(err, storage.ErrExists) {
				t.Fatalf("IfVersion of a missing object: %v", err)
			}
			r, in, err := tg.Open(ctx, key)
			if err != nil || in.Version != v2.Version || !bytes.Equal(readAll(t, r), pattern(size, 3)) {
				t.Fatalf("after the refused writes: %+v %v", in, err)
			}
			if err := tg.Remove(ctx, key, v1.Version); !errors.Is(err, storage.ErrExists) {
				t.Fatalf("Remove stale version: %v", err)
			}
			if err := tg.Remove(ctx, key, v2.Version); err != nil {
				t.Fatalf("Remove current version: %v", err)
			}
			if tb.exists(t, key) {
				t.Fatal("removed object still there")
			}
			if err := tg.Remove(ctx, key, ""); err != nil {
				t.Fatalf("Remove missing: %v", err)
			}
		})
	}
	if n := tb.uploads(t); n != 0 {
		t.Errorf("%d multipart uploads left", n)
	}
}

// TestCleanupUploads: a writer that dies in the middle of a multipart
// upload (here: never committed nor aborted, as after kill -9) leaves an
// upload that no listing shows; CleanupUploads aborts it once it is old
// enough, and leaves younger ones.
func TestCleanupUploads(t *testing.T) {
	t.Parallel()
	tb := newTestBucket(t)
	tg := tb.target(t, "")
	ctx := context.Background()
	w, err := tg.Create(ctx, "big", storage.PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(pattern(MinPartSize+1, 5)); err != nil {
		t.Fatal(err)
	}
	// The writer is dropped.
	if n := tb.uploads(t); n != 1 {
		t.Fatalf("%d uploads in progress, want 1", n)
	}
	if got := listKeys(t, tg, ""); len(got) != 0 || tb.exists(t, "big") {
		t.Fatalf("an incomplete upload is visible: %v", keysOf(got))
	}
	if n, err := tg.CleanupUploads(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("CleanupUploads of older ones: %d %v", n, err)
	}
	if n, err := tg.CleanupUploads(ctx, time.Now().Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("CleanupUploads: %d %v", n, err)
	}
	if n := tb.uploads(t); n != 0 {
		t.Fatalf("%d uploads left", n)
	}
}

// TestIndependentClient: what the Target committed is read back by aws s3
// cp byte for byte (whole and multipart), and what aws s3 cp and rm put,
// overwrote and removed is what the Content lists and reads.
func TestIndependentClient(t *testing.T) {
	t.Parallel()
	s3testSkipAWS(t)
	tb := newTestBucket(t)
	tg := tb.target(t, "")
	c := tb.content(t, "")
	ctx := context.Background()
	small, big := pattern(777, 7), pattern(MinPartSize*2+3, 8)
	want := map[string][]byte{"small.txt": small, "big.bin": big}
	for key, data := range want {
		if _, err := write(t, tg, "s/"+key, data, storage.PutOptions{Size: -1}); err != nil {
			t.Fatal(err)
		}
	}
	// One aws call for both (the client starts slowly).
	out := t.TempDir()
	tb.srv.AWS(t, nil, "s3", "cp", "--only-show-errors", "--recursive", "s3://"+tb.name+"/"+tb.prefix+"s/", out)
	for key, data := range want {
		if got, err := os.ReadFile(filepath.Join(out, key)); err != nil || !bytes.Equal(got, data) {
			t.Errorf("aws s3 cp read %d bytes of %s (%v), want %d", len(got), key, err, len(data))
		}
	}
	// The other way: an addition and an overwrite, then a deletion.
	in := t.TempDir()
	os.MkdirAll(filepath.Join(in, "a"), 0o755)
	os.MkdirAll(filepath.Join(in, "s"), 0o755)
	os.WriteFile(filepath.Join(in, "a", "added.txt"), []byte("added by aws"), 0o644)
	os.WriteFile(filepath.Join(in, "s", "small.txt"), []byte("overwritten by aws"), 0o644)
	tb.srv.AWS(t, nil, "s3", "cp", "--only-show-errors", "--recursive", in, "s3://"+tb.name+"/"+tb.prefix)
	tb.srv.Remove(t, tb.name, tb.prefix+"s/big.bin")
	got := listKeys(t, c, "")
	if !slices.Equal(keysOf(got), []string{"a/added.txt", "s/small.txt"}) {
		t.Fatalf("listed %q", keysOf(got))
	}
	for _, tc := range []struct{ key, want string }{{"a/added.txt", "added by aws"}, {"s/small.txt", "overwritten by aws"}} {
		r, in, err := c.Open(ctx, tc.key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		if b := readAll(t, r); string(b) != tc.want || in.Size != int64(len(tc.want)) || in.ModTime.IsZero() {
			t.Errorf("%s: %q %+v", tc.key, b, in)
		}
	}
}

// TestOtherETags: a server whose ETags are not MD5s (versitygw's
// --data-integrity-etag: "CRC64NVME-…") takes whole and multipart
// objects: the first commit reads its object back to settle the doubt,
// and every Version is the server's ETag, as Stat and List say it.
func TestOtherETags(t *testing.T) {
	t.Parallel()
	srv := s3test.StartPosix(t, "--data-integrity-etag")
	tb := &testBucket{srv: srv, name: srv.NewBucket(t), prefix: "pre/", raw: rawClient(srv, srv.Endpoint)}
	tg := tb.target(t, "")
	ctx := context.Background()
	for i, size := range []int{100, MinPartSize + 100, 50} {
		key := fmt.Sprintf("k%d", i)
		in, err := write(t, tg, key, pattern(size, byte(i)), storage.PutOptions{Size: int64(size), NoReplace: true})
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		st, err := tg.Stat(ctx, key)
		if err != nil || st.Version != in.Version || md5Shaped(in.Version) {
			t.Errorf("size %d: Commit's version %q, Stat's %q (%v)", size, in.Version, st.Version, err)
		}
		if _, err := write(t, tg, key, pattern(size, 9), storage.PutOptions{Size: int64(size), IfVersion: in.Version}); err != nil {
			t.Errorf("size %d: IfVersion of the server's ETag: %v", size, err)
		}
	}
	if !tg.b.etagNotMD5.Load() {
		t.Error("the bucket still compares ETags with MD5s")
	}
	// A conditional write whose answer is lost finds its own object by
	// its bytes.
	p := srv.FaultProxy(t, s3test.Rule{Method: "PUT", Fault: s3test.ResetAfter, Times: 1})
	ptg := tb.target(t, p.Endpoint)
	ptg.b.etagNotMD5.Store(true)
	if _, err := write(t, ptg, "lost", pattern(10, 1), storage.PutOptions{Size: 10, NoReplace: true}); err != nil || p.Injected(s3test.ResetAfter) != 1 {
		t.Errorf("NoReplace with its answer lost: %v", err)
	}
}
