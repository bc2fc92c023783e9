package fetch

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/mem"
)

var targetN atomic.Int64

// seenOpts is a storage.Target that keeps the PutOptions of every Create
// before handing it to the real Target underneath.
type seenOpts struct {
	storage.Target
	opts []storage.PutOptions
}

func (s *seenOpts) Create(ctx context.Context, key string, opt storage.PutOptions) (storage.Writer, error) {
	s.opts = append(s.opts, opt)
	return s.Target.Create(ctx, key, opt)
}

func memTarget(t *testing.T) (*seenOpts, *mem.Store) {
	name := fmt.Sprintf("fetch-target-%d", targetN.Add(1))
	t.Cleanup(func() { mem.Forget(name) })
	s := mem.Open(name)
	return &seenOpts{Target: s.Target("")}, s
}

// TestFetchIntoTarget: with Request.Target the verified body is streamed
// into the Target and committed under Key with the length, digests and
// mtime the Source gave; wrong bytes, an object in the way (NoReplace)
// or another version (IfVersion) commit nothing.
func TestFetchIntoTarget(t *testing.T) {
	srv := httptest.NewServer(&files{})
	defer srv.Close()
	ctx := context.Background()
	f := newFetcher(t)
	f.Retries = 1
	mt := time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC)
	b := content(7)
	m, s := md5.Sum(b), sha256.Sum256(b)

	tg, st := memTarget(t)
	res, err := f.Fetch(ctx, Request{URLs: []string{srv.URL + "/r/7"}, Length: int64(len(b)), HasLength: true, Hashes: hashesOf(b),
		Target: tg, Key: "r/7", ModTime: mt, NoReplace: true})
	if err != nil {
		t.Fatal(err)
	}
	o, in, ok := st.Get("r/7")
	if !ok || !bytes.Equal(o.Data, b) || !in.ModTime.Equal(mt) {
		t.Fatalf("object %v: %d bytes, mtime %v", ok, len(o.Data), in.ModTime)
	}
	if res.Info.Version == "" || res.Info.Version != in.Version || res.Length != int64(len(b)) {
		t.Errorf("Result %+v, object version %q", res, in.Version)
	}
	if op := tg.opts[0]; op.Size != int64(len(b)) || !bytes.Equal(op.MD5, m[:]) || !bytes.Equal(op.SHA256, s[:]) || !op.NoReplace {
		t.Errorf("PutOptions %+v: want size, md5 and sha-256 of the Source, NoReplace", op)
	}

	// Wrong bytes: nothing becomes visible.
	wrong := hashesOf([]byte("other"))
	tg, st = memTarget(t)
	_, err = f.Fetch(ctx, Request{URLs: []string{srv.URL + "/r/7"}, Hashes: wrong, Target: tg, Key: "r/7"})
	if !errors.Is(err, ErrHashMismatch) {
		t.Errorf("wrong digest: %v, want ErrHashMismatch", err)
	}
	if st.Len() != 0 {
		t.Errorf("wrong bytes committed: %q", st.Keys())
	}
	_, err = f.Fetch(ctx, Request{URLs: []string{srv.URL + "/r/7"}, Length: int64(len(b)) - 1, HasLength: true, Target: tg, Key: "r/7"})
	if !errors.Is(err, ErrLengthMismatch) || st.Len() != 0 {
		t.Errorf("wrong length: %v, %d objects", err, st.Len())
	}

	// NoReplace over an object, IfVersion of another version: ErrExists,
	// not retried, the object kept.
	old, _ := st.Put("r/7", []byte("someone else's"))
	for _, req := range []Request{
		{URLs: []string{srv.URL + "/r/7"}, Target: tg, Key: "r/7", NoReplace: true},
		{URLs: []string{srv.URL + "/r/7"}, Target: tg, Key: "r/7", IfVersion: "not-" + old.Version},
	} {
		_, err = f.Fetch(ctx, req)
		if !errors.Is(err, ErrExists) || !errors.Is(err, storage.ErrExists) {
			t.Errorf("NoReplace %v IfVersion %q: %v, want ErrExists", req.NoReplace, req.IfVersion, err)
		}
		if o, _, _ := st.Get("r/7"); string(o.Data) != "someone else's" {
			t.Errorf("object replaced: %q", o.Data)
		}
	}
	_, err = f.Fetch(ctx, Request{URLs: []string{srv.URL + "/r/7"}, Hashes: hashesOf(b), Target: tg, Key: "r/7", IfVersion: old.Version})
	if o, _, _ := st.Get("r/7"); err != nil || !bytes.Equal(o.Data, b) {
		t.Errorf("IfVersion of the object there: %v, %d bytes", err, len(o.Data))
	}
}

// badCommit is a Target whose Commit finds the bytes changed on the way
// (a server's Content-MD5 check failing) the first n times.
type badCommit struct {
	storage.Target
	n atomic.Int64
}

type badWriter struct {
	storage.Writer
	bad bool
}

func (b *badCommit) Create(ctx context.Context, key string, opt storage.PutOptions) (storage.Writer, error) {
	w, err := b.Target.Create(ctx, key, opt)
	return &badWriter{w, b.n.Add(-1) >= 0}, err
}

func (w *badWriter) Commit(ctx context.Context) (storage.Info, error) {
	if w.bad {
		w.Writer.Abort()
		return storage.Info{}, fmt.Errorf("test: %w", storage.ErrIntegrity)
	}
	return w.Writer.Commit(ctx)
}

// TestFetchIntoTargetIntegrityRetried: a commit the storage refuses as
// corrupted on the way is a hash mismatch, retried.
func TestFetchIntoTargetIntegrityRetried(t *testing.T) {
	srv := httptest.NewServer(&files{})
	defer srv.Close()
	f := newFetcher(t)
	f.Retries = 2
	tg, st := memTarget(t)
	bc := &badCommit{Target: tg}
	bc.n.Store(1)
	b := content(3)
	res, err := f.Fetch(context.Background(), Request{URLs: []string{srv.URL + "/r/3"}, Hashes: hashesOf(b), Target: bc, Key: "k"})
	if err != nil || res.Attempts != 2 {
		t.Fatalf("%v after %d attempts, want success on the second", err, res.Attempts)
	}
	r, _, err := st.Target("").Open(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	if !bytes.Equal(got, b) {
		t.Error("wrong bytes")
	}
}
