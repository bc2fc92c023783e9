package rs

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// DefaultMaxBytes is the size limit a Splitter applies to each document
// when SplitConfig.MaxBytes is zero: a little under MaxDocumentBytes.
const DefaultMaxBytes = MaxDocumentBytes - 64<<10

// ErrEntryTooLarge is matched by the error Splitter.Add returns for an entry
// that does not fit in a document of SplitConfig.MaxBytes even alone.
var ErrEntryTooLarge = errors.New("entry too large for one document")

// ErrTooManyParts is matched by the error Splitter.Add returns when a new
// part would make the index hold more than MaxEntries documents.
var ErrTooManyParts = errors.New("too many parts for one index")

// SplitConfig configures a Splitter.
type SplitConfig struct {
	// Head is the head of the whole document: capability, at/completed or
	// from/until, root links such as up. Head.Root must be URLSet.
	Head Head

	// URL is where the document is published: the single list when the
	// entries fit in one document, else the index.
	URL string

	// PartURL returns the URL of part n (1-based) when the entries are
	// split. If nil, part n of ".../name.xml" is ".../name-n.xml" (of a URL
	// not ending in ".xml", URL+"-n").
	PartURL func(n int) string

	// Create opens the destination of the document published at url. The
	// Splitter writes the document and then closes it, also on error.
	// It is called only when a document is complete, so a part's
	// destination is never left half-written by the Splitter itself.
	Create func(url string) (io.WriteCloser, error)

	// MaxEntries is the largest number of entries per document; zero means
	// MaxEntries (50,000).
	MaxEntries int

	// MaxBytes is the largest size in bytes of each document; zero means
	// DefaultMaxBytes.
	MaxBytes int64

	// TempDir is where a part being built is spooled once it outgrows a
	// few MiB of memory; "" means os.TempDir().
	TempDir string
}

// Result describes what a Splitter wrote.
type Result struct {
	// URLs lists every document written, in the order written: the parts
	// (or the single document), then the index.
	URLs []string
	// Indexed reports whether the entries were split over several parts
	// and an index (a sitemapindex) was written at SplitConfig.URL.
	Indexed bool
	// Parts is the number of urlset documents written: 1 when the entries
	// fit in one document, zero entries included.
	Parts int
	// Entries is the number of entries written.
	Entries int64
}

// A Splitter streams entries into as many documents as needed so that none
// holds more than MaxEntries entries or MaxBytes bytes, and writes the
// index when more than one is needed (RS-GEN-8).
//
// With one part, the document is written at URL with exactly the given
// head. With several, part n is written at PartURL(n); each part's head has
// the capability and the root links of the whole head (a rel="index" link
// among them replaced) plus a link rel="index" to URL. Parts of a snapshot
// capability (resourcelist, resourcedump, resourcedump-manifest) carry the
// whole head's at and completed. Parts of a change capability (changelist,
// changedump, …) carry their own interval: part 1 from is Head.MD.From,
// the until of part k and the from of part k+1 are both the EventTime of
// the first entry of part k+1 (so the intervals abut, RS-DEST-3), and the
// last part's until is Head.MD.Until (absent when the list is open). If
// that first entry has no EventTime, the latest EventTime seen before it
// is used. Other capabilities keep the whole head's rs:md in every part.
//
// The index, written at URL by Close, is a sitemapindex with the whole
// head's rs:md and root links, and one <sitemap> per part whose rs:md has
// at/completed (snapshot capabilities) or from/until (change capabilities,
// until omitted for the last part of an open list).
//
// Entries are not reordered or checked: for change capabilities they
// should be in forward chronological order. A part's head can only be
// written when the part is complete, so its encoded entries are held in
// memory up to a few MiB, then in a temporary file; memory use does not
// depend on the number of entries. A Splitter is not safe for concurrent
// use.
type Splitter struct {
	cfg        SplitConfig
	partLinks  []Link // root links of a part when split
	maxEntries int
	maxBytes   int64
	reserve    int64 // bytes a part needs besides its entries

	enc     *Encoder // appends entries to scratch; never writes
	out     *Encoder // writes documents
	scratch []byte
	sp      spool

	count    int  // entries in the current part
	partFrom Time // from of the current part
	last     Time // latest non-zero EventTime seen
	parts    []partInterval
	res      Result
	err      error // sticky
	closed   bool
}

type partInterval struct{ from, until Time }

// maxTimeAttr is the longest ` until="…"` attribute: the name, quotes and
// a datetime with nine fractional digits and an offset.
const maxTimeAttr = len(` until=""`) + len("2006-01-02T15:04:05.999999999+07:00")

// NewSplitter checks cfg and returns a Splitter. It writes nothing yet. The
// error matches ErrInvalidXMLChar if the head cannot be written as XML.
func NewSplitter(cfg SplitConfig) (*Splitter, error) {
	switch {
	case cfg.URL == "":
		return nil, errors.New("rs: NewSplitter: empty URL")
	case cfg.Create == nil:
		return nil, errors.New("rs: NewSplitter: nil Create")
	case cfg.Head.Root != URLSet:
		return nil, errors.New("rs: NewSplitter: the head must be a urlset head")
	case cfg.MaxEntries < 0 || cfg.MaxBytes < 0:
		return nil, errors.New("rs: NewSplitter: negative limit")
	}
	if cfg.PartURL == nil {
		cfg.PartURL = defaultPartURL(cfg.URL)
	}
	s := &Splitter{
		cfg:        cfg,
		maxEntries: cfg.MaxEntries,
		maxBytes:   cfg.MaxBytes,
		sp:         spool{dir: cfg.TempDir, limit: defaultSpoolMemory},
	}
	if s.maxEntries == 0 {
		s.maxEntries = MaxEntries
	}
	if s.maxBytes == 0 {
		s.maxBytes = DefaultMaxBytes
	}
	s.cfg.Head.Links = slices.Clone(cfg.Head.Links)
	s.cfg.Head.MD.Extra = slices.Clone(cfg.Head.MD.Extra)
	for _, l := range s.cfg.Head.Links {
		if l.Rel != RelIndex {
			s.partLinks = append(s.partLinks, l)
		}
	}
	s.partLinks = append(s.partLinks, Link{Rel: RelIndex, Href: cfg.URL})

	// Entries are encoded once, into the spool, before it is known whether
	// their document is a part or the single document: both declare the
	// part head's extension namespaces first, so prefixes agree.
	split := s.partHead(Time{}, Time{}, true)
	s.enc = NewEncoder(io.Discard)
	if err := s.enc.WriteHead(&split); err != nil {
		return nil, fmt.Errorf("rs: NewSplitter: %w", err)
	}
	s.out = NewEncoder(nil)
	s.out.preNS = s.enc.rootNS
	if err := s.out.WriteHead(&s.cfg.Head); err != nil {
		return nil, fmt.Errorf("rs: NewSplitter: %w", err)
	}
	// Bytes a part needs besides its entries: the larger head, the end
	// tag, and for change capabilities the longest from and until.
	s.reserve = max(s.enc.Written(), s.out.Written()) + int64(len(appendEndRoot(nil, URLSet)))
	if cfg.Head.MD.Capability.IsChange() {
		s.reserve += 2 * int64(maxTimeAttr)
	}
	s.enc.buf = nil
	s.partFrom = cfg.Head.MD.From
	s.last = cfg.Head.MD.From
	return s, nil
}

func defaultPartURL(u string) func(int) string {
	base, ext := u, ""
	if strings.HasSuffix(u, ".xml") {
		base, ext = u[:len(u)-4], ".xml"
	}
	return func(n int) string { return base + "-" + strconv.Itoa(n) + ext }
}

// partHead returns the head of a part with interval from..until (used for
// change capabilities only); split tells whether the part is one of several.
func (s *Splitter) partHead(from, until Time, split bool) Head {
	h := s.cfg.Head
	if !split {
		return h
	}
	h.Links = s.partLinks
	if h.MD.Capability.IsChange() {
		h.MD.From, h.MD.Until = from, until
	}
	return h
}

// Add appends an entry to the current part, first completing that part
// (and writing it at its PartURL) if the entry would take it beyond
// MaxEntries or MaxBytes. An entry that cannot be written as XML
// (ErrInvalidXMLChar) or that is larger than MaxBytes alone
// (ErrEntryTooLarge) is refused and the Splitter stays usable; any other
// error is final and is returned again by later calls and by Close.
func (s *Splitter) Add(e *Entry) error {
	if s.err != nil {
		return s.err
	}
	if s.closed {
		return fmt.Errorf("rs: Splitter.Add after Close: %w", ErrEncoderState)
	}
	b, err := s.enc.appendEntry(s.scratch[:0], e)
	s.scratch = b
	if err != nil {
		return fmt.Errorf("rs: Splitter.Add %q: %w", e.Loc, err)
	}
	size := int64(len(b))
	if s.reserve+size > s.maxBytes {
		return fmt.Errorf("rs: Splitter.Add %q: %w: %d bytes, with the head %d > %d",
			e.Loc, ErrEntryTooLarge, size, s.reserve+size, s.maxBytes)
	}
	et := e.EventTime()
	if s.count > 0 && (s.count >= s.maxEntries || s.reserve+s.sp.Len()+size > s.maxBytes) {
		if len(s.parts)+2 > MaxEntries {
			s.err = fmt.Errorf("rs: Splitter.Add: %w: more than %d", ErrTooManyParts, MaxEntries)
			return s.err
		}
		boundary := et
		if boundary.IsZero() {
			boundary = s.last
		}
		if err := s.finishPart(boundary, true); err != nil {
			s.err = err
			return err
		}
		s.partFrom = boundary
	}
	if _, err := s.sp.Write(b); err != nil {
		s.err = fmt.Errorf("rs: Splitter.Add: %w", err)
		return s.err
	}
	if !et.IsZero() {
		s.last = et
	}
	s.count++
	s.res.Entries++
	return nil
}

// finishPart writes the current part with the given until and starts a
// new, empty one.
func (s *Splitter) finishPart(until Time, split bool) error {
	n := len(s.parts) + 1
	url := s.cfg.URL
	if split {
		url = s.cfg.PartURL(n)
	}
	h := s.partHead(s.partFrom, until, split)
	if err := s.writeDoc(url, &h, s.sp.WriteTo); err != nil {
		return err
	}
	s.parts = append(s.parts, partInterval{from: s.partFrom, until: until})
	s.res.URLs = append(s.res.URLs, url)
	s.res.Parts++
	s.count = 0
	if err := s.sp.reset(); err != nil {
		return fmt.Errorf("rs: Splitter: %w", err)
	}
	return nil
}

// writeDoc writes a document at url: head h, then what body writes, then
// the end tag.
func (s *Splitter) writeDoc(url string, h *Head, body func(io.Writer) (int64, error)) (err error) {
	w, err := s.cfg.Create(url)
	if err != nil {
		return fmt.Errorf("rs: Splitter: create %s: %w", url, err)
	}
	defer func() {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("rs: Splitter: close %s: %w", url, cerr)
		}
	}()
	enc := s.out
	enc.reset(w)
	if err := enc.WriteHead(h); err != nil {
		return fmt.Errorf("rs: Splitter: %s: %w", url, err)
	}
	if err := enc.flush(); err != nil {
		return fmt.Errorf("rs: Splitter: %s: %w", url, err)
	}
	if body != nil {
		if _, err := body(w); err != nil {
			return fmt.Errorf("rs: Splitter: write %s: %w", url, err)
		}
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("rs: Splitter: %s: %w", url, err)
	}
	return nil
}

// Close writes the last part and, when there are several parts, the index
// at URL; it removes the spool's temporary file. With no entries at all it
// writes an empty document at URL (valid ResourceSync, though sitemap.xsd
// rejects it, RS-GEN-11). After the first call, Close returns the same
// Result and error again.
func (s *Splitter) Close() (Result, error) {
	if s.closed {
		return s.res, s.err
	}
	s.closed = true
	defer func() {
		if err := s.sp.close(); err != nil && s.err == nil {
			s.err = fmt.Errorf("rs: Splitter: %w", err)
		}
	}()
	if s.err != nil {
		return s.res, s.err
	}
	split := len(s.parts) > 0
	if err := s.finishPart(s.cfg.Head.MD.Until, split); err != nil {
		s.err = err
		return s.res, err
	}
	if split {
		if err := s.writeIndex(); err != nil {
			s.err = err
			return s.res, err
		}
		s.res.URLs = append(s.res.URLs, s.cfg.URL)
		s.res.Indexed = true
	}
	return s.res, nil
}

func (s *Splitter) writeIndex() error {
	h := s.cfg.Head
	h.Root = SitemapIndex
	capab := h.MD.Capability
	return s.writeDoc(s.cfg.URL, &h, func(w io.Writer) (int64, error) {
		enc := NewEncoder(w)
		enc.root = SitemapIndex
		enc.state = stateBody
		enc.rootNS = s.out.rootNS
		var e Entry
		for i, p := range s.parts {
			e = Entry{Loc: s.res.URLs[i]}
			switch {
			case capab.IsSnapshot():
				e.MD.At, e.MD.Completed = h.MD.At, h.MD.Completed
			case capab.IsChange():
				e.MD.From, e.MD.Until = p.from, p.until
			}
			if err := enc.WriteEntry(&e); err != nil {
				return enc.Written(), err
			}
		}
		return enc.Written(), enc.flush()
	})
}
