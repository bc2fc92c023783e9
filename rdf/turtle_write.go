package rdf

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// turtlePrefixes are declared at the top of every document the Turtle
// writer makes: fixed, so the writer needs no look-ahead, and common
// enough to make the output readable.
var turtlePrefixes = []struct{ name, ns string }{
	{"rdf", RDFNS},
	{"rdfs", "http://www.w3.org/2000/01/rdf-schema#"},
	{"xsd", XSDNS},
	{"owl", "http://www.w3.org/2002/07/owl#"},
}

// turtleWriter streams Turtle: consecutive triples with the same subject
// share it (';'), with the same subject and predicate share both (',').
type turtleWriter struct {
	w       *bufio.Writer
	started bool
	open    bool // a statement is open (no " ." written yet)
	s, p    Term
	err     error
	closed  bool
}

func newTurtleWriter(w io.Writer) Writer { return &turtleWriter{w: bufio.NewWriter(w)} }

func (t *turtleWriter) Write(tr Triple) error {
	if t.err != nil {
		return t.err
	}
	if t.closed {
		return errWriterClosed
	}
	if err := checkWritable(tr); err != nil {
		return err
	}
	for _, x := range [...]Term{tr.S, tr.P, tr.O} {
		iri := x.Value
		switch {
		case x.IsLiteral() && x.Datatype != XSDString && x.Lang == "":
			iri = x.Datatype
		case !x.IsIRI():
			continue
		}
		if !turtleIRI(iri) {
			return fmt.Errorf("%w: IRI %q has characters Turtle cannot write", ErrNotSerializable, iri)
		}
	}
	if !t.started {
		t.started = true
		for _, p := range turtlePrefixes {
			fmt.Fprintf(t.w, "@prefix %s: <%s> .\n", p.name, p.ns)
		}
		t.w.WriteByte('\n')
	}
	switch {
	case t.open && tr.S == t.s && tr.P == t.p:
		t.w.WriteString(" ,\n\t\t")
	case t.open && tr.S == t.s:
		t.w.WriteString(" ;\n\t")
		t.predicate(tr.P)
		t.w.WriteByte(' ')
	default:
		if t.open {
			t.w.WriteString(" .\n")
		}
		t.term(tr.S)
		t.w.WriteByte(' ')
		t.predicate(tr.P)
		t.w.WriteByte(' ')
	}
	t.term(tr.O)
	t.open, t.s, t.p = true, tr.S, tr.P
	return t.stick()
}

// stick records a write error: bufio.Writer keeps a failed flush's error
// and returns it from every later call, so a zero-length write reads it.
func (t *turtleWriter) stick() error {
	if _, err := t.w.Write(nil); err != nil {
		t.err = fmt.Errorf("turtle: writing: %w", err)
	}
	return t.err
}

func (t *turtleWriter) Close() error {
	if t.err != nil || t.closed {
		return t.err
	}
	t.closed = true
	if t.open {
		t.w.WriteString(" .\n")
		t.open = false
	}
	if err := t.w.Flush(); err != nil {
		t.err = fmt.Errorf("turtle: writing: %w", err)
	}
	return t.err
}

// checkWritable refuses what no RDF syntax can write (ErrInvalidTriple: a
// subject that is not an IRI or blank node, a predicate that is not an
// IRI, a zero object) and what Turtle and RDF/XML cannot carry
// (ErrNotSerializable: text that is not UTF-8, a malformed language tag).
// Blank node labels are not checked: the writers map every label to a
// valid one with safeBlankLabel.
func checkWritable(tr Triple) error {
	switch {
	case !tr.S.IsIRI() && !tr.S.IsBlank():
		return fmt.Errorf("%w: subject %v is not an IRI or blank node", ErrInvalidTriple, tr.S)
	case !tr.P.IsIRI():
		return fmt.Errorf("%w: predicate %v is not an IRI", ErrInvalidTriple, tr.P)
	case tr.O.IsZero() || tr.O.Kind > KindLiteral:
		return fmt.Errorf("%w: object is missing", ErrInvalidTriple)
	}
	for _, x := range [...]string{tr.S.Value, tr.P.Value, tr.O.Value, tr.O.Datatype, tr.O.Lang} {
		if !utf8.ValidString(x) {
			return fmt.Errorf("%w: invalid UTF-8 in %q", ErrNotSerializable, x)
		}
	}
	if tr.O.IsLiteral() && tr.O.Lang != "" && !validLangTag(tr.O.Lang) {
		return fmt.Errorf("%w: bad language tag %q", ErrNotSerializable, tr.O.Lang)
	}
	return nil
}

// validLangTag is Turtle's LANGTAG without the '@'.
func validLangTag(s string) bool {
	for i, part := range strings.Split(s, "-") {
		if part == "" {
			return false
		}
		for _, c := range []byte(part) {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
				return false
			}
		}
	}
	return true
}

// predicate writes rdf:type as Turtle's "a".
func (t *turtleWriter) predicate(p Term) {
	if p == rdfType {
		t.w.WriteByte('a')
		return
	}
	t.term(p)
}

// bareLiteral reports whether x is an xsd:integer or xsd:boolean whose
// lexical form Turtle's shorthand reads back as the same literal.
func bareLiteral(x Term) bool {
	switch x.Datatype {
	case XSDBoolean:
		return x.Value == "true" || x.Value == "false"
	case XSDInteger:
		v := x.Value
		if v != "" && (v[0] == '+' || v[0] == '-') {
			v = v[1:]
		}
		if v == "" {
			return false
		}
		for i := 0; i < len(v); i++ {
			if v[i] < '0' || v[i] > '9' {
				return false
			}
		}
		return true
	}
	return false
}

func (t *turtleWriter) term(x Term) {
	switch x.Kind {
	case KindIRI:
		t.iri(x.Value)
	case KindBlank:
		t.w.WriteString("_:")
		t.w.WriteString(safeBlankLabel(x.Value))
	case KindLiteral:
		if bareLiteral(x) {
			t.w.WriteString(x.Value)
			return
		}
		writeTurtleString(t.w, x.Value)
		switch {
		case x.Lang != "":
			t.w.WriteByte('@')
			t.w.WriteString(x.Lang)
		case x.Datatype != XSDString && x.Datatype != "":
			t.w.WriteString("^^")
			t.iri(x.Datatype)
		}
	}
}

// iri writes a prefixed name when one of the fixed prefixes fits and the
// local part needs no escaping, else "<...>".
func (t *turtleWriter) iri(s string) {
	for _, p := range turtlePrefixes {
		if local, ok := strings.CutPrefix(s, p.ns); ok && simpleLocal(local) {
			t.w.WriteString(p.name)
			t.w.WriteByte(':')
			t.w.WriteString(local)
			return
		}
	}
	t.w.WriteByte('<')
	t.w.WriteString(s) // turtleIRI checked it
	t.w.WriteByte('>')
}

// turtleIRI reports whether s can be written as a Turtle IRIREF: it may
// not hold spaces, controls or <>"{}|^`\, even escaped.
func turtleIRI(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool {
		return r <= 0x20 || strings.ContainsRune("<>\"{}|^`\\", r)
	})
}

// simpleLocal reports whether s can be written as a local name as is.
func simpleLocal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || i > 0 && ('0' <= c && c <= '9' || c == '-')) {
			return false
		}
	}
	return true
}

// writeTurtleString writes s as a short double-quoted string; the same
// spelling is valid N-Triples.
func writeTurtleString(w *bufio.Writer, s string) {
	w.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			w.WriteString(`\"`)
		case '\\':
			w.WriteString(`\\`)
		case '\n':
			w.WriteString(`\n`)
		case '\r':
			w.WriteString(`\r`)
		case '\t':
			w.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7F {
				fmt.Fprintf(w, "\\u%04X", r)
			} else {
				w.WriteRune(r)
			}
		}
	}
	w.WriteByte('"')
}
