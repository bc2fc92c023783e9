package docview

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"

	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/rs"
)

// Stream builds the pages of a document from its head and entries while
// the document is written, so that a writer of documents (package
// source/publish) gets their pages without reading and parsing them back.
// The rows of each page are rendered as soon as the page is full and kept
// in spill, by a goroutine of the Stream while the caller goes on with the
// next page (memory holds two pages of rows); Pages writes the pages once
// the number of entries, which the pager of every page shows, is known.
// The pages are those RenderPages writes of the encoded document, given
// a head and entries that encode and decode to themselves (true of
// documents written by rs.Encoder from valid values).
type Stream struct {
	o      Options
	head   view
	v      *view
	spill  io.Writer
	off    int64
	pages  []streamPage
	n      int
	relink bool // a row's link was mapped by Options.Link
	closed bool
	// render receives full pages for the renderer goroutine (started by
	// the first flush), which sets err and closes rendered when done.
	render   chan *view
	rendered chan struct{}
	err      error
	// spare returns a rendered page's rows slice for the next page.
	spare chan []row
}

type streamPage struct {
	cols       view // the flags the rows set (columns, Change, Docs)
	rows       int
	start, end int64 // the rows' HTML in spill
}

// NewStream starts the pages of the document of head h; spill receives
// the rows' HTML and is read back by Pages. o.Page is ignored.
func NewStream(h *rs.Head, o Options, spill io.Writer) *Stream {
	o.defaults()
	hc := *h
	v := view{Self: cut(o.Self), Footer: o.Footer, head: &hc}
	o.headFacts(&v)
	s := &Stream{o: o, head: v, spill: spill, spare: make(chan []row, 1)}
	s.next()
	return s
}

func (s *Stream) next() {
	nv := s.head
	select {
	case nv.Rows = <-s.spare:
	default:
		nv.Rows = make([]row, 0, s.o.PageSize)
	}
	s.v = &nv
}

// Add adds the next entry.
func (s *Stream) Add(e *rs.Entry) error {
	if len(s.v.Rows) == s.o.PageSize {
		if err := s.flush(); err != nil {
			return err
		}
	}
	r := s.o.row(s.n+1, e)
	if r.Href != "" && r.Href != r.Loc {
		s.relink = true
	}
	for i := range r.Links {
		if l := &r.Links[i]; l.Href != "" && l.Href != l.Text {
			s.relink = true
		}
	}
	s.v.Rows = append(s.v.Rows, r)
	s.n++
	return nil
}

// Close renders the last page's rows into spill and waits until every
// page's rows are there; Add must not be called afterwards, and Pages and
// PagesAs may then be called concurrently.
func (s *Stream) Close() error {
	if s.closed {
		return s.err
	}
	if len(s.v.Rows) > 0 || s.render == nil {
		s.flush()
	}
	s.closed = true
	s.stop()
	return s.err
}

// Discard ends a Stream whose pages will not be written (the document was
// abandoned): the rows still being rendered are waited for, the current
// page's are dropped. Close and Discard may be called in any order.
func (s *Stream) Discard() {
	s.closed = true
	s.stop()
}

func (s *Stream) stop() {
	if s.render != nil {
		close(s.render)
		<-s.rendered
		s.render = nil
	}
}

// Portable reports whether the rows do not depend on Options.Link (no
// entry names a document that Link maps), so that PagesAs may render them
// as the pages of a copy of the document at another URL.
func (s *Stream) Portable() bool { return !s.relink }

// Entries returns the number of entries added.
func (s *Stream) Entries() int { return s.n }

// flush hands the current page to the renderer and starts the next. A
// rendering error is returned by Close.
func (s *Stream) flush() error {
	if s.render == nil {
		s.render, s.rendered = make(chan *view), make(chan struct{})
		go s.renderer(s.render)
	}
	s.render <- s.v
	s.next()
	return nil
}

// renderer renders the rows of each page it receives into spill, in
// order, and records the page; after an error it only drains.
func (s *Stream) renderer(pages <-chan *view) {
	defer close(s.rendered)
	for v := range pages {
		if s.err != nil {
			continue
		}
		s.o.columns(v)
		html := rowsHTML(v)
		n, err := io.WriteString(s.spill, string(html))
		if err != nil {
			s.err = fmt.Errorf("docview: %w", err)
			continue
		}
		p := streamPage{cols: *v, rows: len(v.Rows), start: s.off, end: s.off + int64(n)}
		p.cols.Rows, p.cols.RowsHTML = nil, ""
		s.off += int64(n)
		s.pages = append(s.pages, p)
		rows := v.Rows[:cap(v.Rows)]
		clear(rows)
		select {
		case s.spare <- rows[:0]:
		default:
		}
	}
}

// rowsMark stands for the rows in a rendered page: it cannot occur in
// one otherwise (html/template writes a NUL as U+FFFD).
const rowsMark = "\x00docview-rows\x00"

// Pages writes every page, as RenderPages does (open and done alike, but
// called one page at a time, in order), reading the rows from spill.
func (s *Stream) Pages(spill io.ReaderAt, open func(n int) (w io.Writer, done func(error) error, err error)) (Result, error) {
	return s.PagesAs(s.o, spill, open)
}

// PagesAs is Pages with other options (a copy of the document at another
// URL): the head, the breadcrumbs and the pager follow o, the rows are
// those already rendered (see Portable).
func (s *Stream) PagesAs(o Options, spill io.ReaderAt, open func(n int) (w io.Writer, done func(error) error, err error)) (Result, error) {
	if err := s.Close(); err != nil {
		return Result{}, err
	}
	o.defaults()
	o.PageSize = s.o.PageSize
	head := view{Self: cut(o.Self), Footer: o.Footer, head: s.head.head}
	o.headFacts(&head)
	// The breadcrumbs read the documents above this one, written after
	// it (leaves first): only now are they there.
	head.Crumbs = o.crumbs(s.head.head)
	pages := len(s.pages)
	res := Result{Kind: head.Kind, Entries: s.n, Pages: pages, Page: pages}
	for i := range s.pages {
		p := &s.pages[i]
		v := head
		c := &p.cols
		v.Change, v.HasMore, v.Docs = c.Change, c.HasMore, c.Docs
		v.ColCap, v.ColWhen, v.ColSize, v.ColHash, v.ColType = c.ColCap, c.ColWhen, c.ColSize, c.ColHash, c.ColType
		o.pager(&v, s.n, i+1, pages, i*o.PageSize, p.rows)
		if p.rows > 0 {
			v.Rows = make([]row, 1) // {{if .Rows}}: the table is shown
		}
		v.RowsHTML = template.HTML(rowsMark)
		var b bytes.Buffer
		if err := web.Render(&b, pageTpl, o.page(&v)); err != nil {
			return res, err
		}
		pre, post, ok := bytes.Cut(b.Bytes(), []byte(rowsMark))
		if !ok && p.rows > 0 {
			return res, errors.New("docview: no rows in the page template")
		}
		w, done, err := open(i + 1)
		if err != nil {
			return res, err
		}
		err = writePage(w, pre, post, ok, io.NewSectionReader(spill, p.start, p.end-p.start))
		if err := done(err); err != nil {
			return res, err
		}
	}
	return res, nil
}

func writePage(w io.Writer, pre, post []byte, rows bool, r io.Reader) error {
	if !rows {
		_, err := w.Write(pre)
		return err
	}
	if _, err := w.Write(pre); err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		return err
	}
	_, err := w.Write(post)
	return err
}
