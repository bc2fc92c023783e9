package fetch

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/rs"
)

// snapshot returns every path under dir with its mode and content, to
// assert that a directory outside DEST was not touched.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		m[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameSnapshot(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := snapshot(t, dir)
	if len(after) != len(before) {
		t.Errorf("outside directory changed: %d entries, was %d: %v", len(after), len(before), after)
	}
	for p, v := range before {
		if after[p] != v {
			t.Errorf("outside %s changed: %q, was %q", p, after[p], v)
		}
	}
}

func TestInstallRefusesSymlinks(t *testing.T) {
	body := []byte("new bytes")
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dest, outside string) string // returns the path to install
	}{
		{"symlink to a directory outside", func(t *testing.T, dest, outside string) string {
			if err := os.Symlink(outside, filepath.Join(dest, "d")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dest, "d", "f")
		}},
		{"relative symlink to a directory outside, deeper", func(t *testing.T, dest, outside string) string {
			os.MkdirAll(filepath.Join(dest, "a"), 0o755)
			rel, _ := filepath.Rel(filepath.Join(dest, "a"), outside)
			if err := os.Symlink(rel, filepath.Join(dest, "a", "b")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dest, "a", "b", "c", "f")
		}},
		{"symlink to a file outside", func(t *testing.T, dest, outside string) string {
			if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dest, "f")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dest, "f")
		}},
		{"symlink inside DEST", func(t *testing.T, dest, outside string) string {
			os.MkdirAll(filepath.Join(dest, "real"), 0o755)
			if err := os.Symlink("real", filepath.Join(dest, "d")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dest, "d", "f")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dest, outside := filepath.Join(base, "dest"), filepath.Join(base, "outside")
			os.MkdirAll(dest, 0o755)
			os.MkdirAll(filepath.Join(outside, "sub"), 0o755)
			os.WriteFile(filepath.Join(outside, "secret"), []byte("keep me"), 0o600)
			os.WriteFile(filepath.Join(outside, "f"), []byte("keep me too"), 0o644)
			before := snapshot(t, outside)
			p := tc.setup(t, dest, outside)
			d, err := OpenDir(dest)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			_, err = Install(bytes.NewReader(body), Request{Path: p, Dir: d, Hashes: hashesOf(body)})
			var se *SymlinkError
			if !errors.Is(err, ErrSymlinkInDest) || !errors.As(err, &se) || !strings.Contains(err.Error(), "refusing to write through it") {
				t.Fatalf("err = %v, want a SymlinkError", err)
			}
			// Reads and deletes are refused as well.
			if _, err := d.Open(p); !errors.Is(err, ErrSymlinkInDest) {
				t.Errorf("Open: %v", err)
			}
			if err := d.Remove(p); !errors.Is(err, ErrSymlinkInDest) {
				t.Errorf("Remove: %v", err)
			}
			d.RemoveEmptyParents(p)
			sameSnapshot(t, outside, before)
			noTemp(t, base)
		})
	}
}

// swapReader replaces a directory by a symbolic link on its first Read,
// that is after Install checked the path and opened the directory.
type swapReader struct {
	t              *testing.T
	body           []byte
	dir, moved, to string
	done           bool
}

func (r *swapReader) Read(p []byte) (int, error) {
	if !r.done {
		r.done = true
		if err := os.Rename(r.dir, r.moved); err != nil {
			r.t.Error(err)
		}
		if err := os.Symlink(r.to, r.dir); err != nil {
			r.t.Error(err)
		}
	}
	if len(r.body) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.body)
	r.body = r.body[n:]
	return n, nil
}

// A directory of the path is replaced by a symbolic link to the outside
// while the body streams (after the checks): the file still lands inside
// DEST, in the directory that was checked, and nothing is written outside.
func TestInstallSymlinkSwappedDuringDownload(t *testing.T) {
	base := t.TempDir()
	dest, outside := filepath.Join(base, "dest"), filepath.Join(base, "outside")
	os.MkdirAll(filepath.Join(dest, "d"), 0o755)
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "f"), []byte("keep me"), 0o644)
	before := snapshot(t, outside)
	body := []byte("resource bytes")
	d, err := OpenDir(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := &swapReader{t: t, body: body, dir: filepath.Join(dest, "d"), moved: filepath.Join(dest, "moved"), to: outside}
	if _, err := Install(r, Request{Path: filepath.Join(dest, "d", "f"), Dir: d, Hashes: hashesOf(body)}); err != nil {
		t.Fatal(err)
	}
	sameSnapshot(t, outside, before)
	got, err := os.ReadFile(filepath.Join(dest, "moved", "f"))
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("file in the checked directory: %q, %v", got, err)
	}
	// The next install through the link is refused.
	if _, err := Install(bytes.NewReader(body), Request{Path: filepath.Join(dest, "d", "f"), Dir: d}); !errors.Is(err, ErrSymlinkInDest) {
		t.Fatalf("second install: %v", err)
	}
	sameSnapshot(t, outside, before)
}

func TestInstallDigestSpellings(t *testing.T) {
	body := []byte("the resource")
	other := []byte("other bytes!")
	m5, s1, s256 := md5.Sum(body), sha1.Sum(body), sha256.Sum256(body)
	om5 := md5.Sum(other)
	hx := hex.EncodeToString
	b64 := base64.StdEncoding.EncodeToString
	for _, tc := range []struct {
		name       string
		attr       string
		err        error
		unverified string
	}{
		{"lower hex", "md5:" + hx(m5[:]), nil, ""},
		{"upper MD5 and hex", "MD5:" + strings.ToUpper(hx(m5[:])), nil, ""},
		{"SHA-256 spelling", "SHA-256:" + hx(s256[:]), nil, ""},
		{"sha256 base64", "sha256:" + b64(s256[:]), nil, ""},
		{"sha-1 url base64 unpadded", "sha-1:" + base64.RawURLEncoding.EncodeToString(s1[:]), nil, ""},
		{"unknown only", "sha-512:abc", nil, "sha-512"},
		{"wrong bytes, upper case alg", "MD5:" + hx(om5[:]), ErrHashMismatch, ""},
		{"wrong bytes, base64", "md5:" + b64(om5[:]), ErrHashMismatch, ""},
		{"wrong bytes behind a matching digest", "sha-256:" + hx(s256[:]) + " md5:" + b64(om5[:]), ErrHashMismatch, ""},
		{"short hex", "md5:" + hx(m5[:])[:31], rs.ErrDigestEncoding, ""},
		{"long hex", "sha-256:" + hx(s256[:]) + "0", rs.ErrDigestEncoding, ""},
		{"bad chars", "sha-1:" + strings.Repeat("z", 40), rs.ErrDigestEncoding, ""},
		{"conflicting md5", "md5:" + hx(m5[:]) + " md5:" + hx(om5[:]), rs.ErrDigestConflict, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			res, err := Install(bytes.NewReader(body), Request{Path: p, Hashes: rs.SplitHashes(tc.attr)})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("installed despite %v", tc.err)
				}
				noTemp(t, dir)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(res.Unverified, ","); got != tc.unverified {
				t.Fatalf("Unverified = %q, want %q", got, tc.unverified)
			}
		})
	}
}
