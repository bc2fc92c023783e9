package sdbridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/resourcesync-go/resourcesync/internal/store"
)

// MetaCursor is the meta key under which the bridge keeps, in the
// collection's state, the last journal seq whose files are in place.
const MetaCursor = "sdbridge.seq"

// ErrBridge wraps every error of Sync.
var ErrBridge = errors.New("sdshare bridge")

// Collection is what the bridge needs of an SDShare collection: its state
// (inventory keyed by resource IRI, change journal, meta area) and the
// current fragment of a resource as canonical N-Triples.
type Collection interface {
	Name() string
	Store() store.Store
	// FragmentNT returns iri's current fragment as N-Triples, empty when
	// the resource is gone.
	FragmentNT(ctx context.Context, iri string) ([]byte, error)
}

// Bridge keeps Dir/NAME (one directory per collection) in step with the
// collections' fragments.
type Bridge struct {
	dir string
}

// New returns a Bridge writing below dir: dir/sets/NAME holds a
// collection's files, dir/tmp the files being written.
func New(dir string) *Bridge { return &Bridge{dir: dir} }

// SetDir returns the directory of collection name's files: the directory
// the ResourceSync set is published from.
func (b *Bridge) SetDir(name string) string { return filepath.Join(b.dir, "sets", name) }

// Path returns the path, relative to the set directory, of the file that
// holds iri's fragment: the IRI escaped as one path segment (so the
// resource's URL names it), below a two-character fan-out directory, with
// the .nt extension; an IRI whose escaped form would exceed a file name's
// limit is named by its SHA-256 instead.
func Path(iri string) string {
	sum := sha256.Sum256([]byte(iri))
	h := hex.EncodeToString(sum[:])
	name := url.PathEscape(iri)
	if len(name) > 240 || name == "" || strings.HasPrefix(name, ".") {
		name = h
	}
	return h[:2] + "/" + name + ".nt"
}

// Sync brings the collection's directory up to the journal's last record
// and returns the number of files written and removed.
func (b *Bridge) Sync(ctx context.Context, c Collection) (written, removed int, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w: collection %s: %w", ErrBridge, c.Name(), err)
		}
	}()
	st := c.Store()
	stats, err := st.Stats(ctx)
	if err != nil {
		return 0, 0, err
	}
	cursor, full, err := b.cursor(ctx, st)
	if err != nil {
		return 0, 0, err
	}
	if full || (stats.FirstSeq > 0 && cursor+1 < stats.FirstSeq) {
		// First run, or the journal no longer reaches back to the cursor:
		// rebuild from the inventory.
		written, removed, err = b.full(ctx, c)
	} else {
		written, removed, err = b.incremental(ctx, c, cursor)
	}
	if err != nil {
		return written, removed, err
	}
	return written, removed, st.PutMeta(ctx, MetaCursor, []byte(strconv.FormatUint(stats.LastSeq, 10)))
}

func (b *Bridge) cursor(ctx context.Context, st store.Store) (seq uint64, full bool, err error) {
	v, err := st.GetMeta(ctx, MetaCursor)
	if errors.Is(err, store.ErrNotFound) {
		return 0, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	seq, err = strconv.ParseUint(string(v), 10, 64)
	if err != nil {
		return 0, true, nil // unreadable cursor: rebuild
	}
	return seq, false, nil
}

// full writes every resource of the inventory and removes every other
// file.
func (b *Bridge) full(ctx context.Context, c Collection) (written, removed int, err error) {
	var iris []string
	for r, err := range c.Store().Resources(ctx) {
		if err != nil {
			return 0, 0, err
		}
		iris = append(iris, r.Path)
	}
	keep := make(map[string]bool, len(iris))
	for _, iri := range iris {
		if err := b.write(ctx, c, iri); err != nil {
			return written, removed, err
		}
		keep[filepath.FromSlash(Path(iri))] = true
		written++
	}
	root := b.SetDir(c.Name())
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if !keep[rel] {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			removed++
		}
		return nil
	})
	return written, removed, err
}

// incremental replays the journal after cursor.
func (b *Bridge) incremental(ctx context.Context, c Collection, cursor uint64) (written, removed int, err error) {
	st := c.Store()
	seen := map[string]bool{}
	for ch, err := range st.Journal(ctx, cursor+1) {
		if err != nil {
			return written, removed, err
		}
		iri := ch.Path()
		if seen[iri] {
			continue // the file is written from the current state once
		}
		seen[iri] = true
		_, gerr := st.Get(ctx, iri)
		switch {
		case errors.Is(gerr, store.ErrNotFound):
			p := filepath.Join(b.SetDir(c.Name()), filepath.FromSlash(Path(iri)))
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return written, removed, err
			}
			os.Remove(filepath.Dir(p)) // only if empty
			removed++
		case gerr != nil:
			return written, removed, gerr
		default:
			if err := b.write(ctx, c, iri); err != nil {
				return written, removed, err
			}
			written++
		}
	}
	return written, removed, nil
}

// write installs iri's current fragment atomically.
func (b *Bridge) write(ctx context.Context, c Collection, iri string) error {
	data, err := c.FragmentNT(ctx, iri)
	if err != nil {
		return err
	}
	p := filepath.Join(b.SetDir(c.Name()), filepath.FromSlash(Path(iri)))
	if old, err := os.ReadFile(p); err == nil && string(old) == string(data) {
		return nil // unchanged: keep the file's mtime, so the scan skips it
	}
	tmpDir := filepath.Join(b.dir, "tmp")
	if err := os.MkdirAll(tmpDir, 0o777); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
		return err
	}
	// 0666 less the umask (applied by the kernel): os.CreateTemp would
	// make the published file 0600.
	var f *os.File
	for range 100 {
		f, err = os.OpenFile(filepath.Join(tmpDir, "fragment-"+strconv.FormatUint(rand.Uint64(), 36)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), p); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
