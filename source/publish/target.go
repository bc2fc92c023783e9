package publish

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/resourcesync-go/resourcesync/storage"
)

// UploadStats counts what Upload did.
type UploadStats struct {
	// Written objects (new or rewritten documents), Unchanged ones left
	// as they were, Removed ones (documents Upload wrote before that the
	// tree no longer holds).
	Written, Unchanged, Removed int
	// NotOurs are keys Upload left alone because the object there is not
	// the one it wrote (someone else's, or changed since).
	NotOurs int
}

// uploaded is one line of Upload's record: what it wrote under Key, from
// a file of Size bytes modified at Mtime (Unix nanoseconds), answered
// with Version.
type uploaded struct {
	Key     string `json:"k"`
	Size    int64  `json:"s"`
	Mtime   int64  `json:"m"`
	Version string `json:"v"`
}

// ContentType is the media type of the document at rel (a path relative
// to Out) that a web server or object store must answer it with:
// application/xml for the sitemaps and the Source Description, text/html
// for the pages, application/zip for dump packages, text/plain for
// robots.txt; application/octet-stream for anything else.
func ContentType(rel string) string {
	if rel == wellKnownPath {
		return "application/xml"
	}
	if path.Base(rel) == robotsPath {
		return "text/plain; charset=utf-8"
	}
	switch path.Ext(rel) {
	case ".xml":
		return "application/xml"
	case ".html":
		return "text/html; charset=utf-8"
	case ".zip":
		return zipType
	}
	return "application/octet-stream"
}

// Upload copies the tree Publish wrote into dir to the Target tg (a
// bucket a CDN serves), so that the Target becomes the static Source.
// record is a file that remembers, between runs, which objects Upload
// wrote (key, the file's size and mtime, the object's Version): a file
// unchanged since is not sent again, a rewritten one overwrites its
// object (if it is still the one Upload wrote: IfVersion), a new one is
// written only where no object is (NoReplace), and an object Upload wrote
// whose file is gone is removed (again only that version). An object
// Upload did not write is never overwritten or removed (NotOurs).
//
// The documents are written before the Source Description and robots.txt,
// and removals come last, so that a reader of the Target finds every
// document the Source Description leads to as soon as it is updated. A
// run killed midway leaves every object whole (a Writer commits or
// leaves the key as it was); the record, written atomically at the end
// (and before an error is returned), makes the next run send again what
// it did not record.
func Upload(ctx context.Context, dir string, tg storage.Target, record string, log *slog.Logger) (UploadStats, error) {
	var st UploadStats
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rec, err := readUploadRecord(record)
	if err != nil {
		return st, err
	}
	type file struct {
		rel string
		fi  fs.FileInfo
	}
	var files []file
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), tmpPrefix) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, file{filepath.ToSlash(rel), fi})
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return st, fmt.Errorf("publish: upload: %w", err)
	}
	// In the order Publish wrote them (a Resource List's parts before its
	// index, the lists before the Capability List): a document is sent
	// after those it names, as Publish renames them into place. The
	// Source Description and robots.txt go last. The paths are a few
	// per Change List and Resource List part, not per resource.
	last := func(rel string) bool { return !strings.HasPrefix(rel, docRoot+"/") }
	slices.SortStableFunc(files, func(a, b file) int {
		if la, lb := last(a.rel), last(b.rel); la != lb {
			if la {
				return 1
			}
			return -1
		}
		if c := a.fi.ModTime().Compare(b.fi.ModTime()); c != 0 {
			return c
		}
		return strings.Compare(a.rel, b.rel)
	})
	seen := make(map[string]bool, len(files))
	save := func() error { return writeUploadRecord(record, rec) }
	for _, f := range files {
		rel, fi := f.rel, f.fi // as walked: unchanged if the record says so
		seen[rel] = true
		if err := ctx.Err(); err != nil {
			save()
			return st, err
		}
		old, had := rec[rel]
		if had && old.Size == fi.Size() && old.Mtime == fi.ModTime().UnixNano() {
			st.Unchanged++
			continue
		}
		info, sent, err := uploadFile(ctx, tg, filepath.Join(dir, filepath.FromSlash(rel)), rel, old.Version, had)
		if errors.Is(err, storage.ErrExists) {
			log.Warn("publish: an object not written by publish is in the way; left alone", "key", rel, "target", tg.Location())
			delete(rec, rel)
			st.NotOurs++
			continue
		}
		if err != nil {
			save()
			return st, err
		}
		rec[rel] = uploaded{Key: rel, Size: sent.Size(), Mtime: sent.ModTime().UnixNano(), Version: info.Version}
		st.Written++
	}
	var gone []string
	for k := range rec {
		if !seen[k] {
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	for _, k := range gone {
		var err error
		if rec[k].Version == "" {
			// No Version to tell the object is still the one Upload
			// wrote (a record not Upload's): left alone.
			err = storage.ErrExists
		} else {
			err = tg.Remove(ctx, k, rec[k].Version)
		}
		if errors.Is(err, storage.ErrExists) {
			log.Warn("publish: an object publish wrote was changed by someone else; not removed", "key", k, "target", tg.Location())
			st.NotOurs++
		} else if err != nil {
			save()
			return st, fmt.Errorf("publish: upload: remove %s: %w", k, err)
		} else {
			st.Removed++
		}
		delete(rec, k)
	}
	return st, save()
}

// uploadFile writes the file at p under key: over the object Upload wrote
// (version) when had, else only where there is none. The size and mtime
// are the open file's, so that what is recorded is what was sent.
func uploadFile(ctx context.Context, tg storage.Target, p, key, version string, had bool) (storage.Info, fs.FileInfo, error) {
	f, err := os.Open(p)
	if err != nil {
		return storage.Info{}, nil, fmt.Errorf("publish: upload: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return storage.Info{}, nil, fmt.Errorf("publish: upload: %w", err)
	}
	opt := storage.PutOptions{Size: fi.Size(), ModTime: fi.ModTime(), ContentType: ContentType(key)}
	if had && version != "" {
		opt.IfVersion = version
	} else {
		// Nothing recorded, or no Version to prove the object is ours.
		opt.NoReplace = true
	}
	w, err := tg.Create(ctx, key, opt)
	if err != nil {
		return storage.Info{}, nil, fmt.Errorf("publish: upload %s: %w", key, err)
	}
	if _, err := io.Copy(w, f); err != nil {
		w.Abort()
		return storage.Info{}, nil, fmt.Errorf("publish: upload %s: %w", key, err)
	}
	info, err := w.Commit(ctx)
	if err != nil {
		return storage.Info{}, nil, fmt.Errorf("publish: upload %s: %w", key, err)
	}
	return info, fi, nil
}

func readUploadRecord(p string) (map[string]uploaded, error) {
	rec := map[string]uploaded{}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return rec, nil
	}
	if err != nil {
		return nil, fmt.Errorf("publish: upload record: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var u uploaded
		if err := json.Unmarshal(sc.Bytes(), &u); err != nil || u.Key == "" {
			return nil, fmt.Errorf("publish: upload record %s: a line does not parse", p)
		}
		rec[u.Key] = u
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("publish: upload record: %w", err)
	}
	return rec, nil
}

func writeUploadRecord(p string, rec map[string]uploaded) error {
	keys := make([]string, 0, len(rec))
	for k := range rec {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return writeAtomic(p, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		for _, k := range keys {
			if err := enc.Encode(rec[k]); err != nil {
				return err
			}
		}
		return nil
	})
}
