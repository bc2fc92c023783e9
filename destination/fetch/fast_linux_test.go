package fetch

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The fast path (openat2) is what runs on Linux; the portable path runs
// where openat2 is refused, and must behave the same: the same tests, with
// the fast path switched off.
func TestPortablePathOnLinux(t *testing.T) {
	noOpenat2.Store(true)
	defer noOpenat2.Store(false)
	t.Run("RefusesSymlinks", TestInstallRefusesSymlinks)
	t.Run("SymlinkSwappedDuringDownload", TestInstallSymlinkSwappedDuringDownload)
	t.Run("HonoursUmask", TestInstallHonoursUmask)
	t.Run("DigestSpellings", TestInstallDigestSpellings)
	t.Run("DirLstatOpen", TestDirLstatOpen)
	t.Run("InstallReplaces", TestInstallReplaces)
	t.Run("InstallNoReplace", TestInstallNoReplace)
}

// The fast path is taken where openat2 works (else the portable tests
// above are all that run, and installs cost five times the system calls).
func TestFastPathTaken(t *testing.T) {
	dest := t.TempDir()
	d, err := OpenDir(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.fd < 0 {
		t.Fatal("no descriptor for the fast path")
	}
	tmp, err := d.createFast("f", nil)
	if err != nil {
		t.Skipf("this kernel has no openat2 (Linux < 5.6, or a seccomp filter refuses it), so the fast path is never taken here and the portable path is what runs: %v", err)
	}
	tmp.release()
	noTemp(t, dest)
}

// Lstat and Open see what os.Lstat sees, refuse links by name, and say
// "not there" for a path below a missing directory or a file.
func TestDirLstatOpen(t *testing.T) {
	base := t.TempDir()
	dest := filepath.Join(base, "dest")
	os.MkdirAll(filepath.Join(dest, "d", "e"), 0o755)
	os.WriteFile(filepath.Join(base, "outside"), []byte("secret"), 0o600)
	os.Symlink(filepath.Join(base, "outside"), filepath.Join(dest, "d", "link"))
	os.Symlink(base, filepath.Join(dest, "dirlink"))
	d, err := OpenDir(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	mt := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	body := []byte("bytes of f")
	p := filepath.Join(dest, "d", "e", "f")
	if _, err := Install(bytes.NewReader(body), Request{Path: p, Dir: d, ModTime: mt}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{p, filepath.Join(dest, "d", "e"), filepath.Join(dest, "d")} {
		fi, err := d.Lstat(q)
		if err != nil {
			t.Fatalf("Lstat %s: %v", q, err)
		}
		want, _ := os.Lstat(q)
		if fi.Name() != want.Name() || fi.Mode() != want.Mode() || fi.Size() != want.Size() || !fi.ModTime().Equal(want.ModTime()) || fi.IsDir() != want.IsDir() {
			t.Errorf("Lstat %s: %s %v %d %v, os.Lstat: %s %v %d %v", q, fi.Name(), fi.Mode(), fi.Size(), fi.ModTime(), want.Name(), want.Mode(), want.Size(), want.ModTime())
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Ino != want.Sys().(*syscall.Stat_t).Ino {
			t.Errorf("Lstat %s: Sys %T", q, fi.Sys())
		}
	}
	if fi, _ := d.Lstat(p); fi == nil || fi.ModTime().UnixNano() != mt.UnixNano() {
		t.Errorf("mtime not set to the nanosecond: %v", fi)
	}
	f, err := d.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(f)
	f.Close()
	if !bytes.Equal(buf.Bytes(), body) {
		t.Errorf("Open read %q", buf.Bytes())
	}
	for _, q := range []string{"missing", "d/missing", "x/y/z", "d/e/f/below-a-file"} {
		abs := filepath.Join(dest, filepath.FromSlash(q))
		if _, err := d.Lstat(abs); !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("Lstat %s: %v, want not found", q, err)
		}
		if _, err := d.Open(abs); !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("Open %s: %v, want not found", q, err)
		}
	}
	for _, q := range []string{"d/link", "dirlink", "dirlink/outside", "dirlink/dest/d/e/f"} {
		abs := filepath.Join(dest, filepath.FromSlash(q))
		var se *SymlinkError
		if _, err := d.Lstat(abs); !errors.As(err, &se) {
			t.Errorf("Lstat %s: %v, want a SymlinkError", q, err)
		}
		if _, err := d.Open(abs); !errors.As(err, &se) {
			t.Errorf("Open %s: %v, want a SymlinkError", q, err)
		}
	}
}

// An install replaces a regular file at its name (a new inode: whoever
// has the old one open keeps its bytes) and never a directory.
func TestInstallReplaces(t *testing.T) {
	dest := t.TempDir()
	d, err := OpenDir(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p := filepath.Join(dest, "f")
	os.WriteFile(p, []byte("old"), 0o644)
	old, _ := os.Open(p)
	defer old.Close()
	if _, err := Install(bytes.NewReader([]byte("new")), Request{Path: p, Dir: d}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("after install: %q", b)
	}
	var buf bytes.Buffer
	buf.ReadFrom(old)
	if buf.String() != "old" {
		t.Errorf("the replaced file's open descriptor reads %q", buf.String())
	}
	os.MkdirAll(filepath.Join(dest, "dir", "sub"), 0o755)
	if _, err := Install(bytes.NewReader([]byte("x")), Request{Path: filepath.Join(dest, "dir"), Dir: d}); err == nil {
		t.Error("a directory was replaced")
	}
	if fi, err := os.Stat(filepath.Join(dest, "dir", "sub")); err != nil || !fi.IsDir() {
		t.Errorf("directory damaged: %v", err)
	}
	noTemp(t, dest)
}

// BenchmarkInstallPortable is BenchmarkInstall's 1 KiB case through a Dir
// on the portable path (os.Root, a check per component), for comparison
// with the fast path that Linux takes.
func BenchmarkInstallPortable(b *testing.B) {
	noOpenat2.Store(true)
	defer noOpenat2.Store(false)
	benchInstall(b, 1<<10, true)
}

// NoReplace installs where nothing is, and leaves whatever is at the name
// (a file, a directory, a link) as it is, with no temporary file left.
func TestInstallNoReplace(t *testing.T) {
	dest := t.TempDir()
	d, err := OpenDir(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	os.WriteFile(filepath.Join(dest, "file"), []byte("theirs"), 0o644)
	os.MkdirAll(filepath.Join(dest, "dir"), 0o755)
	os.Symlink("file", filepath.Join(dest, "link"))
	for _, name := range []string{"file", "dir", "link"} {
		_, err := Install(bytes.NewReader([]byte("ours")), Request{Path: filepath.Join(dest, name), Dir: d, NoReplace: true})
		// A link at the name: refused either way (the portable path
		// checks for links first).
		if !errors.Is(err, ErrExists) && !(name == "link" && errors.Is(err, ErrSymlinkInDest)) {
			t.Errorf("%s: %v, want ErrExists", name, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "file")); string(b) != "theirs" {
		t.Errorf("file replaced: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dest, "link")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("link replaced: %v", err)
	}
	if _, err := Install(bytes.NewReader([]byte("ours")), Request{Path: filepath.Join(dest, "new", "f"), Dir: d, NoReplace: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "new", "f")); string(b) != "ours" {
		t.Errorf("new file: %q", b)
	}
	noTemp(t, dest)
}

// peekReader calls peek before handing out its bytes: what another
// process sees in DEST while the body streams.
type peekReader struct {
	r    *bytes.Reader
	peek func()
	done bool
}

func (p *peekReader) Read(b []byte) (int, error) {
	if !p.done {
		p.done = true
		p.peek()
	}
	return p.r.Read(b)
}

// On a file system with O_TMPFILE (ext4, xfs, btrfs, tmpfs) a file being
// written has no name at all: nothing a kill -9 could leave behind, and
// a new file costs no rename. Installs, new and over an existing file,
// with and without NoReplace, show no temporary name while the body
// streams, end with the bytes and mtime asked, and leave nothing behind.
func TestInstallUnnamedWhileWriting(t *testing.T) {
	dest := t.TempDir()
	d, err := OpenDir(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	probe, err := d.createFast("probe", nil)
	if err != nil {
		t.Skipf("no fast path here: %v", err)
	}
	unnamed := probe.unnamed
	probe.release()
	if !unnamed {
		t.Skip("this file system has no O_TMPFILE: named temporary files are the way here")
	}
	os.MkdirAll(filepath.Join(dest, "d"), 0o755)
	os.WriteFile(filepath.Join(dest, "d", "old"), []byte("old bytes"), 0o644)
	mt := time.Date(2021, 3, 4, 5, 6, 7, 8, time.UTC)
	for _, tc := range []struct {
		name      string
		rel       string
		noReplace bool
		want      string
		wantErr   error
	}{
		{"new", "d/new", false, "new bytes", nil},
		{"new, NoReplace", "d/new2", true, "new bytes", nil},
		{"over a file", "d/old", false, "new bytes", nil},
		{"over a file, NoReplace", "d/old", true, "new bytes", ErrExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []string
			body := &peekReader{r: bytes.NewReader([]byte("new bytes")), peek: func() {
				es, _ := os.ReadDir(filepath.Join(dest, "d"))
				for _, e := range es {
					seen = append(seen, e.Name())
				}
			}}
			p := filepath.Join(dest, filepath.FromSlash(tc.rel))
			_, err := Install(body, Request{Path: p, Dir: d, ModTime: mt, NoReplace: tc.noReplace, Length: 9, HasLength: true})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Install: %v, want %v", err, tc.wantErr)
			}
			for _, n := range seen {
				if n != "old" && n != "new" && n != "new2" {
					t.Errorf("while the body streamed, the directory held %q", n)
				}
			}
			if tc.wantErr != nil {
				return
			}
			got, err := os.ReadFile(p)
			if err != nil || string(got) != tc.want {
				t.Fatalf("%s holds %q, %v", tc.rel, got, err)
			}
			if fi, _ := os.Stat(p); !fi.ModTime().Equal(mt) {
				t.Errorf("mtime %v, want %v", fi.ModTime(), mt)
			}
		})
	}
	if got, _ := os.ReadFile(filepath.Join(dest, "d", "old")); string(got) != "new bytes" {
		t.Errorf("d/old holds %q after the NoReplace install was refused", got)
	}
	noTemp(t, dest)
}

// An unnamed file keeps no directory from being removed while it is
// written (a deletion's RemoveEmptyParents in the same pass): the install
// makes the directory again and links the file there.
func TestInstallDirectoryRemovedWhileWriting(t *testing.T) {
	dest := t.TempDir()
	d, err := OpenDir(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	os.MkdirAll(filepath.Join(dest, "a", "b"), 0o755)
	for _, withParents := range []bool{false, true} {
		var c *Parents
		if withParents {
			c = new(Parents)
			defer c.Close()
		}
		os.MkdirAll(filepath.Join(dest, "a", "b"), 0o755)
		body := &peekReader{r: bytes.NewReader([]byte("bytes")), peek: func() {
			os.Remove(filepath.Join(dest, "a", "b")) // fails while a temporary name is in it
			os.Remove(filepath.Join(dest, "a"))
		}}
		p := filepath.Join(dest, "a", "b", "f")
		if _, err := Install(body, Request{Path: p, Dir: d, Parents: c}); err != nil {
			t.Fatalf("Parents %v: %v", withParents, err)
		}
		if got, err := os.ReadFile(p); err != nil || string(got) != "bytes" {
			t.Fatalf("Parents %v: %q, %v", withParents, got, err)
		}
		os.Remove(p)
	}
	noTemp(t, dest)
}
