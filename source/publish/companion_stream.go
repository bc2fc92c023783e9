package publish

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/resourcesync-go/resourcesync/internal/web/docview"
	"github.com/resourcesync-go/resourcesync/rs"
)

// Companions built while the documents are written. Rendering a
// companion from its document means parsing the XML again, which costs
// several times writing it (issue 23). So when a run writes companions,
// encodeDoc hands every entry it encodes into a document file to a
// docview.Stream as well: the rows of each page are rendered once the page
// is full and spilled to a temporary file beside the document; the
// companion pass then writes the pages from the spill, without reading the
// document, if the file at the document's path is still the one encoded
// (the same file, by os.SameFile: not replaced or discarded since). Any
// other document (written by another run or by a writer that encodeDoc
// does not see as a document file) is rendered from its XML as before.
//
// The sha-256 of the encoded bytes keys the companion: page 1 ends with a
// comment holding the sha-256 of the document it shows, and a document
// rewritten with the same bytes keeps its pages untouched.

// docStream is the companion of one document being written.
type docStream struct {
	p     *publisher
	final string // the document's path
	tmp   *os.File
	s     *docview.Stream
	spill *os.File
	sha   hash.Hash
	err   error
	fi    os.FileInfo // the encoded file, once complete
	sum   string      // its sha-256, hex
}

// streaming maps an Out being published with companions to its run.
var streaming sync.Map // Out (as given) -> *publisher

// streamCompanions lets this run build companions while it writes its
// documents; the returned function ends that and removes what is left.
func (p *publisher) streamCompanions() func() {
	if p.cfg.NoCompanions {
		return func() {}
	}
	streaming.Store(p.cfg.Out, p)
	return func() {
		streaming.Delete(p.cfg.Out)
		p.streamMu.Lock()
		defer p.streamMu.Unlock()
		for _, ds := range p.streams {
			ds.remove()
		}
		p.streams = nil
	}
}

// startStream returns the companion stream of a document being encoded to
// w, or nil when w is not a document file of an Out publishing companions.
// A writer that is not a document file but writes a copy of one (a dump
// package's manifest.xml and its copy beside the package: name ends with
// .manifest.xml) gets a stream found by the sha-256 of its bytes only
// (copyStream), when one Out is publishing companions.
func startStream(w io.Writer, name string, h *rs.Head) *docStream {
	a, ok := w.(*atomicFile)
	var p *publisher
	n := 0
	streaming.Range(func(k, v any) bool {
		n++
		if out := k.(string); ok && strings.HasPrefix(a.final, filepath.Join(out)+string(filepath.Separator)) || !ok && n == 1 {
			p = v.(*publisher)
		}
		return true
	})
	if p == nil || !ok && (n > 1 || !strings.HasSuffix(name, ".manifest.xml")) {
		return nil
	}
	ds := &docStream{p: p, sha: sha256.New()}
	rel, dir := docRoot+"/"+name, p.file(docRoot)
	if ok {
		r, err := filepath.Rel(p.cfg.Out, a.final)
		if rel = filepath.ToSlash(r); err != nil || !isDocName(rel) {
			return nil
		}
		ds.final, ds.tmp, dir = a.final, a.f, filepath.Dir(a.final)
	}
	// Named after the document, so that the cleanup of a killed run
	// (which looks for .tmp-<name>-* beside the Source Description) finds it.
	spill, err := createTemp(dir, tmpPrefix+pathBase(rel)+"-companion-")
	if err != nil {
		return nil // rendered from the XML instead
	}
	ds.spill = spill
	ds.s = docview.NewStream(h, p.companionOptions(rel), spill)
	return ds
}

// writer is where the document's bytes go: w and the stream's hash.
func (ds *docStream) writer(w io.Writer) io.Writer {
	if ds == nil {
		return w
	}
	return io.MultiWriter(w, ds.sha)
}

func (ds *docStream) add(e *rs.Entry) error {
	if ds == nil {
		return nil
	}
	if ds.err == nil {
		ds.err = ds.s.Add(e)
	}
	return nil // the companion is then rendered from the XML
}

// done records the stream as the companion of the document's path,
// replacing an earlier one.
func (ds *docStream) done() {
	if ds == nil {
		return
	}
	var fi os.FileInfo
	var err error
	if ds.tmp != nil {
		fi, err = ds.tmp.Stat()
	}
	if ds.err != nil || err != nil {
		ds.abort()
		return
	}
	if err := ds.s.Close(); err != nil {
		ds.abort()
		return
	}
	ds.fi, ds.sum = fi, hex.EncodeToString(ds.sha.Sum(nil))
	p := ds.p
	p.streamMu.Lock()
	defer p.streamMu.Unlock()
	if p.streams == nil {
		p.streams = map[string]*docStream{}
	}
	key := ds.final
	if key == "" {
		key = ds.spill.Name() // a copy, found by its sha-256 only
	}
	if old := p.streams[key]; old != nil {
		old.remove()
	}
	p.streams[key] = ds
}

func (ds *docStream) abort() {
	if ds != nil {
		ds.remove()
	}
}

func (ds *docStream) remove() {
	ds.s.Discard() // its renderer writes to the spill
	ds.spill.Close()
	os.Remove(ds.spill.Name())
}

// findStream returns the stream built for the document at path if that
// file is still the one it was built from (fi: its current info).
func (p *publisher) findStream(path string, fi os.FileInfo) *docStream {
	p.streamMu.Lock()
	defer p.streamMu.Unlock()
	if ds := p.streams[path]; ds != nil && ds.fi != nil && os.SameFile(ds.fi, fi) {
		return ds
	}
	return nil
}

// linkedStream returns the stream built for a document of this run that
// is the file fi under another name (linkAtomic: a hard link, so the same
// bytes), or nil.
func (p *publisher) linkedStream(fi os.FileInfo) *docStream {
	p.streamMu.Lock()
	defer p.streamMu.Unlock()
	for _, ds := range p.streams {
		if ds.fi != nil && os.SameFile(ds.fi, fi) {
			return ds
		}
	}
	return nil
}

// copyStream returns a stream of this run whose document has the
// sha-256 sum and whose rows do not depend on where the document is: the
// pages of a byte copy of that document (resourcelist.xml, a copy of the
// current generation's) are made from it.
func (p *publisher) copyStream(sum string) *docStream {
	p.streamMu.Lock()
	defer p.streamMu.Unlock()
	for _, ds := range p.streams {
		if ds.sum == sum && ds.s.Portable() {
			return ds
		}
	}
	return nil
}

// digestMark starts the comment at the end of a companion's page 1 that
// holds the sha-256 of its document.
const digestMark = "\n<!-- resourcesync: document sha-256 "

func digestComment(sum string) string { return digestMark + sum + " -->\n" }

// pageDigest returns the document sha-256 recorded at the end of the
// companion page at path, "" if none.
func pageDigest(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	want := len(digestComment(strings.Repeat("0", 64)))
	fi, err := f.Stat()
	if err != nil || fi.Size() < int64(want) {
		return ""
	}
	b := make([]byte, want)
	if _, err := f.ReadAt(b, fi.Size()-int64(want)); err != nil {
		return ""
	}
	s, ok := strings.CutPrefix(string(b), digestMark)
	if !ok {
		return ""
	}
	return strings.TrimSuffix(s, " -->\n")
}

// fileDigest returns the sha-256 of the open file f, hex.
func fileDigest(f *os.File) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, 1<<62)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
