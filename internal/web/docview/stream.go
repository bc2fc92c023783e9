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
// in spill (memory holds one page of rows); Pages writes the pages once
// the number of entries, which the pager of every page shows, is known.
// The pages are those RenderPages writes of the encoded document, given
// a head and entries that encode and decode to themselves (true of
// documents written by rs.Encoder from valid values).
type Stream struct {
	o     Options
	head  view
	v     *view
	spill io.Writer
	off   int64
	pages []streamPage
	n     int
}

type streamPage struct {
	v          view // without its rows
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
	s := &Stream{o: o, head: v, spill: spill}
	s.next()
	return s
}

func (s *Stream) next() {
	nv := s.head
	nv.Rows = make([]row, 0, s.o.PageSize)
	s.v = &nv
}

// Add adds the next entry.
func (s *Stream) Add(e *rs.Entry) error {
	if len(s.v.Rows) == s.o.PageSize {
		if err := s.flush(); err != nil {
			return err
		}
	}
	s.v.Rows = append(s.v.Rows, s.o.row(s.n+1, e))
	s.n++
	return nil
}

// Entries returns the number of entries added.
func (s *Stream) Entries() int { return s.n }

// flush renders the rows of the current page into spill.
func (s *Stream) flush() error {
	v := s.v
	s.o.columns(v)
	html := rowsHTML(v)
	n, err := io.WriteString(s.spill, string(html))
	if err != nil {
		return fmt.Errorf("docview: %w", err)
	}
	p := streamPage{v: *v, rows: len(v.Rows), start: s.off, end: s.off + int64(n)}
	p.v.Rows, p.v.RowsHTML = nil, ""
	s.off += int64(n)
	s.pages = append(s.pages, p)
	s.next()
	return nil
}

// rowsMark stands for the rows in a rendered page: it cannot occur in
// one otherwise (html/template writes a NUL as U+FFFD).
const rowsMark = "\x00docview-rows\x00"

// Pages writes every page, as RenderPages does (open and done alike, but
// called one page at a time, in order), reading the rows from spill.
// The Stream must not be used afterwards.
func (s *Stream) Pages(spill io.ReaderAt, open func(n int) (w io.Writer, done func(error) error, err error)) (Result, error) {
	if len(s.v.Rows) > 0 || len(s.pages) == 0 {
		if err := s.flush(); err != nil {
			return Result{}, err
		}
	}
	// The breadcrumbs read the documents above this one, written after
	// it (leaves first): only now are they there.
	crumbs := s.o.crumbs(s.head.head)
	pages := len(s.pages)
	res := Result{Kind: s.head.Kind, Entries: s.n, Pages: pages, Page: pages}
	for i := range s.pages {
		p := &s.pages[i]
		v := p.v
		v.Crumbs = crumbs
		s.o.pager(&v, s.n, i+1, pages, i*s.o.PageSize, p.rows)
		if p.rows > 0 {
			v.Rows = make([]row, 1) // {{if .Rows}}: the table is shown
		}
		v.RowsHTML = template.HTML(rowsMark)
		var b bytes.Buffer
		if err := web.Render(&b, pageTpl, s.o.page(&v)); err != nil {
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
