package storagetest

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/storage"
)

// TargetSuite checks the contract of storage.Target on the Targets open
// returns: a fresh, empty one for each call. Every implementation (local,
// mem, s3) runs it.
func TargetSuite(t *testing.T, open func(t *testing.T) storage.Target) {
	for _, tc := range targetCases {
		t.Run(tc.name, func(t *testing.T) {
			tg := open(t)
			t.Cleanup(func() { tg.Close() })
			tc.run(t, context.Background(), tg)
		})
	}
}

// targetCases is the table TargetSuite runs, one fresh Target each.
var targetCases = []struct {
	name string
	run  func(t *testing.T, ctx context.Context, tg storage.Target)
}{
	{"StagedInvisibleUntilCommit", func(t *testing.T, ctx context.Context, tg storage.Target) {
		w := tgCreate(t, ctx, tg, "dir/staged.txt", storage.PutOptions{Size: 5})
		tgWrite(t, w, "hello")
		tgAssertMissing(t, ctx, tg, "dir/staged.txt")
		in, err := w.Commit(ctx)
		if err != nil {
			t.Fatalf("Commit: %v", err)
		}
		if in.Key != "dir/staged.txt" || in.Size != 5 || in.Version == "" {
			t.Errorf("Commit Info = %+v, want key dir/staged.txt, size 5, a version", in)
		}
		tgAssertObject(t, ctx, tg, "dir/staged.txt", "hello")
		st := tgStat(t, ctx, tg, "dir/staged.txt")
		if st.Version != in.Version {
			t.Errorf("Stat version %q, Commit gave %q", st.Version, in.Version)
		}
	}},
	{"StagedOverwriteInvisibleUntilCommit", func(t *testing.T, ctx context.Context, tg storage.Target) {
		tgPut(t, ctx, tg, "k", "old", storage.PutOptions{Size: -1})
		w := tgCreate(t, ctx, tg, "k", storage.PutOptions{Size: -1})
		tgWrite(t, w, "new bytes")
		tgAssertObject(t, ctx, tg, "k", "old")
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		tgAssertObject(t, ctx, tg, "k", "new bytes")
	}},
	{"AbortLeavesNothing", func(t *testing.T, ctx context.Context, tg storage.Target) {
		w := tgCreate(t, ctx, tg, "a/b/c.txt", storage.PutOptions{Size: -1})
		tgWrite(t, w, "partial")
		if err := w.Abort(); err != nil {
			t.Fatalf("Abort: %v", err)
		}
		tgAssertMissing(t, ctx, tg, "a/b/c.txt")
		tgPut(t, ctx, tg, "kept", "old", storage.PutOptions{Size: -1})
		w = tgCreate(t, ctx, tg, "kept", storage.PutOptions{Size: -1})
		tgWrite(t, w, "replacement")
		w.Abort()
		tgAssertObject(t, ctx, tg, "kept", "old")
		tgAssertKeys(t, ctx, tg, "", "kept")
	}},
	{"NoReplace", func(t *testing.T, ctx context.Context, tg storage.Target) {
		tgPut(t, ctx, tg, "x", "first", storage.PutOptions{Size: -1, NoReplace: true})
		w := tgCreate(t, ctx, tg, "x", storage.PutOptions{Size: -1, NoReplace: true})
		tgWrite(t, w, "second")
		if _, err := w.Commit(ctx); !errors.Is(err, storage.ErrExists) {
			t.Fatalf("NoReplace over an object: %v, want ErrExists", err)
		}
		tgAssertObject(t, ctx, tg, "x", "first")
		tgAssertKeys(t, ctx, tg, "", "x")
	}},
	{"IfVersion", func(t *testing.T, ctx context.Context, tg storage.Target) {
		v1 := tgPut(t, ctx, tg, "v", "one", storage.PutOptions{Size: -1})
		v2 := tgPut(t, ctx, tg, "v", "two!", storage.PutOptions{Size: -1, IfVersion: v1.Version})
		if v2.Version == v1.Version {
			t.Fatalf("version unchanged by new bytes: %q", v2.Version)
		}
		w := tgCreate(t, ctx, tg, "v", storage.PutOptions{Size: -1, IfVersion: v1.Version})
		tgWrite(t, w, "three")
		if _, err := w.Commit(ctx); !errors.Is(err, storage.ErrExists) {
			t.Fatalf("IfVersion of a replaced version: %v, want ErrExists", err)
		}
		tgAssertObject(t, ctx, tg, "v", "two!")
		w = tgCreate(t, ctx, tg, "missing", storage.PutOptions{Size: -1, IfVersion: v1.Version})
		tgWrite(t, w, "x")
		if _, err := w.Commit(ctx); !errors.Is(err, storage.ErrExists) {
			t.Fatalf("IfVersion of a missing object: %v, want ErrExists", err)
		}
		tgAssertMissing(t, ctx, tg, "missing")
	}},
	{"ConcurrentWritersOneWhole", func(t *testing.T, ctx context.Context, tg storage.Target) {
		const n = 8
		bodies := make([]string, n)
		for i := range bodies {
			bodies[i] = string(bytes.Repeat([]byte{byte('a' + i)}, 1000*(i+1)))
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				w, err := tg.Create(ctx, "same/key", storage.PutOptions{Size: int64(len(bodies[i]))})
				if err != nil {
					errs[i] = err
					return
				}
				for b := []byte(bodies[i]); len(b) > 0; b = b[min(len(b), 100):] {
					if _, err := w.Write(b[:min(len(b), 100)]); err != nil {
						w.Abort()
						errs[i] = err
						return
					}
				}
				_, errs[i] = w.Commit(ctx)
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		}
		got := tgRead(t, ctx, tg, "same/key")
		if !slices.Contains(bodies, got) {
			t.Errorf("object is none of the bodies written whole (%d bytes)", len(got))
		}
		tgAssertKeys(t, ctx, tg, "", "same/key")
	}},
	{"DigestMismatchNothingVisible", func(t *testing.T, ctx context.Context, tg storage.Target) {
		good := []byte("the right bytes")
		m, s := md5.Sum(good), sha256.Sum256(good)
		wrongM, wrongS := md5.Sum([]byte("other")), sha256.Sum256([]byte("other"))
		tgPut(t, ctx, tg, "old", "old bytes", storage.PutOptions{Size: -1})
		for _, c := range []struct {
			name string
			opt  storage.PutOptions
		}{
			{"md5", storage.PutOptions{Size: -1, MD5: wrongM[:]}},
			{"sha256", storage.PutOptions{Size: -1, SHA256: wrongS[:]}},
			{"md5 right, sha256 wrong", storage.PutOptions{Size: -1, MD5: m[:], SHA256: wrongS[:]}},
			{"size", storage.PutOptions{Size: int64(len(good)) + 1}},
		} {
			for _, key := range []string{"new", "old"} {
				w := tgCreate(t, ctx, tg, key, c.opt)
				tgWrite(t, w, string(good))
				if _, err := w.Commit(ctx); err == nil {
					t.Errorf("%s, %s: Commit of bytes that differ succeeded", c.name, key)
				} else if !errors.Is(err, storage.ErrIntegrity) {
					t.Errorf("%s, %s: Commit: %v, want ErrIntegrity", c.name, key, err)
				}
			}
			tgAssertMissing(t, ctx, tg, "new")
			tgAssertObject(t, ctx, tg, "old", "old bytes")
		}
		tgPut(t, ctx, tg, "new", string(good), storage.PutOptions{Size: int64(len(good)), MD5: m[:], SHA256: s[:]})
		tgAssertObject(t, ctx, tg, "new", string(good))
	}},
	{"Remove", func(t *testing.T, ctx context.Context, tg storage.Target) {
		if err := tg.Remove(ctx, "never/was", ""); err != nil {
			t.Errorf("Remove of a missing object: %v", err)
		}
		if err := tg.Remove(ctx, "never/was", "some-version"); err != nil {
			t.Errorf("Remove of a missing object with a version: %v", err)
		}
		v1 := tgPut(t, ctx, tg, "d/one", "1", storage.PutOptions{Size: -1})
		tgPut(t, ctx, tg, "d/one", "22", storage.PutOptions{Size: -1})
		if err := tg.Remove(ctx, "d/one", v1.Version); !errors.Is(err, storage.ErrExists) {
			t.Errorf("Remove of a replaced version: %v, want ErrExists", err)
		}
		tgAssertObject(t, ctx, tg, "d/one", "22")
		cur := tgStat(t, ctx, tg, "d/one")
		if err := tg.Remove(ctx, "d/one", cur.Version); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		tgAssertMissing(t, ctx, tg, "d/one")
		tgPut(t, ctx, tg, "d/two", "2", storage.PutOptions{Size: -1})
		if err := tg.Remove(ctx, "d/two", ""); err != nil {
			t.Fatal(err)
		}
		tgAssertKeys(t, ctx, tg, "")
		// The key's directory, if the storage had one, is not in the way
		// of an object of that name.
		tgPut(t, ctx, tg, "d", "file where a directory was", storage.PutOptions{Size: -1})
		tgAssertObject(t, ctx, tg, "d", "file where a directory was")
	}},
	{"ListOrderAndAfter", func(t *testing.T, ctx context.Context, tg storage.Target) {
		// No key is also a directory of another ("a" and "a/b"): a file
		// system cannot hold both.
		keys := []string{"b", "a/c/d", "a-b", "a/b", "ä", "a b", "a.", "z/y/x/w", "a0", "a/b0"}
		for _, k := range keys {
			tgPut(t, ctx, tg, k, "<"+k+">", storage.PutOptions{Size: -1})
		}
		want := slices.Clone(keys)
		slices.Sort(want)
		tgAssertKeys(t, ctx, tg, "", want...)
		for _, after := range []string{"a", "a-b", "a/", "a/b", "a/c", "a/c/d", "a0", "b", "z", "ä", "ü"} {
			var exp []string
			for _, k := range want {
				if k > after {
					exp = append(exp, k)
				}
			}
			tgAssertKeys(t, ctx, tg, after, exp...)
		}
		// fn's error ends the listing and is returned.
		stop := errors.New("stop")
		n := 0
		err := tg.List(ctx, "", func(storage.Info) error { n++; return stop })
		if !errors.Is(err, stop) || n != 1 {
			t.Errorf("List with fn failing: %v after %d calls, want stop after 1", err, n)
		}
		var infos []storage.Info
		tg.List(ctx, "", func(in storage.Info) error { infos = append(infos, in); return nil })
		for _, in := range infos {
			if in.Size != int64(len(in.Key)+2) || in.Version == "" {
				t.Errorf("List Info %+v: want size %d and a version", in, len(in.Key)+2)
			}
		}
	}},
	{"Keys", func(t *testing.T, ctx context.Context, tg storage.Target) {
		for _, k := range []string{"with space.txt", "dir with space/f", "café/naïve ☃.txt", "日本語/ファイル", "a/b/c/d/e/f/g/h/i/j/deep.bin", "%41%2F", "q?x=1&y#z"} {
			tgPut(t, ctx, tg, k, "bytes of "+k, storage.PutOptions{Size: -1})
			tgAssertObject(t, ctx, tg, k, "bytes of "+k)
			if in := tgStat(t, ctx, tg, k); in.Key != k {
				t.Errorf("Stat(%q).Key = %q", k, in.Key)
			}
		}
		for _, bad := range []string{"", "/abs", "trailing/", "a//b", "./a", "a/../b", "..", "nul\x00"} {
			if _, err := tg.Create(ctx, bad, storage.PutOptions{Size: -1}); !errors.Is(err, storage.ErrBadKey) {
				t.Errorf("Create(%q): %v, want ErrBadKey", bad, err)
			}
			if _, err := tg.Stat(ctx, bad); !errors.Is(err, storage.ErrBadKey) {
				t.Errorf("Stat(%q): %v, want ErrBadKey", bad, err)
			}
			if err := tg.Remove(ctx, bad, ""); !errors.Is(err, storage.ErrBadKey) {
				t.Errorf("Remove(%q): %v, want ErrBadKey", bad, err)
			}
		}
	}},
	{"ModTimeKept", func(t *testing.T, ctx context.Context, tg storage.Target) {
		mt := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
		in := tgPut(t, ctx, tg, "m/t", "x", storage.PutOptions{Size: 1, ModTime: mt})
		if !in.ModTime.Equal(mt) {
			t.Errorf("Commit ModTime %v, want %v", in.ModTime, mt)
		}
		if st := tgStat(t, ctx, tg, "m/t"); !st.ModTime.Equal(mt) {
			t.Errorf("Stat ModTime %v, want %v", st.ModTime, mt)
		}
		_, oi, err := tg.Open(ctx, "m/t")
		if err == nil && !oi.ModTime.Equal(mt) {
			t.Errorf("Open ModTime %v, want %v", oi.ModTime, mt)
		}
	}},
	{"EmptyObject", func(t *testing.T, ctx context.Context, tg storage.Target) {
		tgPut(t, ctx, tg, "empty", "", storage.PutOptions{Size: 0})
		tgAssertObject(t, ctx, tg, "empty", "")
	}},
}

func tgCreate(t *testing.T, ctx context.Context, tg storage.Target, key string, opt storage.PutOptions) storage.Writer {
	t.Helper()
	w, err := tg.Create(ctx, key, opt)
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	return w
}

func tgWrite(t *testing.T, w storage.Writer, s string) {
	t.Helper()
	if n, err := io.WriteString(w, s); err != nil || n != len(s) {
		t.Fatalf("Write: %d, %v", n, err)
	}
}

// put writes and commits one object and returns its Info.
func tgPut(t *testing.T, ctx context.Context, tg storage.Target, key, data string, opt storage.PutOptions) storage.Info {
	t.Helper()
	w := tgCreate(t, ctx, tg, key, opt)
	tgWrite(t, w, data)
	in, err := w.Commit(ctx)
	if err != nil {
		t.Fatalf("Commit(%q): %v", key, err)
	}
	return in
}

func tgStat(t *testing.T, ctx context.Context, tg storage.Target, key string) storage.Info {
	t.Helper()
	in, err := tg.Stat(ctx, key)
	if err != nil {
		t.Fatalf("Stat(%q): %v", key, err)
	}
	return in
}

func tgRead(t *testing.T, ctx context.Context, tg storage.Target, key string) string {
	t.Helper()
	r, in, err := tg.Open(ctx, key)
	if err != nil {
		t.Fatalf("Open(%q): %v", key, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading %q: %v", key, err)
	}
	if in.Size != int64(len(b)) {
		t.Errorf("Open(%q) Info size %d, read %d bytes", key, in.Size, len(b))
	}
	return string(b)
}

// assertObject checks the object's bytes through Open and its size
// through Stat and List.
func tgAssertObject(t *testing.T, ctx context.Context, tg storage.Target, key, data string) {
	t.Helper()
	if got := tgRead(t, ctx, tg, key); got != data {
		t.Errorf("%q holds %q, want %q", key, tgTrunc(got), tgTrunc(data))
	}
	if in := tgStat(t, ctx, tg, key); in.Size != int64(len(data)) {
		t.Errorf("Stat(%q).Size = %d, want %d", key, in.Size, len(data))
	}
	found := false
	tg.List(ctx, "", func(in storage.Info) error {
		found = found || in.Key == key
		return nil
	})
	if !found {
		t.Errorf("%q not listed", key)
	}
}

// assertMissing checks the key is seen by none of Stat, Open and List.
func tgAssertMissing(t *testing.T, ctx context.Context, tg storage.Target, key string) {
	t.Helper()
	if in, err := tg.Stat(ctx, key); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat(%q) = %+v, %v; want ErrNotExist", key, in, err)
	}
	if r, _, err := tg.Open(ctx, key); !errors.Is(err, storage.ErrNotExist) {
		if r != nil {
			r.Close()
		}
		t.Errorf("Open(%q): %v; want ErrNotExist", key, err)
	}
	tg.List(ctx, "", func(in storage.Info) error {
		if in.Key == key {
			t.Errorf("%q listed", key)
		}
		return nil
	})
}

func tgAssertKeys(t *testing.T, ctx context.Context, tg storage.Target, after string, want ...string) {
	t.Helper()
	var got []string
	if err := tg.List(ctx, after, func(in storage.Info) error { got = append(got, in.Key); return nil }); err != nil {
		t.Fatalf("List(%q): %v", after, err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("List(after %q) = %q, want %q", after, got, want)
	}
}

func tgTrunc(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%s… (%d bytes)", s[:40], len(s))
	}
	return s
}
