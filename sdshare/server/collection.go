package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/nofollow"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// ntType is the inventory's media type of a fragment.
const ntType = "application/n-triples"

// version is one loaded state of a collection's graph: immutable once
// published.
type version struct {
	g       *graph
	res     []rdf.Term // g.resources()
	seq     uint64     // the journal's last seq when it was loaded
	updated time.Time  // datetime of the newest change it includes, or the baseline
	key     string     // names its snapshot files: seq and a hash of the whole graph
	// frags holds the N-Triples of the fragments whose blank nodes are
	// costly to label, by resource IRI (see blankFrag); overBudget counts
	// those beyond the canonicalisation budget.
	frags      map[string]*blankFrag
	overBudget int
}

// buildErr is the failure of the snapshot builder for one version.
type buildErr struct {
	key string
	err error
}

// stamp is what the periodic rescan compares to skip unchanged files.
type stamp struct {
	size  int64
	mtime int64
}

// Collection is one named graph served as SDShare feeds.
type Collection struct {
	name, path string
	srv        *Server
	st         store.Store
	release    func() // gives back the writer role of a shared st (nil: none)
	snapDir    string

	// mu is held for writing across Apply and the swap of cur, so that a
	// fragment read after its journal record is visible sees the new
	// graph.
	mu  sync.RWMutex
	cur *version

	loadMu  sync.Mutex // one load at a time
	stamps  map[string]stamp
	lastErr atomic.Pointer[error]
	// refused: the files of the last scan that are not published
	// (symbolic links, not regular files), logged when the set changes
	// and counted on /healthz; refusedLog is the set last logged.
	refused    atomic.Int64
	refusedLog string

	reloads, reloadErrors atomic.Uint64
	changed               chan struct{} // wakes the snapshot builder
	buildErr              atomic.Pointer[buildErr]
	listeners             []func()

	// canonRuns counts the canonical labellings of fragments with blank
	// nodes: at load, and per request for those cheap enough not to be
	// kept (blankFrag); canonOver those that ran beyond the budget.
	canonRuns, canonOver atomic.Uint64
}

// Name returns the collection's name (its URL segment).
func (c *Collection) Name() string { return c.name }

// Store returns the collection's state store: the inventory (Path = the
// resource IRI, SHA256 = hash of its fragment, Size = its N-Triples length,
// Type = application/n-triples) and the change journal. Callers may read it
// and use its meta area under keys of their own; the server is its only
// writer of inventory and journal.
func (c *Collection) Store() store.Store { return c.st }

// URL returns the collection feed's URL.
func (c *Collection) URL() string { return c.srv.base + url.PathEscape(c.name) + "/" }

// Fragment returns the current fragment of the resource iri (SD-SRV-26) in
// format f; a resource not in the graph gives an empty document. Its blank
// nodes are labelled canonically and its statements sorted, so that in
// N-Triples the bytes' SHA-256 and length are the SHA256 and Size of the
// resource's inventory record in Store.
//
// A fragment whose blank nodes are costly to label is served as computed
// when the collection was loaded (see blankFrag): in canonical form, or,
// when canonical labelling would exceed the budget
// (Config.CanonicalSteps), with the blank node labels as loaded.
func (c *Collection) Fragment(ctx context.Context, iri string, f rdf.Format) ([]byte, error) {
	b, err := c.fragment(iri, f)
	if f == rdf.NTriples && err == nil {
		b = slices.Clone(b) // the loaded form is shared
	}
	return b, err
}

// fragment is Fragment without a copy: the N-Triples of a kept fragment
// (blankFrag) are the version's own bytes, which must not be modified.
func (c *Collection) fragment(iri string, f rdf.Format) ([]byte, error) {
	v := c.version()
	if bf := v.frags[iri]; bf != nil {
		if f == rdf.NTriples {
			return bf.nt, nil
		}
		var b bytes.Buffer
		ts := rdf.Parse(bytes.NewReader(bf.nt), rdf.NTriples, "")
		var perr error
		seq := func(yield func(rdf.Triple) bool) {
			for t, err := range ts {
				if err != nil {
					perr = err
					return
				}
				if !yield(t) {
					return
				}
			}
		}
		if err := writeTriples(&b, f, seq); err != nil || perr != nil {
			return nil, errors.Join(err, perr)
		}
		return b.Bytes(), nil
	}
	fts := v.g.fragment(rdf.IRI(iri))
	if hasBlank(fts) {
		c.canonRuns.Add(1)
	}
	ts, nt := canonical(fts)
	if f == rdf.NTriples {
		return nt, nil
	}
	var b bytes.Buffer
	if err := writeTriples(&b, f, slices.Values(ts)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// FragmentNT returns iri's current fragment as canonical N-Triples, empty
// when the resource is not in the graph.
func (c *Collection) FragmentNT(ctx context.Context, iri string) ([]byte, error) {
	return c.Fragment(ctx, iri, rdf.NTriples)
}

// OnChange registers fn to run (on the loader's goroutine; it must not
// block) after every load that appended to the journal. Register before
// Run.
func (c *Collection) OnChange(fn func()) { c.listeners = append(c.listeners, fn) }

// LastError returns the error of the last load, nil when it succeeded.
func (c *Collection) LastError() error {
	if p := c.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

func (c *Collection) version() *version {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cur
}

// formatOf returns the RDF format of a file name, by extension.
func formatOf(name string) (rdf.Format, bool) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".nt":
		return rdf.NTriples, true
	case ".ttl":
		return rdf.Turtle, true
	case ".rdf", ".xml", ".owl":
		return rdf.RDFXML, true
	}
	return 0, false
}

// files lists the RDF files of the collection with their stamps, and the
// files it refuses to publish. Hidden files and directories are skipped
// (editors' swap files, the state). Inside a directory, a symbolic link
// (to a file or a directory) and an RDF-named file that is not a regular
// file are refused, as the ResourceSync scan refuses them: the link may
// point at any file the server can read. The configured path itself is
// not refused: the operator chose it.
func (c *Collection) files() (map[string]stamp, []string, error) {
	out := map[string]stamp{}
	var refused []string
	fi, err := os.Stat(c.path)
	if err != nil {
		return nil, nil, err
	}
	if !fi.IsDir() {
		out[c.path] = stamp{fi.Size(), fi.ModTime().UnixNano()}
		return out, nil, nil
	}
	err = filepath.WalkDir(c.path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != c.path && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		_, rdfName := formatOf(p)
		if p != c.path && (d.Type()&fs.ModeSymlink != 0 || rdfName && !d.Type().IsRegular()) {
			refused = append(refused, p)
			return nil
		}
		if !rdfName {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = stamp{fi.Size(), fi.ModTime().UnixNano()}
		return nil
	})
	return out, refused, err
}

// noteRefused counts the refused files and logs them when they change
// (never on a public endpoint: their names and targets are the server's).
func (c *Collection) noteRefused(refused []string) {
	c.refused.Store(int64(len(refused)))
	key := strings.Join(refused, "\x00")
	if key == c.refusedLog {
		return
	}
	c.refusedLog = key
	for _, p := range refused {
		target, _ := os.Readlink(p)
		c.srv.log.Warn("collection file not published: a symbolic link or not a regular file", "collection", c.name, "file", p, "target", target)
	}
}

// openFile opens a file files listed without following a symbolic link
// below the collection's directory (nofollow.Open, as the ResourceSync
// server opens what it publishes), and refuses anything but a regular
// file: the file scanned is the file read, even if a link or a FIFO was
// swapped in since.
func (c *Collection) openFile(p string) (*os.File, error) {
	if p == c.path {
		return os.Open(p)
	}
	rel, err := filepath.Rel(c.path, p)
	if err != nil {
		return nil, err
	}
	f, err := nofollow.Open(c.path, filepath.ToSlash(rel))
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	return f, nil
}

// ErrParse wraps a collection file that could not be read as RDF; the
// collection keeps serving its last good graph.
var ErrParse = errors.New("sdshare/server: collection file is not valid RDF")

// readGraph parses every file of the collection.
func (c *Collection) readGraph(names []string) (*graph, error) {
	rg := rdf.NewGraph()
	for _, p := range names {
		f, _ := formatOf(p)
		if f == 0 {
			f = rdf.NTriples
		}
		fh, err := c.openFile(p)
		if err != nil {
			return nil, err
		}
		abs, _ := filepath.Abs(p)
		base := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
		// Blank node labels are scoped to one document: prefix them with
		// the file's index so that two files' _:b1 stay apart.
		prefix := ""
		if len(names) > 1 {
			prefix = fmt.Sprintf("f%d_", slices.Index(names, p))
		}
		for t, err := range rdf.Parse(bufio.NewReaderSize(fh, 256<<10), f, base) {
			if err != nil {
				fh.Close()
				return nil, fmt.Errorf("%w: %s: %w", ErrParse, p, err)
			}
			if t.S.IsBlank() {
				t.S.Value = prefix + blankLabel(t.S.Value)
			}
			if t.O.IsBlank() {
				t.O.Value = prefix + blankLabel(t.O.Value)
			}
			rg.Add(t)
		}
		fh.Close()
	}
	return newGraph(rg), nil
}

// blankLabel maps a blank node label from a reader to a valid N-Triples
// label, injectively: a label that is valid and does not start with 'x'
// stays (N-Triples files keep their labels), any other becomes 'x' and
// its bytes in hex (readers generate labels such as "-b1" that cannot
// collide with a document's own).
func blankLabel(l string) string {
	ok := l != "" && l[0] != 'x' && l[0] != '-'
	for i := 0; ok && i < len(l); i++ {
		c := l[i]
		ok = c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if ok {
		return l
	}
	return "x" + hex.EncodeToString([]byte(l))
}

// LoadReport says what one load found.
type LoadReport struct {
	Skipped                   bool // files unchanged since the last load (rescan only)
	Baseline                  bool
	Created, Updated, Deleted int
	Resources, Triples        int
}

// Load reads the collection's files and journals what changed since the
// last load; force reads them even when their sizes and mtimes are
// unchanged. A file that is not valid RDF fails the load (ErrParse) and
// leaves the collection as it was.
func (c *Collection) Load(ctx context.Context, force bool) (rep LoadReport, err error) {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	defer func() {
		if err != nil {
			c.reloadErrors.Add(1)
			c.lastErr.Store(&err)
		} else {
			c.lastErr.Store(nil)
		}
	}()
	stamps, refused, err := c.files()
	if err != nil {
		return rep, fmt.Errorf("sdshare/server: collection %s: %w", c.name, err)
	}
	c.noteRefused(refused)
	if !force && c.cur != nil && maps.Equal(stamps, c.stamps) {
		return LoadReport{Skipped: true}, nil
	}
	c.reloads.Add(1)
	names := slices.Sorted(maps.Keys(stamps))
	g, err := c.readGraph(names)
	if err != nil {
		return rep, fmt.Errorf("sdshare/server: collection %s: %w", c.name, err)
	}
	res := g.resources()
	rep.Resources, rep.Triples = len(res), g.Len()

	inv := map[string][32]byte{}
	for r, err := range c.st.Resources(ctx) {
		if err != nil {
			return rep, err
		}
		inv[r.Path] = r.SHA256
	}
	base, haveBase, err := store.BaselineTime(ctx, c.st)
	if err != nil {
		return rep, err
	}
	stats, err := c.st.Stats(ctx)
	if err != nil {
		return rep, err
	}
	now := time.Now().UTC()
	if now.Before(stats.LastTime) {
		now = stats.LastTime
	}
	if now.Before(base) {
		now = base
	}
	var prev map[string]*blankFrag
	if c.cur != nil {
		prev = c.cur.frags
	}
	frags := map[string]*blankFrag{}
	over := 0
	left := c.srv.cfg.CanonicalSteps // the load's labelling budget (fragmentForm)
	if extra := int64(g.Len()) * loadStepsPerTriple; left < math.MaxInt64-extra {
		left += extra
	} else {
		left = math.MaxInt64
	}
	var b store.Batch
	for _, r := range res {
		nt, bf := c.fragmentForm(g, r, prev, &left)
		if bf != nil {
			frags[r.Value] = bf
			if bf.overBudget {
				over++
			}
		}
		rec := store.Resource{Path: r.Value, Size: int64(len(nt)), SHA256: sha256.Sum256(nt), MD5: md5.Sum(nt), Type: ntType, LastMod: now}
		old, ok := inv[r.Value]
		delete(inv, r.Value)
		switch {
		case !ok:
			b.Changes = append(b.Changes, store.Change{Kind: rs.Created, Time: now, Resource: rec})
			rep.Created++
		case old != rec.SHA256:
			b.Changes = append(b.Changes, store.Change{Kind: rs.Updated, Time: now, Resource: rec})
			rep.Updated++
		}
	}
	for _, p := range slices.Sorted(maps.Keys(inv)) {
		old, err := c.st.Get(ctx, p)
		if err != nil {
			return rep, err
		}
		b.Changes = append(b.Changes, store.Change{Kind: rs.Deleted, Time: now, Resource: old})
		rep.Deleted++
	}
	if !haveBase {
		if stats.LastSeq != 0 {
			return rep, fmt.Errorf("%w: collection %s has a journal but no baseline", store.ErrCorrupt, c.name)
		}
		b.Baseline = true
		b.Meta = map[string][]byte{store.MetaBaseline: store.FormatBaseline(now)}
		base = now
		rep.Baseline = true
	}
	vh := g.versionHash()
	key := fmt.Sprintf("%x", vh[:6])
	c.mu.Lock()
	if len(b.Changes) > 0 || b.Baseline {
		if _, _, err := c.st.Apply(ctx, b); err != nil {
			c.mu.Unlock()
			return rep, fmt.Errorf("sdshare/server: collection %s: record changes: %w", c.name, err)
		}
	}
	stats, err = c.st.Stats(ctx)
	if err != nil {
		c.mu.Unlock()
		return rep, err
	}
	v := &version{g: g, res: res, seq: stats.LastSeq, updated: base, frags: frags, overBudget: over}
	if stats.LastSeq > 0 {
		v.updated = stats.LastTime
	}
	v.key = fmt.Sprintf("%d-%s", v.seq, key)
	c.cur = v
	c.mu.Unlock()
	c.stamps = stamps
	select {
	case c.changed <- struct{}{}:
	default:
	}
	if len(b.Changes) > 0 && !b.Baseline {
		for _, fn := range c.listeners {
			fn()
		}
	}
	return rep, nil
}
