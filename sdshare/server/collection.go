package server

import (
	"context"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/resourcesync-go/resourcesync/internal/nofollow"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// ntType is the inventory's media type of a fragment.
const ntType = "application/n-triples"

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
	name, path   string
	srv          *Server
	st           store.Store
	releaseStore func() // gives back the writer role of a shared st (nil: none)
	snapDir      string
	graphDir     string // the graph files (index.go)
	loadNo       int    // names a load's graph files
	noLayer      bool   // tests: merge every run at every load, as before overlays

	// mu is held for writing across Apply and the swap of cur, so that a
	// fragment read after its journal record is visible sees the new
	// graph.
	mu  sync.RWMutex
	cur *version

	loadMu sync.Mutex // one load at a time
	stamps map[string]stamp
	runs   map[string]fileRun // by file: the sorted runs of the last load (load.go)
	runNo  int                // names the runs
	// keptF holds the kept fragments of every version (load.go), from
	// keptOff on appended by each load; rewritten at every start.
	keptF   *os.File
	keptOff int64
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
