// Package bolt implements store.Store on one bbolt file.
//
// bbolt was chosen over SQLite and Pebble because the state is a handful of
// ordered key spaces read mostly as whole ranges (the inventory loaded for a
// rescan, journal ranges for Change Lists): a B+tree with ordered cursors
// fits exactly, it is pure Go (no cgo), loads about 4x faster than pure-Go
// SQLite on this machine (238k vs 55k rows/s), gives serialisable
// transactions with copy-on-write pages and a single fsync'd meta page
// switch per commit (so kill -9 can never leave a torn state), and takes an
// exclusive flock so two processes cannot open the same state. Pebble loads
// a little faster but is an LSM with background compaction and a far larger
// dependency tree, which buys nothing at our write rates.
//
// Layout: bucket "inv" maps path -> resource; bucket "jnl" maps an 8-byte
// big-endian seq -> change (appended in key order, so pages are filled to
// 100%); bucket "meta" holds user meta values; bucket "info" holds the
// format version and the inventory count.
package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/internal/boltdb"
	"github.com/resourcesync-go/resourcesync/internal/boltmem"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
)

var (
	bInv  = []byte("inv")
	bJnl  = []byte("jnl")
	bMeta = []byte("meta")
	bInfo = []byte("info")

	kVersion = []byte("version")
	kCount   = []byte("count")
)

// formatVersion is the state's format. Version 2 (compact resource
// values, see appendResource) reads version 1 states and marks them
// version 2 when it opens them, so that an older program refuses them
// instead of misreading the new values.
const (
	formatVersion  = 2
	formatVersion1 = 1
)

// journalChunk is how many journal records one read transaction reads
// before it is closed and the records are yielded.
const journalChunk = 1024

// pageSize is the page size of new state files. 16 KiB pages quarter the
// number of pages (and write calls) a commit of a large batch writes, at
// the price of rewriting more bytes for a single-record commit.
var pageSize = 16 << 10

// Options configure Open.
type Options struct {
	// LockTimeout is how long Open waits for another process to release
	// the state before it fails with store.ErrLocked. Default 1s.
	LockTimeout time.Duration
	// NoSync skips fsync on commit: for tests and benchmarks only; a
	// crash of the machine (not of the process) may then lose or corrupt
	// the state.
	NoSync bool
	// ReadOnly opens an existing state for reading: nothing is written
	// (not even on open), several read-only opens may hold the state at
	// once (a writer waits for them, and they for it), and Apply and
	// PutMeta fail. For readers beside the state's writer, such as oai
	// serve beside publish.
	ReadOnly bool
}

// DB is a store.Store in one bbolt file.
type DB struct {
	db     *bbolt.DB
	path   string
	unmark func()       // removes the record of this process as the holder (writable)
	mu     sync.RWMutex // guards closed against Close
	closed bool
	// applied counts the records written since the mapped pages were last
	// released: a write transaction reads the pages it changes through the
	// mapping, so a long series of batches touches the whole inventory.
	applied atomic.Int64
	// gets counts lookups since the last release: a server looks up the
	// resource of every request, at random places in the inventory, and
	// each page fault maps up to 16 neighbouring pages; over a baseline
	// sync of the whole collection that would map the whole file.
	gets atomic.Int64
	// passed counts the records read by passes (ResourcesIn, Journal)
	// since the last release, over all of them: a server producing dump
	// packages on request reads many short ranges (a package's, at most
	// 10,000 records), none of which alone reaches releaseEvery, and over
	// a baseline sync they map the whole file.
	passed atomic.Int64
}

var _ store.Store = (*DB)(nil)

// Open opens or creates the state file at path. It fails with
// store.ErrLocked when another process (or another DB in this process)
// holds it open, naming that process where it can be known (a DB open for
// writing records its process beside the file: boltdb.MarkHolder), and with store.ErrCorrupt when the file is not a state file
// of a known version or its pages are damaged.
func Open(path string, opt *Options) (*DB, error) {
	if opt == nil {
		opt = &Options{}
	}
	timeout := opt.LockTimeout
	if timeout <= 0 {
		timeout = time.Second
	}
	db, err := openBolt(path, timeout, opt.ReadOnly)
	if err != nil {
		return nil, err
	}
	db.NoSync = opt.NoSync
	d := &DB{db: db, path: path}
	check := d.init
	if opt.ReadOnly {
		check = d.check
	}
	if err := check(); err != nil {
		db.Close()
		return nil, err
	}
	if !opt.ReadOnly {
		d.unmark = boltdb.MarkHolder(path)
	}
	return d, nil
}

// OpenSet opens or creates the state of set in dir, dir/set/state.db:
// the layout of a Source's StateDir and of the store URL bolt:DIR.
func OpenSet(dir, set string, opt *Options) (*DB, error) {
	sd := filepath.Join(dir, set)
	if opt == nil || !opt.ReadOnly {
		if err := os.MkdirAll(sd, 0o755); err != nil {
			return nil, err
		}
	}
	return Open(filepath.Join(sd, "state.db"), opt)
}

func openBolt(path string, timeout time.Duration, readOnly bool) (*bbolt.DB, error) {
	db, err := boltdb.Open(path, &bbolt.Options{Timeout: timeout, FreelistType: bbolt.FreelistMapType, PageSize: pageSize, ReadOnly: readOnly})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, boltdb.ErrLocked):
		if h := boltdb.Holder(path); h != "" {
			return nil, fmt.Errorf("%w: %s (held open for more than %v by %s)", store.ErrLocked, path, timeout, h)
		}
		return nil, fmt.Errorf("%w: %s (held open elsewhere for more than %v)", store.ErrLocked, path, timeout)
	case errors.Is(err, boltdb.ErrCorrupt), boltdb.Structural(err):
		return nil, fmt.Errorf("%w: %s: %w", store.ErrCorrupt, path, err)
	}
	return nil, wrapIO(path, err) // permission, missing directory, disk full, I/O error
}

func (d *DB) init() error {
	return d.update(func(tx *bbolt.Tx) error {
		info := tx.Bucket(bInfo)
		if info == nil {
			empty := true
			tx.ForEach(func([]byte, *bbolt.Bucket) error { empty = false; return nil })
			if !empty {
				return fmt.Errorf("%w: %s is a bbolt file but not a Source state", store.ErrCorrupt, d.path)
			}
			info, _ = tx.CreateBucket(bInfo)
			info.Put(kVersion, binary.BigEndian.AppendUint32(nil, formatVersion))
			info.Put(kCount, make([]byte, 8))
		} else if v := info.Get(kVersion); len(v) != 4 || (binary.BigEndian.Uint32(v) != formatVersion && binary.BigEndian.Uint32(v) != formatVersion1) {
			return fmt.Errorf("%w: %s has unknown state format %x", store.ErrCorrupt, d.path, v)
		} else if binary.BigEndian.Uint32(v) == formatVersion1 {
			if err := info.Put(kVersion, binary.BigEndian.AppendUint32(nil, formatVersion)); err != nil {
				return err
			}
		}
		for _, name := range [][]byte{bInv, bJnl, bMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
}

// check is init for a read-only open: the file must be a Source state
// (of either format version; the older one is read the same way).
func (d *DB) check() error {
	return d.view(func(tx *bbolt.Tx) error {
		info := tx.Bucket(bInfo)
		if info == nil {
			return fmt.Errorf("%w: %s is not a Source state", store.ErrCorrupt, d.path)
		}
		if v := info.Get(kVersion); len(v) != 4 || (binary.BigEndian.Uint32(v) != formatVersion && binary.BigEndian.Uint32(v) != formatVersion1) {
			return fmt.Errorf("%w: %s has unknown state format %x", store.ErrCorrupt, d.path, v)
		}
		for _, name := range [][]byte{bInv, bJnl, bMeta} {
			if tx.Bucket(name) == nil {
				return fmt.Errorf("%w: %s lacks bucket %s", store.ErrCorrupt, d.path, name)
			}
		}
		return nil
	})
}

// Close implements store.Store.
func (d *DB) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if d.unmark != nil {
		d.unmark()
	}
	return d.db.Close()
}

// Path returns the file name of the state.
func (d *DB) Path() string { return d.path }

// wrapIO maps disk-full errors to store.ErrNoSpace.
func wrapIO(path string, err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %s: %w", store.ErrNoSpace, path, err)
	}
	return fmt.Errorf("store %s: %w", path, err)
}

// view runs fn in a read transaction; update in a write transaction. Both
// turn a bbolt panic (a damaged page) into store.ErrCorrupt.
func (d *DB) view(fn func(*bbolt.Tx) error) error { return d.run(false, fn) }

func (d *DB) update(fn func(*bbolt.Tx) error) error { return d.run(true, fn) }

func (d *DB) run(write bool, fn func(*bbolt.Tx) error) (err error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return store.ErrClosed
	}
	err = boltdb.Run(d.db, write, fn)
	switch {
	case errors.Is(err, boltdb.ErrCorrupt):
		return fmt.Errorf("%w: %s: %w", store.ErrCorrupt, d.path, err)
	case errors.Is(err, boltdb.ErrTx):
		return wrapIO(d.path, err)
	}
	return err
}

// Apply implements store.Store.
func (d *DB) Apply(ctx context.Context, b store.Batch) (first, last uint64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	for i := range b.Changes {
		c := &b.Changes[i]
		if !c.Kind.Valid() || c.Resource.Path == "" {
			return 0, 0, fmt.Errorf("%w: change %d: kind %q path %q", store.ErrConflict, i, c.Kind, c.Resource.Path)
		}
		if i > 0 && c.Time.Before(b.Changes[i-1].Time) {
			return 0, 0, fmt.Errorf("%w: change %d at %v follows one at %v", store.ErrTimeOrder, i, c.Time, b.Changes[i-1].Time)
		}
	}
	err = d.update(func(tx *bbolt.Tx) error {
		inv, jnl, info := tx.Bucket(bInv), tx.Bucket(bJnl), tx.Bucket(bInfo)
		jnl.FillPercent = 1.0 // appended in key order
		inv.FillPercent = 0.9 // batches arrive mostly in path order
		count := int64(binary.BigEndian.Uint64(info.Get(kCount)))
		next := uint64(1)
		k, v := jnl.Cursor().Last()
		if b.Baseline && k != nil && len(b.Changes) > 0 {
			return fmt.Errorf("%w: a baseline batch after journal record %d", store.ErrConflict, binary.BigEndian.Uint64(k))
		}
		if k != nil {
			next = binary.BigEndian.Uint64(k) + 1
			if len(b.Changes) > 0 {
				lc, err := decodeChange(k, v)
				if err != nil {
					return err
				}
				if b.Changes[0].Time.Before(lc.Time) {
					return fmt.Errorf("%w: %v is before seq %d at %v", store.ErrTimeOrder, b.Changes[0].Time, lc.Seq, lc.Time)
				}
			}
		}
		// Values live in one arena per batch: bbolt keeps references to
		// them until the commit.
		var arena []byte
		put := func(bk *bbolt.Bucket, key []byte, enc func([]byte) []byte) error {
			if cap(arena)-len(arena) < 512 {
				arena = make([]byte, 0, 256<<10)
			}
			n := len(arena)
			arena = enc(arena)
			return bk.Put(key, arena[n:len(arena):len(arena)])
		}
		for i := range b.Changes {
			c := b.Changes[i]
			key := []byte(c.Resource.Path)
			exists := inv.Get(key) != nil
			switch {
			case c.Kind == rs.Created && exists,
				c.Kind != rs.Created && !exists:
				return fmt.Errorf("%w: %s of %q (in inventory: %v)", store.ErrConflict, c.Kind, c.Resource.Path, exists)
			}
			if c.Kind == rs.Deleted {
				if err := inv.Delete(key); err != nil {
					return err
				}
				count--
			} else {
				c.Resource.Changed = c.Time
				if err := put(inv, key, func(b []byte) []byte { return appendResource(b, &c.Resource) }); err != nil {
					return fmt.Errorf("%w: %q: %w", store.ErrConflict, c.Resource.Path, err)
				}
				if c.Kind == rs.Created {
					count++
				}
			}
			if b.Baseline {
				continue
			}
			c.Seq = next
			if err := put(jnl, seqKey(next), func(b []byte) []byte { return appendChange(b, &c) }); err != nil {
				return err
			}
			if first == 0 {
				first = next
			}
			last = next
			next++
		}
		for i := range b.Touch {
			r := &b.Touch[i]
			key := []byte(r.Path)
			if inv.Get(key) == nil {
				return fmt.Errorf("%w: touch of %q, not in the inventory", store.ErrConflict, r.Path)
			}
			if err := put(inv, key, func(b []byte) []byte { return appendResource(b, r) }); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bMeta)
		for k, v := range b.Meta {
			var err error
			if v == nil {
				err = meta.Delete([]byte(k))
			} else {
				err = meta.Put([]byte(k), bytes.Clone(v))
			}
			if err != nil {
				return fmt.Errorf("meta %q: %w", k, err)
			}
		}
		return info.Put(kCount, binary.BigEndian.AppendUint64(nil, uint64(count)))
	})
	if err != nil {
		return 0, 0, err
	}
	if d.applied.Add(int64(len(b.Changes)+len(b.Touch))) >= releaseEvery {
		d.applied.Store(0)
		d.release()
	}
	return first, last, nil
}

// Get implements store.Store.
func (d *DB) Get(ctx context.Context, path string) (r store.Resource, err error) {
	if err := ctx.Err(); err != nil {
		return r, err
	}
	if d.gets.Add(1)%getsPerRelease == 0 {
		d.release()
	}
	err = d.view(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bInv).Get([]byte(path))
		if v == nil {
			return fmt.Errorf("%w: %q", store.ErrNotFound, path)
		}
		r, err = decodeResource(path, v)
		return err
	})
	return r, err
}

// Resources implements store.Store. It holds one read transaction for the
// whole iteration, releasing the mapped pages it has read every
// releaseEvery records.
func (d *DB) Resources(ctx context.Context) iter.Seq2[store.Resource, error] {
	return func(yield func(store.Resource, error) bool) {
		stopped := false
		err := d.view(func(tx *bbolt.Tx) error {
			c := tx.Bucket(bInv).Cursor()
			n := 0
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if n++; n%4096 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
					if n%releaseEvery == 0 {
						_ = boltmem.ReleaseTx(tx)
					}
				}
				r, err := decodeResource(string(k), v)
				if err != nil {
					return err
				}
				if !yield(r, nil) {
					stopped = true
					return nil
				}
			}
			return ctx.Err()
		})
		if err != nil && !stopped {
			yield(store.Resource{}, err)
		}
	}
}

// releaseEvery is how many records a long pass reads between two
// releases of the mapped pages it touched (see package boltmem): the
// resident set of a pass then stays bounded whatever the inventory's size.
const releaseEvery = 32 << 10

// release gives the pages of the mapping back to the page cache; a failure
// only costs memory, so it is ignored.
func (d *DB) release() {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if !d.closed {
		_ = boltmem.Release(d.db)
	}
}

// passRead counts n records read by a pass and releases the mapped pages
// once passes read releaseEvery records since the last release.
func (d *DB) passRead(n int) {
	if d.passed.Add(int64(n)) >= releaseEvery {
		d.passed.Store(0)
		d.release()
	}
}

// getsPerRelease is how many lookups run between two releases: at most
// ~64 KiB mapped per lookup, so ~32 MiB, and a release (a few hundred µs
// on a large state) every 512 requests costs well under 1% of serving.
const getsPerRelease = 512

// resourcesPage is how many inventory records one read transaction of
// ResourcesIn reads before it is closed and the records are yielded.
const resourcesPage = 1024

// ResourcesIn implements store.Store: pages of resourcesPage records, one
// read transaction each, so no transaction is open while the caller runs
// (a long read transaction would also keep bbolt from reusing freed pages).
func (d *DB) ResourcesIn(ctx context.Context, from, to string) iter.Seq2[store.Resource, error] {
	return func(yield func(store.Resource, error) bool) {
		page := make([]store.Resource, 0, resourcesPage)
		next := []byte(from)
		inclusive := true // next itself is still to be yielded
		for {
			page = page[:0]
			done := false
			err := d.view(func(tx *bbolt.Tx) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				c := tx.Bucket(bInv).Cursor()
				k, v := c.Seek(next)
				if k != nil && !inclusive && bytes.Equal(k, next) {
					k, v = c.Next()
				}
				for ; k != nil; k, v = c.Next() {
					if to != "" && string(k) >= to {
						done = true
						return nil
					}
					r, err := decodeResource(string(k), v)
					if err != nil {
						return err
					}
					page = append(page, r)
					if len(page) == resourcesPage {
						return nil
					}
				}
				done = true
				return nil
			})
			if err != nil {
				yield(store.Resource{}, err)
				return
			}
			for _, r := range page {
				if !yield(r, nil) {
					return
				}
			}
			d.passRead(len(page))
			if done || len(page) == 0 {
				return
			}
			next, inclusive = []byte(page[len(page)-1].Path), false
		}
	}
}

// Journal implements store.Store.
func (d *DB) Journal(ctx context.Context, from uint64) iter.Seq2[store.Change, error] {
	return d.journal(ctx, func(tx *bbolt.Tx) (uint64, error) { return max(from, 1), nil }, time.Time{})
}

// JournalBetween implements store.Store. Because datetimes never decrease
// with seq, the first record at or after from is found by binary search
// over seq, without a secondary index.
func (d *DB) JournalBetween(ctx context.Context, from, until time.Time) iter.Seq2[store.Change, error] {
	start := func(tx *bbolt.Tx) (uint64, error) {
		c := tx.Bucket(bJnl).Cursor()
		kf, _ := c.First()
		kl, _ := c.Last()
		if kf == nil {
			return 1, nil
		}
		lo, hi := binary.BigEndian.Uint64(kf), binary.BigEndian.Uint64(kl)+1
		for lo < hi { // first seq whose record's time is >= from
			mid := lo + (hi-lo)/2
			k, v := c.Seek(seqKey(mid))
			if k == nil {
				hi = mid
				continue
			}
			t, err := changeTime(v)
			if err != nil {
				return 0, err
			}
			if t.Before(from) {
				lo = binary.BigEndian.Uint64(k) + 1
			} else {
				hi = mid
			}
		}
		return lo, nil
	}
	return d.journal(ctx, start, until)
}

func (d *DB) journal(ctx context.Context, start func(*bbolt.Tx) (uint64, error), until time.Time) iter.Seq2[store.Change, error] {
	return func(yield func(store.Change, error) bool) {
		var next uint64
		first := true
		for {
			if err := ctx.Err(); err != nil {
				yield(store.Change{}, err)
				return
			}
			chunk := make([]store.Change, 0, journalChunk)
			done := false
			err := d.view(func(tx *bbolt.Tx) error {
				if first {
					s, err := start(tx)
					if err != nil {
						return err
					}
					next, first = s, false
				}
				c := tx.Bucket(bJnl).Cursor()
				for k, v := c.Seek(seqKey(next)); ; k, v = c.Next() {
					if k == nil {
						done = true
						return nil
					}
					ch, err := decodeChange(k, v)
					if err != nil {
						return err
					}
					if !until.IsZero() && !ch.Time.Before(until) {
						done = true
						return nil
					}
					chunk = append(chunk, ch)
					next = ch.Seq + 1
					if len(chunk) == journalChunk {
						return nil
					}
				}
			})
			if err != nil {
				yield(store.Change{}, err)
				return
			}
			for _, ch := range chunk {
				if !yield(ch, nil) {
					return
				}
			}
			d.passRead(len(chunk))
			if done {
				return
			}
		}
	}
}

// Stats implements store.Store.
func (d *DB) Stats(ctx context.Context) (s store.Stats, err error) {
	if err := ctx.Err(); err != nil {
		return s, err
	}
	err = d.view(func(tx *bbolt.Tx) error {
		s.Resources = int(binary.BigEndian.Uint64(tx.Bucket(bInfo).Get(kCount)))
		c := tx.Bucket(bJnl).Cursor()
		if k, _ := c.First(); k != nil {
			s.FirstSeq = binary.BigEndian.Uint64(k)
		}
		if k, v := c.Last(); k != nil {
			ch, err := decodeChange(k, v)
			if err != nil {
				return err
			}
			s.LastSeq, s.LastTime = ch.Seq, ch.Time
		}
		return nil
	})
	return s, err
}

// GetMeta implements store.Store.
func (d *DB) GetMeta(ctx context.Context, key string) (v []byte, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	err = d.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bMeta).Get([]byte(key))
		if b == nil {
			return fmt.Errorf("%w: meta %q", store.ErrNotFound, key)
		}
		v = bytes.Clone(b)
		return nil
	})
	return v, err
}

// PutMeta implements store.Store.
func (d *DB) PutMeta(ctx context.Context, key string, value []byte) error {
	_, _, err := d.Apply(ctx, store.Batch{Meta: map[string][]byte{key: value}})
	return err
}

// Encoding. A resource value is:
//
//	version byte (2) | flags byte | uvarint size | varint mtime ns |
//	uvarint inode | md5[16] | sha256[32] | type |
//	varint lastmod ns | varint changed ns
//
// flags bit i set means time i (mtime, lastmod, changed) is non-zero; bit
// 3 set means lastmod equals mtime and is not stored (the scanner's usual
// record). type is uvarint i: 1..len(knownTypes) names knownTypes[i-1], 0
// is followed by uvarint len(type) | type. Version 1 values (states written
// before version 2) are read as well: the same fields with the type always
// as uvarint len | bytes and lastmod always stored when non-zero.
//
// A change value is: kind byte ('c','u','d') | varint time ns |
// uvarint len(path) | path | resource value.

const (
	resVersion1 = 1
	resVersion  = 2

	flagLastModIsMTime = 1 << 3
)

// knownTypes are media types stored as one byte. The list is part of the
// format: append only, never reorder.
var knownTypes = [...]string{
	"text/plain; charset=utf-8",
	"application/octet-stream",
	"text/html; charset=utf-8",
	"text/xml; charset=utf-8",
	"application/json",
	"application/pdf",
	"image/jpeg",
	"image/png",
	"image/gif",
	"image/svg+xml",
	"image/webp",
	"image/tiff",
	"text/css; charset=utf-8",
	"text/javascript; charset=utf-8",
	"text/csv; charset=utf-8",
	"application/zip",
	"application/gzip",
	"application/x-gzip",
	"application/xml",
	"video/mp4",
	"audio/mpeg",
	"text/plain; charset=utf-16be",
	"text/plain; charset=utf-16le",
	"application/wasm",
}

var knownTypeIndex = func() map[string]uint64 {
	m := make(map[string]uint64, len(knownTypes))
	for i, t := range knownTypes {
		m[t] = uint64(i + 1)
	}
	return m
}()

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	return binary.AppendVarint(b, t.UnixNano())
}

func appendResource(b []byte, r *store.Resource) []byte {
	var flags byte
	for i, t := range []time.Time{r.ModTime, r.LastMod, r.Changed} {
		if !t.IsZero() {
			flags |= 1 << i
		}
	}
	sameLastMod := !r.ModTime.IsZero() && r.LastMod.Equal(r.ModTime)
	if sameLastMod {
		flags |= flagLastModIsMTime
	}
	b = append(b, resVersion, flags)
	b = binary.AppendUvarint(b, uint64(r.Size))
	b = appendTime(b, r.ModTime)
	b = binary.AppendUvarint(b, r.Inode)
	b = append(b, r.MD5[:]...)
	b = append(b, r.SHA256[:]...)
	if i, ok := knownTypeIndex[r.Type]; ok {
		b = binary.AppendUvarint(b, i)
	} else {
		b = append(b, 0)
		b = binary.AppendUvarint(b, uint64(len(r.Type)))
		b = append(b, r.Type...)
	}
	if !sameLastMod {
		b = appendTime(b, r.LastMod)
	}
	return appendTime(b, r.Changed)
}

func appendChange(b []byte, c *store.Change) []byte {
	var k byte
	switch c.Kind {
	case rs.Created:
		k = 'c'
	case rs.Updated:
		k = 'u'
	case rs.Deleted:
		k = 'd'
	}
	b = append(b, k)
	b = binary.AppendVarint(b, c.Time.UnixNano())
	b = binary.AppendUvarint(b, uint64(len(c.Resource.Path)))
	b = append(b, c.Resource.Path...)
	return appendResource(b, &c.Resource)
}

type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if uint64(len(d.b)) < n {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) time(present bool) time.Time {
	if !present {
		return time.Time{}
	}
	return time.Unix(0, d.varint()).UTC()
}

func (d *decoder) resource(r *store.Resource) {
	h := d.bytes(2)
	if d.bad || (h[0] != resVersion && h[0] != resVersion1) {
		d.bad = true
		return
	}
	v2, flags := h[0] == resVersion, h[1]
	r.Size = int64(d.uvarint())
	r.ModTime = d.time(flags&1 != 0)
	r.Inode = d.uvarint()
	copy(r.MD5[:], d.bytes(16))
	copy(r.SHA256[:], d.bytes(32))
	t := uint64(0)
	if v2 {
		t = d.uvarint()
	}
	switch {
	case t == 0:
		r.Type = string(d.bytes(d.uvarint()))
	case t <= uint64(len(knownTypes)):
		r.Type = knownTypes[t-1]
	default:
		d.bad = true // a type of a later version
	}
	if v2 && flags&flagLastModIsMTime != 0 {
		r.LastMod = r.ModTime
	} else {
		r.LastMod = d.time(flags&2 != 0)
	}
	r.Changed = d.time(flags&4 != 0)
}

func decodeResource(path string, v []byte) (store.Resource, error) {
	r := store.Resource{Path: path}
	d := decoder{b: v}
	d.resource(&r)
	if d.bad || len(d.b) != 0 {
		return store.Resource{}, fmt.Errorf("%w: inventory record %q", store.ErrCorrupt, path)
	}
	return r, nil
}

func decodeChange(k, v []byte) (store.Change, error) {
	var c store.Change
	bad := len(k) != 8 || len(v) < 1
	if !bad {
		c.Seq = binary.BigEndian.Uint64(k)
		switch v[0] {
		case 'c':
			c.Kind = rs.Created
		case 'u':
			c.Kind = rs.Updated
		case 'd':
			c.Kind = rs.Deleted
		default:
			bad = true
		}
		d := decoder{b: v[1:]}
		c.Time = time.Unix(0, d.varint()).UTC()
		c.Resource.Path = string(d.bytes(d.uvarint()))
		d.resource(&c.Resource)
		bad = bad || d.bad || len(d.b) != 0
	}
	if bad {
		return store.Change{}, fmt.Errorf("%w: journal record %x", store.ErrCorrupt, k)
	}
	return c, nil
}

func changeTime(v []byte) (time.Time, error) {
	if len(v) < 2 {
		return time.Time{}, fmt.Errorf("%w: short journal record", store.ErrCorrupt)
	}
	ns, n := binary.Varint(v[1:])
	if n <= 0 {
		return time.Time{}, fmt.Errorf("%w: journal record time", store.ErrCorrupt)
	}
	return time.Unix(0, ns).UTC(), nil
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq) }
