package boltdb

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
)

func TestOpenClassifies(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.db")
	db, err := Open(p, &bbolt.Options{Timeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := Open(p, &bbolt.Options{Timeout: 10 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Errorf("second open: %v, want ErrLocked", err)
	}
	junk := filepath.Join(dir, "junk.db")
	os.WriteFile(junk, []byte(strings.Repeat("not a bbolt file ", 2000)), 0o600)
	if _, err := Open(junk, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("junk: %v, want ErrCorrupt", err)
	}
	short := filepath.Join(dir, "short.db")
	os.WriteFile(short, []byte("x"), 0o600)
	if _, err := Open(short, nil); err == nil || !errors.Is(err, ErrCorrupt) && !Structural(err) {
		t.Errorf("short: %v, want ErrCorrupt or Structural", err)
	}
	_, err = Open(filepath.Join(dir, "missing", "a.db"), nil)
	if err == nil || errors.Is(err, ErrCorrupt) || Structural(err) || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("missing directory: %v, want the system's error", err)
	}
}

func TestRun(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mine := errors.New("mine")
	if err := Run(db, true, func(*bbolt.Tx) error { return mine }); err != mine {
		t.Errorf("fn's error: %v", err)
	}
	if err := Run(db, false, func(*bbolt.Tx) error { panic("bad page") }); !errors.Is(err, ErrCorrupt) || err.Error() != "bad page" {
		t.Errorf("panic: %v, want ErrCorrupt reading as the panic", err)
	}
	if err := Run(db, true, func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := Run(db, false, func(*bbolt.Tx) error { return nil }); !errors.Is(err, ErrTx) {
		t.Errorf("closed: %v, want ErrTx", err)
	}
}
