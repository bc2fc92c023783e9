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
