package harvest

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The canonical form of a record's metadata is that of Exclusive XML
// Canonicalization 1.0 without comments, applied to the <metadata>
// child: a namespace declaration appears on the first element that
// visibly uses it (its own prefix or an attribute's) and not again below
// unless rebound; attributes are sorted by namespace URI and local name;
// text and attribute values use C14N's escapes; empty elements have an
// end tag; comments, the XML declaration and unused declarations are
// dropped. So the bytes depend neither on where the repository declared
// its namespaces nor on its serialiser's quoting, only on the record.

const xmlNS = "http://www.w3.org/XML/1998/namespace"

// maxNSDecls caps the namespace declarations in scope: each prefix is
// resolved by a scan of them, so a record declaring thousands would cost
// their number times its elements. Real records declare a few dozen.
const maxNSDecls = 256

// The canonical form may be far larger than the record: a namespace
// declared once on an element that does not use it is declared again on
// each child that does (a 1 MiB URI on 1,000 children: 1 GiB), and
// escapes grow text fourfold. So it is bounded, as it is written, by
// canonMultiple times the record's bytes read so far (but at least
// minCanonicalBound) and by maxCanonicalBytes: a record over the bound is
// refused (skipped with a warning) once it crosses it, its memory that of
// the bound. A real record grows by less than 8 times (a DC record
// declaring dc on each short element: about 3).
const (
	canonMultiple     = 16
	minCanonicalBound = 1 << 20
)

// maxCanonicalBytes caps the canonical form of one record, as
// maxRecordBytes caps its input. A variable for the tests.
var maxCanonicalBytes int64 = 64 << 20

// errCanonicalTooLarge marks a record whose canonical form is over its
// bound.
var errCanonicalTooLarge = errors.New("canonical form too large")

// canonBound is the bound of the canonical form of a record of which in
// bytes were read.
func canonBound(in int64) int {
	return int(min(maxCanonicalBytes, max(minCanonicalBound, canonMultiple*in)))
}

// cbuf is the canonical output: a buffer that stops growing at limit and
// remembers that it was over.
type cbuf struct {
	b     bytes.Buffer
	limit int
	over  bool
}

func (c *cbuf) room(n int) bool {
	if c.over || c.b.Len()+n > c.limit {
		c.over = true
		return false
	}
	return true
}

func (c *cbuf) Write(p []byte) {
	if c.room(len(p)) {
		c.b.Write(p)
	}
}

func (c *cbuf) WriteString(s string) {
	if c.room(len(s)) {
		c.b.WriteString(s)
	}
}

func (c *cbuf) writeByte(x byte) {
	if c.room(1) {
		c.b.WriteByte(x)
	}
}

func (c *cbuf) Len() int      { return c.b.Len() }
func (c *cbuf) Bytes() []byte { return c.b.Bytes() }

// Reset empties the buffer; one grown by a large record is dropped.
func (c *cbuf) Reset() {
	if c.b.Cap() > 4<<20 {
		c.b = bytes.Buffer{}
	}
	c.b.Reset()
	c.over = false
}

// check reports the output's going over its bound.
func (c *cbuf) check() error {
	if c.over {
		return fmt.Errorf("%w: over %d bytes (%d times the record's bytes read, at least %d, at most %d): a namespace declared once and used by many elements is declared again on each",
			errCanonicalTooLarge, c.limit, canonMultiple, minCanonicalBound, maxCanonicalBytes)
	}
	return nil
}

// binding is one namespace declaration in scope.
type binding struct{ prefix, uri string }

// nsStack tracks the declarations in scope in the source document.
type nsStack struct {
	decls []binding
}

// push adds the declarations among attrs and returns the length to
// restore at the element's end.
func (s *nsStack) push(attrs []xml.Attr) int {
	n := len(s.decls)
	for _, a := range attrs {
		switch {
		case a.Name.Space == "xmlns":
			s.decls = append(s.decls, binding{a.Name.Local, a.Value})
		case a.Name.Space == "" && a.Name.Local == "xmlns":
			s.decls = append(s.decls, binding{"", a.Value})
		}
	}
	return n
}

func (s *nsStack) resolve(prefix string) (string, bool) {
	if prefix == "xml" {
		return xmlNS, true
	}
	for i := len(s.decls) - 1; i >= 0; i-- {
		if s.decls[i].prefix == prefix {
			return s.decls[i].uri, s.decls[i].uri != "" || prefix == ""
		}
	}
	return "", prefix == ""
}

// canon writes one element subtree canonically.
type canon struct {
	out      cbuf
	rendered []binding // namespaces rendered on open output elements
	marks    []int     // len(rendered) per open element
	names    []string  // qualified names of the open elements
	attrs    []cattr   // scratch
	decls    []binding // scratch
}

type cattr struct {
	uri, qname, local, value string
}

var errMalformed = errors.New("malformed XML")

func qname(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}

func (c *canon) reset() {
	c.out.Reset()
	c.rendered, c.marks, c.names = c.rendered[:0], c.marks[:0], c.names[:0]
}

func (c *canon) depth() int { return len(c.names) }

// renderedURI is the namespace the output binds prefix to.
func (c *canon) renderedURI(prefix string) (string, bool) {
	for i := len(c.rendered) - 1; i >= 0; i-- {
		if c.rendered[i].prefix == prefix {
			return c.rendered[i].uri, true
		}
	}
	return "", false
}

// start writes a start tag; ns must already include the element's own
// declarations.
func (c *canon) start(e xml.StartElement, ns *nsStack) error {
	if len(ns.decls) > maxNSDecls {
		return fmt.Errorf("%w: more than %d namespace declarations in scope", errMalformed, maxNSDecls)
	}
	if strings.Contains(e.Name.Local, ":") || e.Name.Local == "" {
		return fmt.Errorf("%w: element name %q", errMalformed, qname(e.Name))
	}
	for _, a := range e.Attr {
		if a.Name.Space == "" && a.Name.Local == "xmlns" && (a.Value == xmlNS || a.Value == "http://www.w3.org/2000/xmlns/") {
			return fmt.Errorf("%w: default namespace %q", errMalformed, a.Value)
		}
		if a.Name.Space != "xmlns" {
			continue
		}
		// Namespaces in XML 1.0: xmlns is never declared, xml only
		// to its own URI, no other prefix to that URI, and a prefix
		// is never undeclared.
		if a.Name.Local == "xmlns" || a.Value == "" || (a.Name.Local == "xml") != (a.Value == xmlNS) || a.Value == "http://www.w3.org/2000/xmlns/" {
			return fmt.Errorf("%w: namespace declaration xmlns:%s=%q", errMalformed, a.Name.Local, a.Value)
		}
	}
	c.decls = c.decls[:0]
	use := func(prefix string) error {
		if prefix == "xml" {
			return nil
		}
		for _, d := range c.decls {
			if d.prefix == prefix {
				return nil
			}
		}
		uri, ok := ns.resolve(prefix)
		if !ok {
			return fmt.Errorf("%w: undeclared namespace prefix %q", errMalformed, prefix)
		}
		if have, ok := c.renderedURI(prefix); (ok && have == uri) || (!ok && prefix == "" && uri == "") {
			return nil
		}
		c.decls = append(c.decls, binding{prefix, uri})
		return nil
	}
	if err := use(e.Name.Space); err != nil {
		return err
	}
	c.attrs = c.attrs[:0]
	for _, a := range e.Attr {
		if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") {
			continue
		}
		if strings.Contains(a.Name.Local, ":") || a.Name.Local == "" {
			return fmt.Errorf("%w: attribute name %q", errMalformed, qname(a.Name))
		}
		uri := ""
		if a.Name.Space != "" {
			if err := use(a.Name.Space); err != nil {
				return err
			}
			uri, _ = ns.resolve(a.Name.Space)
		}
		c.attrs = append(c.attrs, cattr{uri, qname(a.Name), a.Name.Local, a.Value})
	}
	slices.SortFunc(c.decls, func(a, b binding) int { return cmp.Compare(a.prefix, b.prefix) })
	slices.SortFunc(c.attrs, func(a, b cattr) int {
		if r := cmp.Compare(a.uri, b.uri); r != 0 {
			return r
		}
		return cmp.Compare(a.local, b.local)
	})
	for i := 1; i < len(c.attrs); i++ {
		if c.attrs[i].uri == c.attrs[i-1].uri && c.attrs[i].local == c.attrs[i-1].local {
			return fmt.Errorf("%w: repeated attribute %q", errMalformed, c.attrs[i].qname)
		}
	}
	name := qname(e.Name)
	c.out.writeByte('<')
	c.out.WriteString(name)
	for _, d := range c.decls {
		if d.prefix == "" {
			c.out.WriteString(` xmlns="`)
		} else {
			c.out.WriteString(` xmlns:`)
			c.out.WriteString(d.prefix)
			c.out.WriteString(`="`)
		}
		escapeAttr(&c.out, d.uri)
		c.out.writeByte('"')
	}
	for _, a := range c.attrs {
		c.out.writeByte(' ')
		c.out.WriteString(a.qname)
		c.out.WriteString(`="`)
		escapeAttr(&c.out, a.value)
		c.out.writeByte('"')
	}
	c.out.writeByte('>')
	if err := c.out.check(); err != nil {
		return err
	}
	c.marks = append(c.marks, len(c.rendered))
	c.rendered = append(c.rendered, c.decls...)
	c.names = append(c.names, name)
	return nil
}

// end writes the end tag of the innermost open element, which must be
// named e.
func (c *canon) end(e xml.EndElement) error {
	n := len(c.names)
	if n == 0 || c.names[n-1] != qname(e.Name) {
		return fmt.Errorf("%w: unexpected end tag </%s>", errMalformed, qname(e.Name))
	}
	c.out.WriteString("</")
	c.out.WriteString(c.names[n-1])
	c.out.writeByte('>')
	if err := c.out.check(); err != nil {
		return err
	}
	c.names = c.names[:n-1]
	c.rendered = c.rendered[:c.marks[n-1]]
	c.marks = c.marks[:n-1]
	return nil
}

func (c *canon) text(b []byte) error {
	escapeText(&c.out, b)
	return c.out.check()
}

func (c *canon) procInst(p xml.ProcInst) error {
	if strings.EqualFold(p.Target, "xml") {
		return fmt.Errorf("%w: XML declaration inside an element", errMalformed)
	}
	c.out.WriteString("<?")
	c.out.WriteString(p.Target)
	if len(p.Inst) > 0 {
		c.out.writeByte(' ')
		c.out.Write(p.Inst)
	}
	c.out.WriteString("?>")
	return c.out.check()
}

func escapeText(w *cbuf, b []byte) {
	last := 0
	for i, c := range b {
		var r string
		switch c {
		case '&':
			r = "&amp;"
		case '<':
			r = "&lt;"
		case '>':
			r = "&gt;"
		case '\r':
			r = "&#xD;"
		default:
			continue
		}
		w.Write(b[last:i])
		w.WriteString(r)
		last = i + 1
	}
	w.Write(b[last:])
}

func escapeAttr(w *cbuf, s string) {
	last := 0
	for i := 0; i < len(s); i++ {
		var r string
		switch s[i] {
		case '&':
			r = "&amp;"
		case '<':
			r = "&lt;"
		case '"':
			r = "&quot;"
		case '\t':
			r = "&#x9;"
		case '\n':
			r = "&#xA;"
		case '\r':
			r = "&#xD;"
		default:
			continue
		}
		w.WriteString(s[last:i])
		w.WriteString(r)
		last = i + 1
	}
	w.WriteString(s[last:])
}

// Canonical returns the canonical form of the single element doc holds
// (an XML declaration, comments, processing instructions and white space
// around it allowed), or an error if doc is not one well-formed,
// namespace-well-formed element.
func Canonical(doc []byte) ([]byte, error) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	var ns nsStack
	var c canon
	c.out.limit = canonBound(int64(len(doc)))
	var marks []int
	done := false
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errMalformed, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if done {
				return nil, fmt.Errorf("%w: more than one element", errMalformed)
			}
			marks = append(marks, ns.push(t.Attr))
			if err := c.start(t, &ns); err != nil {
				return nil, err
			}
		case xml.EndElement:
			if err := c.end(t); err != nil {
				return nil, err
			}
			ns.decls = ns.decls[:marks[len(marks)-1]]
			marks = marks[:len(marks)-1]
			done = c.depth() == 0
		case xml.CharData:
			if c.depth() > 0 {
				if err := c.text(t); err != nil {
					return nil, err
				}
			} else if len(bytes.TrimLeft(t, " \t\r\n")) > 0 {
				return nil, fmt.Errorf("%w: text outside the element", errMalformed)
			}
		case xml.ProcInst:
			if c.depth() > 0 {
				if err := c.procInst(t); err != nil {
					return nil, err
				}
			}
		case xml.Directive:
			return nil, fmt.Errorf("%w: directive", errMalformed)
		}
	}
	if !done {
		return nil, fmt.Errorf("%w: no complete element", errMalformed)
	}
	return bytes.Clone(c.out.Bytes()), nil
}
