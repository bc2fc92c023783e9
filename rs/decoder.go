package rs

import (
	"errors"
	"io"
	"iter"
)

// Limits bound what a Decoder accepts. A zero field takes the default.
type Limits struct {
	MaxDepth         int   // element nesting; default 64
	MaxAttrs         int   // attributes (namespace declarations included) per element; default 64
	MaxTokenBytes    int   // longest name, attribute value, text node, comment or PI; default 1 MiB
	MaxDocumentBytes int64 // whole document; default 1 GiB; negative for no limit
}

// DefaultLimits are the limits used where a field of Limits is zero.
var DefaultLimits = Limits{
	MaxDepth:         64,
	MaxAttrs:         64,
	MaxTokenBytes:    1 << 20,
	MaxDocumentBytes: 1 << 30,
}

func (l Limits) withDefaults() Limits {
	if l.MaxDepth == 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	if l.MaxAttrs == 0 {
		l.MaxAttrs = DefaultLimits.MaxAttrs
	}
	if l.MaxTokenBytes == 0 {
		l.MaxTokenBytes = DefaultLimits.MaxTokenBytes
	}
	if l.MaxDocumentBytes == 0 {
		l.MaxDocumentBytes = DefaultLimits.MaxDocumentBytes
	}
	return l
}

// maxPending caps the diagnostics a Decoder holds between two calls of
// TakeDiagnostics, so that a hostile document cannot grow memory with them.
const maxPending = 1000

var errNotImplemented = errors.New("rs: decoder not implemented yet")

// Decoder reads a ResourceSync document from an io.Reader: first the Head,
// then the entries one at a time. Memory does not depend on the number of
// entries. It is not safe for concurrent use.
type Decoder struct {
	// Limits may be set before the first call of Head or Next.
	Limits Limits

	r        io.Reader
	head     Head
	legacy   string
	late     bool
	pending  []Diagnostic
	dropped  int
	pos      Pos
	headPos  Pos
	err      error
	started  bool
	finished bool
}

// NewDecoder returns a Decoder reading from r. It buffers its own reads.
func NewDecoder(r io.Reader) *Decoder { return &Decoder{r: r} }

// Head reads up to the first item (or the end of the root element) and
// returns the document's head. Root rs:md or rs:ln elements that appear
// after the first item (RS-GEN-10) are merged into the same Head when Next
// reaches them, with a diagnostic; LateHead then reports true.
func (d *Decoder) Head() (*Head, error) {
	return nil, errNotImplemented
}

// Next returns the next item, or io.EOF after the last one once the root
// element has been closed properly. Every other error is fatal and is a
// *SyntaxError. Each call returns a new Entry that the caller may keep.
func (d *Decoder) Next() (*Entry, error) {
	return nil, errNotImplemented
}

// All iterates over the remaining entries. A fatal error is yielded once,
// with a nil Entry, and ends the iteration.
func (d *Decoder) All() iter.Seq2[*Entry, error] {
	return func(yield func(*Entry, error) bool) {
		for {
			e, err := d.Next()
			if err == io.EOF {
				return
			}
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// Pos returns the position of the start tag of the item last returned by
// Next, or of the root element after Head.
func (d *Decoder) Pos() Pos { return d.pos }

// HeadPos returns the position of the root rs:md element (of the root
// element when there is none).
func (d *Decoder) HeadPos() Pos { return d.headPos }

// TakeDiagnostics returns the diagnostics found since the last call and
// forgets them. At most 1000 are held between calls; Dropped counts the rest.
func (d *Decoder) TakeDiagnostics() []Diagnostic {
	p := d.pending
	d.pending = nil
	return p
}

// Dropped returns how many diagnostics were discarded because more than
// 1000 were pending.
func (d *Decoder) Dropped() int { return d.dropped }

// Legacy names the pre-1.0 draft the document was recognised as ("0.9",
// "0.5", "0.1-alpha"), or "" for a 1.x document. Known after Head.
func (d *Decoder) Legacy() string { return d.legacy }

// LateHead reports whether root rs:md or rs:ln elements were found after
// the first item.
func (d *Decoder) LateHead() bool { return d.late }

// Offset returns the number of bytes of the document consumed so far.
func (d *Decoder) Offset() int64 { return d.pos.Offset }
