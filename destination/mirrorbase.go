package destination

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// mirrorBaseFile (in DEST/.resourcesync) holds the base URL the state
// records, readable without the state's lock: a sync --follow holds that
// lock for as long as it runs, and oai serve --mirror started beside it
// needs the base.
const mirrorBaseFile = "base"

// MirrorBase returns the base URL of the Source that DEST mirrors, as
// its state recorded it ("" when nothing was synced yet). It reads
// DEST/.resourcesync/base, which every writing run keeps, or else (a
// mirror made by an earlier version) opens the state read-only, failing
// with ErrLocked while a run writes it.
func MirrorBase(dest string) (string, error) {
	if b, ok := readMirrorBase(dest); ok {
		return b, nil
	}
	st, err := openState(dest, true)
	if err != nil {
		return "", err
	}
	defer st.Close()
	return st.meta("base")
}

func readMirrorBase(dest string) (string, bool) {
	dir := filepath.Join(dest, StateDirName)
	if noLink(dir, true) != nil {
		return "", false
	}
	p := filepath.Join(dir, mirrorBaseFile)
	if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	f, err := os.Open(p)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	s := strings.TrimSpace(string(b))
	if err != nil || s == "" || strings.ContainsAny(s, "\r\n") {
		return "", false
	}
	return s, true
}

// writeMirrorBase keeps DEST/.resourcesync/base equal to the state's base
// (written whole, by a rename). Best effort: MirrorBase falls back to the
// state.
func writeMirrorBase(root, base string) {
	dir := filepath.Join(root, StateDirName)
	if b, ok := readMirrorBase(root); ok && b == base {
		return
	}
	f, err := os.CreateTemp(dir, mirrorBaseFile+".tmp-*")
	if err != nil {
		return
	}
	_, err = f.WriteString(base + "\n")
	err = errors.Join(err, f.Close())
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, mirrorBaseFile))
	}
	if err != nil {
		os.Remove(f.Name())
	}
}
