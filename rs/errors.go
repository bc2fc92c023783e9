package rs

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/resourcesync-go/resourcesync/internal/xmlscan"
)

// Pos is a position in a document: 1-based line and column (in bytes) and
// the 0-based byte offset.
type Pos struct {
	Line, Col int
	Offset    int64
}

func (p Pos) String() string {
	if p.Line == 0 {
		return ""
	}
	return strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col)
}

// Errors matched with errors.Is on what a Decoder returns. Every fatal
// decoding error is a *SyntaxError wrapping one of these. The XML-level
// ones are the tokenizer's own sentinels, so no mapping is needed.
var (
	ErrSyntax           = xmlscan.ErrSyntax
	ErrDTD              = xmlscan.ErrDTD
	ErrEntity           = xmlscan.ErrEntity
	ErrDepth            = xmlscan.ErrDepth
	ErrAttrs            = xmlscan.ErrAttrs
	ErrTokenTooLarge    = xmlscan.ErrTokenTooLarge
	ErrDocumentTooLarge = xmlscan.ErrDocumentTooLarge
	ErrInvalidUTF8      = xmlscan.ErrInvalidUTF8
	ErrInvalidChar      = xmlscan.ErrInvalidChar
	ErrEncoding         = xmlscan.ErrEncoding
	ErrTruncated        = xmlscan.ErrTruncated
	ErrRoot             = errors.New("root element is not urlset or sitemapindex")
	ErrNamespace        = errors.New("root element in the wrong namespace")
	ErrTooManyLinks     = errors.New("too many rs:ln elements") // more than Limits.MaxLinks

)

// SyntaxError is a fatal decoding error at a position.
type SyntaxError struct {
	Pos Pos
	Err error  // one of the Err* sentinels above, or the reader's error
	Msg string // detail; may be empty
}

func (e *SyntaxError) Error() string {
	s := e.Err.Error()
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Pos.Line > 0 {
		return "line " + e.Pos.String() + ": " + s
	}
	return s
}

func (e *SyntaxError) Unwrap() error { return e.Err }

// Severity of a Diagnostic.
type Severity uint8

const (
	SevWarning Severity = iota + 1
	SevError
)

func (s Severity) String() string {
	switch s {
	case SevWarning:
		return "warning"
	case SevError:
		return "error"
	}
	return "severity(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText makes Severity print as "warning" or "error" in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Diagnostic is a non-fatal finding of the Decoder: a legacy feature mapped
// onto the 1.1 model, a value it could not parse (the field is then left
// zero), or a structural deviation it tolerated. Rule is an ID of
// shared/conformance/RESOURCESYNC.md, such as RS-LEG-9 or RS-DT-2.
type Diagnostic struct {
	Pos      Pos
	Rule     string
	Severity Severity
	Message  string
}

func (d Diagnostic) String() string {
	return fmt.Sprintf("%s: %s %s: %s", d.Pos, d.Severity, d.Rule, d.Message)
}
