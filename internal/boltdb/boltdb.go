package boltdb

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Kinds of failure, matched with errors.Is.
var (
	// ErrLocked: another process (or another DB in this process) holds
	// the file open past the Timeout.
	ErrLocked = errors.New("boltdb: held open elsewhere")
	// ErrCorrupt: bbolt found the file invalid, of another version or
	// with a bad checksum, or panicked reading it.
	ErrCorrupt = errors.New("boltdb: damaged")
	// ErrTx: bbolt failed a transaction (not the function run in it),
	// e.g. writing the commit to a full disk.
	ErrTx = errors.New("boltdb: transaction failed")
)

// Error is a classified failure: it matches its kind and its cause with
// errors.Is, and reads as the cause alone.
type Error struct {
	kind, err error
}

func (e *Error) Error() string   { return e.err.Error() }
func (e *Error) Unwrap() []error { return []error{e.kind, e.err} }

// Open opens or creates the bbolt file at path, mode 0600, with o. Its
// errors match ErrLocked or ErrCorrupt where they are that; any other is
// bbolt's or the system's error as is (see Structural).
func Open(path string, o *bbolt.Options) (db *bbolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil { // bbolt panics on some damaged pages
			db, err = nil, &Error{ErrCorrupt, fmt.Errorf("%v", r)}
		}
	}()
	db, err = bbolt.Open(path, 0o600, o)
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, &Error{ErrLocked, err}
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		return nil, &Error{ErrCorrupt, err}
	}
	return nil, err
}

// Structural reports whether an error of Open that is neither ErrLocked
// nor ErrCorrupt is bbolt judging the file's structure ("file size too
// small", bad meta pages, ...) rather than the system failing (permission,
// a missing directory, a full disk, an I/O error).
func Structural(err error) bool {
	var errno syscall.Errno
	var pe *fs.PathError
	return err != nil && !errors.As(err, &errno) && !errors.As(err, &pe)
}

// Run runs fn in a write (write true) or read transaction of db. fn's
// own error is returned as is; bbolt's matches ErrTx, and a panic (bbolt
// reading a damaged page) becomes an error matching ErrCorrupt.
func Run(db *bbolt.DB, write bool, fn func(*bbolt.Tx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{ErrCorrupt, fmt.Errorf("%v", r)}
		}
	}()
	mine := false
	wrap := func(tx *bbolt.Tx) error {
		if e := fn(tx); e != nil {
			mine = true
			return e
		}
		return nil
	}
	if write {
		err = db.Update(wrap)
	} else {
		err = db.View(wrap)
	}
	if err != nil && !mine {
		return &Error{ErrTx, err}
	}
	return err
}
