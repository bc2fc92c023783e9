package rdf

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// rdfxmlWriter streams RDF/XML: one rdf:Description per run of triples
// with the same subject. A predicate's namespace is declared on its own
// property element (xmlns:ns0), so nothing needs to be known in advance.
type rdfxmlWriter struct {
	w       *bufio.Writer
	started bool
	open    bool // an rdf:Description is open
	s       Term
	err     error
	closed  bool
}

func newRDFXMLWriter(w io.Writer) Writer { return &rdfxmlWriter{w: bufio.NewWriter(w)} }

func (x *rdfxmlWriter) header() {
	if !x.started {
		x.started = true
		x.w.WriteString("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<rdf:RDF xmlns:rdf=\"" + RDFNS + "\">\n")
	}
}

func (x *rdfxmlWriter) Write(t Triple) error {
	if x.err != nil {
		return x.err
	}
	if x.closed {
		return errWriterClosed
	}
	if err := checkWritable(t); err != nil {
		return err
	}
	ns, local, err := splitPredicate(t.P.Value)
	if err != nil {
		return err
	}
	for _, s := range [...]string{t.S.Value, t.P.Value, t.O.Value, t.O.Datatype, t.O.Lang} {
		if !xmlChars(s) {
			return fmt.Errorf("%w: %q has characters XML 1.0 cannot carry", ErrNotSerializable, s)
		}
	}
	x.header()
	if !x.open || t.S != x.s {
		if x.open {
			x.w.WriteString("  </rdf:Description>\n")
		}
		x.w.WriteString("  <rdf:Description ")
		x.nodeRef(t.S, "about")
		x.w.WriteString(">\n")
		x.open, x.s = true, t.S
	}
	var name string
	if ns == RDFNS {
		name = "rdf:" + local
		x.w.WriteString("    <" + name)
	} else {
		name = "ns0:" + local
		x.w.WriteString("    <" + name + " xmlns:ns0=\"")
		x.attr(ns)
		x.w.WriteString("\"")
	}
	switch o := t.O; o.Kind {
	case KindIRI, KindBlank:
		x.w.WriteByte(' ')
		x.nodeRef(o, "resource")
		x.w.WriteString("/>\n")
	case KindLiteral:
		switch {
		case o.Lang != "":
			x.w.WriteString(" xml:lang=\"")
			x.attr(o.Lang)
			x.w.WriteString("\"")
		case o.Datatype != XSDString && o.Datatype != "":
			x.w.WriteString(" rdf:datatype=\"")
			x.attr(o.Datatype)
			x.w.WriteString("\"")
		}
		x.w.WriteByte('>')
		x.text(o.Value)
		x.w.WriteString("</" + name + ">\n")
	}
	if _, err := x.w.Write(nil); err != nil {
		x.err = fmt.Errorf("rdf/xml: writing: %w", err)
	}
	return x.err
}

// nodeRef writes rdf:about="iri" (or rdf:resource) or rdf:nodeID="label".
func (x *rdfxmlWriter) nodeRef(t Term, iriAttr string) {
	if t.IsBlank() {
		x.w.WriteString(`rdf:nodeID="` + safeBlankLabel(t.Value) + `"`)
		return
	}
	x.w.WriteString("rdf:" + iriAttr + `="`)
	x.attr(t.Value)
	x.w.WriteByte('"')
}

func (x *rdfxmlWriter) attr(s string) { escapeXMLAttr(x.w, s) }

func (x *rdfxmlWriter) text(s string) { escapeXMLText(x.w, s) }

func (x *rdfxmlWriter) Close() error {
	if x.err != nil || x.closed {
		return x.err
	}
	x.closed = true
	x.header()
	if x.open {
		x.w.WriteString("  </rdf:Description>\n")
		x.open = false
	}
	x.w.WriteString("</rdf:RDF>\n")
	if err := x.w.Flush(); err != nil {
		x.err = fmt.Errorf("rdf/xml: writing: %w", err)
	}
	return x.err
}

// splitPredicate splits a predicate IRI into a namespace and the longest
// suffix that is an XML NCName, as an RDF/XML property element needs.
// Names RDF/XML reserves (rdf:li, rdf:Description, ...) cannot be
// written, since a reader would take them for syntax.
func splitPredicate(iri string) (ns, local string, err error) {
	i := len(iri)
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(iri[:i])
		if !isNCNameChar(r) {
			break
		}
		i -= n
	}
	for i < len(iri) {
		r, n := utf8.DecodeRuneInString(iri[i:])
		if isNCNameStart(r) {
			break
		}
		i += n
	}
	ns, local = iri[:i], iri[i:]
	if ns == "" || local == "" {
		return "", "", fmt.Errorf("%w: predicate <%s> has no namespace and local name split", ErrNotSerializable, iri)
	}
	if ns == RDFNS {
		switch local {
		case "li", "Description", "RDF", "ID", "about", "parseType", "resource", "nodeID", "datatype", "aboutEach", "aboutEachPrefix", "bagID":
			return "", "", fmt.Errorf("%w: predicate rdf:%s is reserved by RDF/XML", ErrNotSerializable, local)
		}
	}
	if strings.HasPrefix(strings.ToLower(local), "xml") {
		// Names starting with "xml" are reserved by XML; encoding/xml
		// accepts them but other readers may not.
		return "", "", fmt.Errorf("%w: predicate <%s> has a local name starting with xml", ErrNotSerializable, iri)
	}
	return ns, local, nil
}

// isNCNameChar and isNCNameStart accept the ASCII and Latin-1 name
// characters, on which every XML 1.0 edition (and encoding/xml, which
// follows the 4th edition's tables) agrees; a predicate whose local name
// needs other characters is refused rather than risk output a reader
// rejects (fuzz finding: U+02D2 is a name character in the 5th edition
// only).
func isNCNameChar(r rune) bool {
	return isNCNameStart(r) || r == '-' || r == '.' || r == 0xB7 || '0' <= r && r <= '9'
}

func isNCNameStart(r rune) bool {
	return r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' ||
		0xC0 <= r && r <= 0xFF && r != 0xD7 && r != 0xF7
}

// xmlChars reports whether s is UTF-8 made only of characters XML 1.0
// allows.
func xmlChars(s string) bool {
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
		case r < 0x20, 0xD800 <= r && r <= 0xDFFF, r == 0xFFFE, r == 0xFFFF:
			return false
		}
	}
	return true
}
