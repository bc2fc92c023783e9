package validate

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

// Problem is one finding: a breach of the rule named by Rule (an ID of
// RESOURCESYNC.md such as RS-CHL-3, or RS-XML for a document that is not
// well-formed XML, or RS-FETCH for a document that could not be fetched).
type Problem struct {
	Doc      string      `json:"doc"`
	Line     int         `json:"line,omitempty"`
	Col      int         `json:"col,omitempty"`
	Rule     string      `json:"rule"`
	Severity rs.Severity `json:"severity"`
	Message  string      `json:"message"`
}

func (p Problem) String() string {
	pos := p.Doc
	if p.Line > 0 {
		pos += fmt.Sprintf(":%d:%d", p.Line, p.Col)
	}
	return fmt.Sprintf("%s: %s %s: %s", pos, p.Severity, p.Rule, p.Message)
}

// Options tune Document and Walk. The zero value is ready to use.
type Options struct {
	// Limits bound what the decoder accepts.
	Limits rs.Limits
	// MaxDocs caps the documents Walk fetches; 0 means 1000.
	MaxDocs int
	// Concurrency is how many documents Walk fetches at once; 0 means 4.
	Concurrency int
	// Timeout bounds each HTTP request of Walk, body included; 0 means 60s.
	Timeout time.Duration
}

// ChildRef is an item of a document whose items are themselves documents
// (Source Description, Capability List, any index, any archive).
type ChildRef struct {
	Loc        string
	Capability rs.Capability // item rs:md@capability, "" when absent
	At         rs.Time
	Completed  rs.Time
	From       rs.Time
	Until      rs.Time
	Hub        string // rel="hub" link of a notification channel
	Pos        rs.Pos
}

// Info summarises a validated document for the tree walker.
type Info struct {
	Head     rs.Head
	HeadPos  rs.Pos // of the root rs:md (of the root element when there is none)
	Legacy   string // pre-1.0 draft recognised by the decoder, or ""
	Entries  int
	Bytes    int64
	Errors   int
	Warnings int
	// Children are the items of a Source Description, Capability List,
	// index or archive; nil for other documents.
	Children []ChildRef
}

// Document validates the document read from r, calling report for every
// problem; name is the Doc of each Problem. It returns an error only when
// the document is not well-formed XML (a *rs.SyntaxError, also reported as
// an RS-XML problem) or cannot be read; Info is then nil.
func Document(name string, r io.Reader, opts Options, report func(Problem)) (*Info, error) {
	cr := &countReader{r: r}
	d := rs.NewDecoder(cr)
	d.Limits = opts.Limits
	c := &checker{name: name, report: report, info: &Info{}, dec: d, in: cr}
	h, err := d.Head()
	if err != nil {
		return nil, c.fatal(err)
	}
	c.head = h
	c.cap = h.MD.Capability
	c.info.Legacy = d.Legacy()
	c.legacy = d.Legacy()
	c.flushDiagnostics()
	for {
		e, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			c.flushDiagnostics()
			return nil, c.fatal(err)
		}
		c.flushDiagnostics()
		c.entry(e, d.Pos())
	}
	c.flushDiagnostics()
	c.finish()
	c.info.Head = *h
	c.info.HeadPos = d.HeadPos()
	c.info.Bytes = cr.n
	if cr.n > rs.MaxDocumentBytes {
		c.emit(rs.Pos{}, "RS-GEN-8", rs.SevError, "document is %d bytes, more than the 50 MiB (%d bytes) limit; split it and group the parts with an index", cr.n, rs.MaxDocumentBytes)
	}
	return c.info, nil
}

type countReader struct {
	r   io.Reader
	n   int64
	err error // the first error other than io.EOF
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// fatal reports a decoding error as an RS-XML problem and returns it. An
// error of the reader (a directory, a broken connection) says nothing
// about the document: it is returned without the *rs.SyntaxError the
// decoder wrapped it in, and not reported as a problem.
func (c *checker) fatal(err error) error {
	if c.in.err != nil && errors.Is(err, c.in.err) {
		return fmt.Errorf("validate %s: %w", c.name, c.in.err)
	}
	var se *rs.SyntaxError
	if errors.As(err, &se) {
		c.report(Problem{Doc: c.name, Line: se.Pos.Line, Col: se.Pos.Col, Rule: "RS-XML", Severity: rs.SevError, Message: se.Error()})
		return fmt.Errorf("validate %s: %w", c.name, err)
	}
	return fmt.Errorf("validate %s: %w", c.name, err)
}

// flushDiagnostics turns the decoder's diagnostics into problems.
func (c *checker) flushDiagnostics() {
	for _, dg := range c.dec.TakeDiagnostics() {
		sev := dg.Severity
		switch dg.Rule {
		case "RS-GEN-4", "RS-GEN-6":
			// MUST NOT rules of §7; a prefixed attribute is ignored by the
			// decoder, which silently changes the document's meaning.
			sev = rs.SevError
		}
		if sev == 0 {
			sev = rs.SevWarning
		}
		c.emit(dg.Pos, dg.Rule, sev, "%s", dg.Message)
	}
	if n := c.dec.Dropped(); n > c.dropped {
		c.emit(rs.Pos{}, "RS-XML", rs.SevWarning, "%d further decoder diagnostics dropped", n-c.dropped)
		c.dropped = n
	}
}
