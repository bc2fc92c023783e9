package publish

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/internal/web/docview"
)

// HTML companions. Beside every XML document of the tree, Publish keeps a
// readable HTML page of it (package docview) for static hosting, where no
// server can negotiate: NAME.xml gets NAME.html (the Source Description
// .well-known/resourcesync gets .well-known/resourcesync.html), and a
// document of more than docview.DefaultPageSize entries gets one page per
// thousand entries, NAME.html, NAME.2.html, NAME.3.html, … Links between
// documents of the Source lead to their companions (relative links, so the
// tree can be browsed from any host or from disk); resources keep their
// URLs.
//
// Companions are derived from the documents alone and written after them,
// at the end of a run, by one pass over the tree. The pages of a document
// this run wrote are built while it was written (companion_stream.go: no
// parse); others are rendered from the XML. A companion is rewritten
// when its document's bytes changed: page 1 ends with a comment holding
// the sha-256 of the document it shows, and it is stamped with the
// document's modification time, so a document untouched since (same
// time) costs a stat, and one rewritten with the same bytes (the
// Capability List, the Source Description, on every run) keeps its pages
// as they are. Pages are written atomically, the first last; pages past
// the new last one and companions whose document is gone are removed. A
// run killed in between leaves a stale first page, which the next run
// rewrites. No document names a companion, so the Resource Lists,
// Capability Lists and the validation of the tree never see them, and the
// documents' bytes do not depend on them.

const companionExt = ".html"

// pageSyncs bounds the pages of one companion being flushed and fsynced
// at once (each holds a write buffer; see writePages).
const pageSyncs = 8

// companionName is the companion of the document at rel, page n.
func companionName(rel string, n int) string {
	base := strings.TrimSuffix(rel, ".xml")
	if n > 1 {
		base += "." + strconv.Itoa(n)
	}
	return base + companionExt
}

// isDocName reports whether rel (slash-separated, relative to Out) is a
// document that gets a companion.
func isDocName(rel string) bool {
	return rel == wellKnownPath || strings.HasPrefix(rel, docRoot+"/") && strings.HasSuffix(rel, ".xml")
}

// companionOf returns the documents a companion file name may belong to
// (its first page, or a later page), in the directory of the companion.
func companionOf(name string) []string {
	base, ok := strings.CutSuffix(name, companionExt)
	if !ok {
		return nil
	}
	out := []string{base + ".xml"}
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		if n, err := strconv.Atoi(base[i+1:]); err == nil && n > 1 {
			out = append(out, base[:i]+".xml")
		}
	}
	return out
}

// keptCompanion reports whether name is a companion of a document in keep.
func keptCompanion(name string, keep map[string]bool) bool {
	for _, d := range companionOf(name) {
		if keep[d] {
			return true
		}
	}
	return false
}

// companions brings every companion under Out up to date (see above).
func (p *publisher) companions() error {
	if p.cfg.NoCompanions {
		return nil
	}
	var docs, pages []string
	collect := func(root string) error {
		err := filepath.WalkDir(p.file(root), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() || strings.HasPrefix(d.Name(), tmpPrefix) {
				return nil
			}
			rel, err := filepath.Rel(p.cfg.Out, path)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			switch {
			case isDocName(rel):
				docs = append(docs, rel)
			case strings.HasSuffix(rel, companionExt):
				pages = append(pages, rel)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("publish: companions: %w", err)
		}
		return nil
	}
	if err := collect(docRoot); err != nil {
		return err
	}
	if exists(p.file(wellKnownPath)) {
		docs = append(docs, wellKnownPath)
	}
	if exists(p.file(companionName(wellKnownPath, 1))) {
		pages = append(pages, companionName(wellKnownPath, 1))
	}
	// Documents are independent: render them on every core.
	dirs := map[string]bool{}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		next     atomic.Int64
	)
	for range min(runtime.GOMAXPROCS(0), len(docs)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(docs) {
					return
				}
				rel := docs[i]
				n, err := p.companion(rel)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if n >= 0 {
					dirs[filepath.Dir(p.file(rel))] = true
				}
				mu.Unlock()
				if err != nil {
					return
				}
				// Pages past the new last one.
				for k := n + 1; n >= 0; k++ {
					if err := os.Remove(p.file(companionName(rel, k))); err != nil {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	// Companions whose document is gone (a removed part or generation).
	for _, rel := range pages {
		dir := filepath.Dir(rel)
		keep := false
		for _, d := range companionOf(filepath.Base(rel)) {
			if exists(p.file(filepath.ToSlash(filepath.Join(dir, d)))) || (rel == companionName(wellKnownPath, 1) && exists(p.file(wellKnownPath))) {
				keep = true
			}
		}
		if !keep {
			if err := os.Remove(p.file(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("publish: companions: %w", err)
			}
		}
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// companion rewrites the companion of the document at rel if it is not
// up to date; it returns the number of pages written, or -1 if none were.
func (p *publisher) companion(rel string) (int, error) {
	docPath := p.file(rel)
	f, err := os.Open(docPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return -1, nil
		}
		return -1, fmt.Errorf("publish: companion: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return -1, fmt.Errorf("publish: companion: %w", err)
	}
	mod := fi.ModTime()
	page1 := p.file(companionName(rel, 1))
	ci, cerr := os.Stat(page1)
	if cerr == nil && ci.ModTime().Equal(mod) && ci.Size() > 0 {
		return -1, nil // neither was touched since page 1 was written
	}
	ds := p.findStream(docPath, fi)
	// Keyed by the document's bytes: one rewritten unchanged keeps its
	// pages as they are.
	sum := ""
	if ds != nil {
		sum = ds.sum
	} else if ls := p.linkedStream(fi); ls != nil {
		sum = ls.sum // a hard link of it (the current Resource List of its generation): the same bytes
	} else if sum, err = fileDigest(f); err != nil {
		return -1, fmt.Errorf("publish: companion: %w", err)
	}
	if cerr == nil && pageDigest(page1) == sum {
		return -1, nil
	}
	o := p.companionOptions(rel)
	if ds == nil {
		ds = p.copyStream(sum)
	}
	if ds != nil {
		return p.writePages(rel, mod, sum, func(open func(n int) (io.Writer, func(error) error, error)) (docview.Result, error) {
			return ds.s.PagesAs(o, ds.spill, open)
		})
	}
	total, _ := docview.Count(f) // an error shows on the page
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return -1, fmt.Errorf("publish: companion: %w", err)
	}
	return p.writePages(rel, mod, sum, func(open func(n int) (io.Writer, func(error) error, error)) (docview.Result, error) {
		return docview.RenderPages(f, total, o, open)
	})
}

// companionOptions are the docview options of the companion of the
// document at rel.
func (p *publisher) companionOptions(rel string) docview.Options {
	dir := pathDir(rel)
	return docview.Options{
		Self:    p.url(rel),
		Link:    func(href string) string { return p.companionLink(dir, href) },
		PageURL: func(n int) string { return pathBase(companionName(rel, n)) },
		Open: func(href string) (io.ReadCloser, error) {
			r, ok := strings.CutPrefix(href, p.cfg.BaseURL)
			if !ok || !isDocName(r) {
				return nil, fs.ErrNotExist
			}
			return os.Open(p.file(r))
		},
		Footer: []web.Link{{Href: pathBase(rel), Text: "the XML document"}},
	}
}

// writePages writes the pages of the companion of the document at rel
// with render, each atomically, page 1 last, stamped with the document's
// modification time mod and ending with its sha-256 sum.
func (p *publisher) writePages(rel string, mod time.Time, sum string, render func(open func(n int) (io.Writer, func(error) error, error)) (docview.Result, error)) (int, error) {
	// Pages are rendered concurrently; the first is kept back and
	// committed last (first is set by the worker that renders page 1 and
	// read once RenderPages has waited for every worker).
	var first *atomicFile
	defer func() {
		if first != nil {
			first.abort()
		}
	}()
	// The other pages are flushed, fsynced and renamed into place by
	// goroutines while the next page renders: their fsyncs overlap (one
	// journal commit serves several) instead of queuing one after another,
	// and page 1 is committed only once every other page is in place.
	var (
		wg      sync.WaitGroup
		errMu   sync.Mutex
		pageErr error
		sem     = make(chan struct{}, pageSyncs)
	)
	failed := func() error {
		errMu.Lock()
		defer errMu.Unlock()
		return pageErr
	}
	res, err := render(func(n int) (io.Writer, func(error) error, error) {
		if err := failed(); err != nil {
			return nil, nil, err
		}
		a, err := createAtomic(p.file(companionName(rel, n)), false)
		if err != nil {
			return nil, nil, err
		}
		return a, func(err error) error {
			if err == nil && n == 1 {
				_, err = io.WriteString(a, digestComment(sum))
			}
			if err != nil {
				a.abort()
				return err
			}
			if n == 1 {
				first = a
				return nil
			}
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				err := a.finish()
				if err == nil {
					if err = os.Rename(a.f.Name(), a.final); err != nil {
						err = fmt.Errorf("publish: %w", err)
					}
				}
				if err != nil {
					a.abort()
					errMu.Lock()
					if pageErr == nil {
						pageErr = err
					}
					errMu.Unlock()
				}
			})
			return nil
		}, nil
	})
	wg.Wait()
	if err == nil {
		err = failed()
	}
	if err != nil || first == nil {
		return -1, err
	}
	// The first page last, stamped with the document's time.
	a := first
	first = nil
	if err := a.finish(); err != nil {
		a.abort()
		return -1, err
	}
	if err := os.Chtimes(a.f.Name(), time.Time{}, mod); err != nil {
		a.abort()
		return -1, fmt.Errorf("publish: %w", err)
	}
	if err := os.Rename(a.f.Name(), a.final); err != nil {
		a.abort()
		return -1, fmt.Errorf("publish: %w", err)
	}
	return res.Pages, nil
}

// companionLink maps an absolute URL in the document at dir to the
// relative href of its companion when it names a document of this
// Source; other URLs are kept.
func (p *publisher) companionLink(dir, href string) string {
	rel, ok := strings.CutPrefix(href, p.cfg.BaseURL)
	if !ok || !isDocName(rel) {
		return href
	}
	return relPath(dir, companionName(rel, 1))
}

func pathDir(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

func pathBase(rel string) string { return rel[strings.LastIndexByte(rel, '/')+1:] }

// relPath is the relative URL reference of the slash path to, from a page
// in the slash directory from ("" is Out).
func relPath(from, to string) string {
	var fp []string
	if from != "" {
		fp = strings.Split(from, "/")
	}
	tp := strings.Split(to, "/")
	i := 0
	for i < len(fp) && i < len(tp)-1 && fp[i] == tp[i] {
		i++
	}
	r := strings.Repeat("../", len(fp)-i) + strings.Join(tp[i:], "/")
	if strings.Contains(strings.SplitN(r, "/", 2)[0], ":") {
		r = "./" + r // a first segment with a colon would read as a scheme
	}
	return r
}
