// Package casefold tells whether a directory's file system takes names
// that differ only in case (or, on macOS, only in Unicode normalization
// form) for one name, and finds the entry that such a name would reach.
// It is the one policy the Destination (sync) and the OAI-PMH harvester
// share for file systems that fold case: macOS (APFS, HFS+) and Windows
// (NTFS) by default, FAT everywhere, ext4 directories with casefold.
//
// Both refuse the second of two names that would share a file, rather
// than encode names: the layout of DEST (and of a harvest, which a Source
// publishes as URLs) stays the same on every platform, and such pairs are
// rare enough that a clear refusal serves better than a renamed file.
package casefold

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Folding is what a file system takes for one name. The zero value is a
// file system that compares names byte for byte (Linux, mostly).
type Folding struct {
	Case bool // names that differ only in case are one (Unicode simple case folding)
	Norm bool // names that differ only in normalization form are one (NFC, NFD)
}

// Folds reports whether the file system takes some different names for one.
func (f Folding) Folds() bool { return f.Case || f.Norm }

// Probe finds out how dir's file system compares names: it creates a file
// with a mixed-case name (and one with a precomposed letter) in dir, looks
// it up under another spelling and removes it. dir must exist and be
// writable; a file system that cannot be probed is an error, not a guess.
// Directories of one file system may differ (ext4 casefold is a
// per-directory attribute, inherited by new subdirectories): probe the
// directory the files go under, or one made in it.
func Probe(dir string) (Folding, error) {
	var f Folding
	var rnd [6]byte
	rand.Read(rnd[:])
	tag := hex.EncodeToString(rnd[:])
	var err error
	if f.Case, err = aliases(dir, ".casefold-Probe-"+tag, ".CASEFOLD-pROBE-"+tag); err != nil {
		return Folding{}, err
	}
	// "é" precomposed (NFC) and as e + combining acute (NFD).
	// A file system that takes no such name (fusefat) folds no forms of
	// it either: the names that need it fail there whatever we do.
	f.Norm, _ = aliases(dir, ".casefold-\u00e9-"+tag, ".casefold-e\u0301-"+tag)
	return f, nil
}

// aliases creates dir/name and reports whether dir/other reaches it.
func aliases(dir, name, other string) (bool, error) {
	p := filepath.Join(dir, name)
	fd, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, err
	}
	fd.Close()
	defer os.Remove(p)
	// The name has a random part: other is there only as name. (Not
	// os.SameFile: fusefat numbers each spelling's inode apart.)
	_, err = os.Lstat(filepath.Join(dir, other))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Key returns the name as the file system compares it: two names with one
// key are one file there. For a file system that folds nothing, it is the
// name.
func (f Folding) Key(name string) string {
	if f.Norm {
		name = norm.NFD.String(name)
	}
	if !f.Case {
		return name
	}
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// foldRune maps r to the smallest rune of its simple case folding orbit
// (k, K and the Kelvin sign all go to K), so that strings.EqualFold(a, b)
// exactly when their folded forms are equal.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}

// same reports whether entry, a name read from a directory, is name
// itself as this file system stores it (HFS+ stores NFD).
func (f Folding) same(entry, name string) bool {
	return entry == name || f.Norm && norm.NFC.String(entry) == norm.NFC.String(name)
}

// Other returns the name of the entry of dir that name would reach but
// that is not name: another file's, whose name differs from name only in
// what the file system folds. ok is false when there is none (no entry
// with name's key, or name itself). It reads the directory, so callers
// ask only when a file is known to be there (a lookup of name found one)
// or when they must know before creating name.
func (f Folding) Other(dir, name string) (other string, ok bool, err error) {
	if !f.Folds() {
		return "", false, nil
	}
	d, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer d.Close()
	key := f.Key(name)
	for {
		names, err := d.Readdirnames(1024)
		for _, e := range names {
			if !f.same(e, name) && f.Key(e) == key {
				return e, true, nil
			}
		}
		if err == io.EOF {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
	}
}
