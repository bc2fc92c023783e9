package rdf

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on hostile RDF/XML: element nesting (each level costs a frame)
// and the bytes of one XML token or literal (an attribute value, a text
// node), which encoding/xml would otherwise buffer whole.
const (
	rdfxmlMaxDepth = 1000
	rdfxmlMaxToken = 16 << 20
)

const (
	xmlNS         = "http://www.w3.org/XML/1998/namespace"
	rdfXMLLiteral = RDFNS + "XMLLiteral"
)

// parseRDFXML reads RDF/XML (RDF 1.1 XML Syntax) from r with encoding/xml's
// token stream, yielding each triple as soon as the element that makes it
// has been read: memory is bounded by the nesting depth, never by the
// number of node elements. encoding/xml does not expand entities declared
// in a DTD, so entity-expansion attacks fail as syntax errors.
func parseRDFXML(r io.Reader, base string) iter.Seq2[Triple, error] {
	return func(yield func(Triple, error) bool) {
		lr := &tokenLimitReader{r: r, limit: rdfxmlMaxToken}
		d := xml.NewDecoder(lr)
		d.Strict = true
		d.CharsetReader = charsetReader
		p := &rdfxmlParser{d: d, lr: lr, base: base, yield: yield, limit: maxRetained}
		err := p.document()
		if err != nil && err != errStop {
			yield(Triple{}, err)
		}
	}
}

// errTokenTooLarge is returned by tokenLimitReader when the decoder has
// read more than the limit past the end of the last complete token.
var errTokenTooLarge = errors.New("XML token too large")

// tokenLimitReader bounds what encoding/xml buffers for one token: the
// parser marks the input offset after each token, and a read that would
// go more than limit bytes past the mark fails.
type tokenLimitReader struct {
	r       io.Reader
	n, mark int64
	limit   int64
	err     error // the underlying reader's error other than io.EOF
}

func (l *tokenLimitReader) Read(b []byte) (int, error) {
	room := l.mark + l.limit + 8192 - l.n // 8192: the decoder's read-ahead
	if room <= 0 {
		return 0, errTokenTooLarge
	}
	if int64(len(b)) > room {
		b = b[:room]
	}
	n, err := l.r.Read(b)
	l.n += int64(n)
	if err != nil && err != io.EOF {
		l.err = err
	}
	return n, err
}

type frameKind uint8

const (
	kRoot       frameKind = iota + 1 // rdf:RDF: children are node elements
	kNode                            // node element (or parseType="Resource"): children are property elements
	kProp                            // property element: text, or one node element
	kEmptyProp                       // property element that must stay empty
	kCollection                      // parseType="Collection": children are node elements
)

type xmlFrame struct {
	kind       frameKind
	base, lang string
	ns         []xml.Attr // namespace declarations made on this element
	subject    Term       // kNode: the node; kProp/kCollection: the property's subject
	li         int        // kNode: last rdf:li number
	pred       Term       // kProp, kCollection
	datatype   string     // kProp
	reify      string     // kProp, kCollection: rdf:ID of the statement
	hasNode    bool       // kProp: got its node element
	text       []byte
	listCur    Term // kCollection: last list node
	cost       int  // the bytes this open element keeps (rdfxmlParser.held)
}

type rdfxmlParser struct {
	d      *xml.Decoder
	lr     *tokenLimitReader
	base   string
	yield  func(Triple, error) bool
	stack  []*xmlFrame
	free   []*xmlFrame // popped frames, for reuse
	ids    map[string]struct{}
	bnodes int
	// held is what the open elements keep (their frames' cost: names,
	// namespace declarations, xml:base, xml:lang, subject, predicate,
	// text; the decoder keeps the names and declarations as well), ids
	// what the rdf:ID set keeps; held may not exceed limit
	// (MaxRetainedBytes), and the ID set stops growing at it.
	held, idBytes int
	limit         int
}

// checkRetained refuses a document whose open elements keep more than
// the limit.
func (p *rdfxmlParser) checkRetained(extra int) error {
	if p.held+extra > p.limit {
		line, col := p.d.InputPos()
		return &SyntaxError{Line: line, Col: col, Limit: true, Msg: fmt.Sprintf(
			"open elements hold more than %d bytes (namespace declarations, xml:base, xml:lang, names, subjects, predicates, text)", p.limit)}
	}
	return nil
}

// limitf is errf for a reader limit (ErrLimit).
func (p *rdfxmlParser) limitf(format string, a ...any) error {
	line, col := p.d.InputPos()
	return &SyntaxError{Line: line, Col: col, Limit: true, Msg: fmt.Sprintf(format, a...)}
}

func (p *rdfxmlParser) errf(format string, a ...any) error {
	line, col := p.d.InputPos()
	return &SyntaxError{Line: line, Col: col, Msg: fmt.Sprintf(format, a...)}
}

func (p *rdfxmlParser) fresh() Term {
	p.bnodes++
	return genBlank(p.bnodes)
}

func (p *rdfxmlParser) emit(s, pr, o Term) error {
	if !p.yield(Triple{s, pr, o}, nil) {
		return errStop
	}
	return nil
}

// emitStmt emits s p o and, when the property element had rdf:ID, the
// four triples reifying it.
func (p *rdfxmlParser) emitStmt(s, pr, o Term, reify string) error {
	if err := p.emit(s, pr, o); err != nil {
		return err
	}
	if reify == "" {
		return nil
	}
	r := IRI(reify)
	for _, t := range [...]Triple{
		{r, rdfType, IRI(RDFNS + "Statement")},
		{r, IRI(RDFNS + "subject"), s},
		{r, IRI(RDFNS + "predicate"), pr},
		{r, IRI(RDFNS + "object"), o},
	} {
		if err := p.emit(t.S, t.P, t.O); err != nil {
			return err
		}
	}
	return nil
}

func (p *rdfxmlParser) token() (xml.Token, error) {
	tok, err := p.d.Token()
	if err != nil {
		if err == io.EOF {
			return nil, err
		}
		if p.lr.err != nil {
			return nil, fmt.Errorf("rdf/xml: reading: %w", p.lr.err)
		}
		// Everything else the decoder says is about the document.
		line, col := p.d.InputPos()
		return nil, &SyntaxError{Line: line, Col: col, Msg: err.Error(), Limit: errors.Is(err, errTokenTooLarge)}
	}
	p.lr.mark = p.d.InputOffset()
	return tok, nil
}

func (p *rdfxmlParser) document() error {
	sawRoot := false
	for {
		tok, err := p.token()
		if err == io.EOF {
			if len(p.stack) > 0 {
				return p.errf("unexpected end of document")
			}
			if !sawRoot {
				return p.errf("no root element")
			}
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(p.stack) >= rdfxmlMaxDepth {
				return p.limitf("elements nested deeper than %d", rdfxmlMaxDepth)
			}
			if len(p.stack) == 0 {
				if sawRoot {
					return p.errf("more than one root element")
				}
				sawRoot = true
			}
			n := len(p.stack)
			if err := p.start(t); err != nil {
				return err
			}
			if len(p.stack) > n { // not an XML literal, read whole
				f := p.stack[len(p.stack)-1]
				c := len(t.Name.Space) + len(t.Name.Local) + len(f.pred.Value) + len(f.datatype) + len(f.reify)
				if f.kind == kNode {
					c += termBytes(f.subject)
				}
				f.cost += c
				p.held += c
				if err := p.checkRetained(0); err != nil {
					return err
				}
			}
		case xml.EndElement:
			if err := p.end(); err != nil {
				return err
			}
		case xml.CharData:
			if len(p.stack) == 0 {
				if !isXMLSpace(t) {
					return p.errf("text outside the root element")
				}
				continue
			}
			top := p.stack[len(p.stack)-1]
			if top.kind == kProp && !top.hasNode {
				if len(top.text)+len(t) > rdfxmlMaxToken {
					return p.limitf("literal longer than %d bytes", rdfxmlMaxToken)
				}
				top.text = append(top.text, t...)
				top.cost += len(t)
				p.held += len(t)
				if err := p.checkRetained(0); err != nil {
					return err
				}
			} else if !isXMLSpace(t) {
				return p.errf("text %q not allowed here", abbreviate(string(t)))
			}
		}
	}
}

func isXMLSpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

func abbreviate(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// newFrame makes the frame of element t under the current top, taking
// its namespace declarations, xml:base and xml:lang.
func (p *rdfxmlParser) newFrame(t xml.StartElement) (*xmlFrame, error) {
	var f *xmlFrame
	if n := len(p.free); n > 0 {
		// Reuse a finished element's frame: a flat document then costs
		// no allocation per element here.
		f, p.free = p.free[n-1], p.free[:n-1]
		*f = xmlFrame{ns: f.ns[:0], text: f.text[:0]}
	} else {
		f = &xmlFrame{}
	}
	f.base = p.base
	if n := len(p.stack); n > 0 {
		f.base, f.lang = p.stack[n-1].base, p.stack[n-1].lang
	}
	for _, a := range t.Attr {
		switch {
		case a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns":
			f.ns = append(f.ns, a)
			f.cost += len(a.Name.Local) + len(a.Value)
		case a.Name.Space == xmlNS && a.Name.Local == "base":
			f.base = ResolveIRI(f.base, a.Value)
			f.cost += len(f.base)
		case a.Name.Space == xmlNS && a.Name.Local == "lang":
			f.lang = a.Value
			f.cost += len(a.Value)
			if f.lang != "" && !validLangTag(f.lang) {
				p.stack = append(p.stack, f)
				return nil, p.errf("xml:lang %q is not a language tag", abbreviate(a.Value))
			}
		}
	}
	p.stack = append(p.stack, f)
	p.held += f.cost
	if err := p.checkRetained(0); err != nil {
		return nil, err
	}
	// The name and the attributes must use declared prefixes:
	// encoding/xml leaves an undeclared prefix in Name.Space.
	if !p.declared(t.Name.Space) {
		return nil, p.errf("element <%s:%s> uses an undeclared namespace prefix", t.Name.Space, t.Name.Local)
	}
	for _, a := range t.Attr {
		if a.Name.Space != "xmlns" && !p.declared(a.Name.Space) {
			return nil, p.errf("attribute %s:%s uses an undeclared namespace prefix", a.Name.Space, a.Name.Local)
		}
	}
	return f, nil
}

// declared reports whether ns is "" or a namespace URI declared in scope.
func (p *rdfxmlParser) declared(ns string) bool {
	if ns == "" || ns == xmlNS {
		return true
	}
	for i := len(p.stack) - 1; i >= 0; i-- {
		for _, a := range p.stack[i].ns {
			if a.Value == ns {
				return true
			}
		}
	}
	return false
}

// rdfAttr names an attribute in the rdf namespace, or one of the
// unqualified forms older documents used.
func rdfAttr(a xml.Attr) string {
	if a.Name.Space == RDFNS {
		return a.Name.Local
	}
	if a.Name.Space == "" {
		switch a.Name.Local {
		case "about", "ID", "resource", "parseType", "nodeID", "datatype", "type", "aboutEach", "aboutEachPrefix", "bagID":
			return a.Name.Local
		}
	}
	return ""
}

// isSyntaxOnly reports whether a is an attribute that carries no
// property: namespace declarations and the xml: attributes.
func isSyntaxOnly(a xml.Attr) bool {
	return a.Name.Space == "xmlns" || a.Name.Space == xmlNS || a.Name.Space == "" && a.Name.Local == "xmlns" ||
		a.Name.Space == "" && strings.HasPrefix(strings.ToLower(a.Name.Local), "xml")
}

func (p *rdfxmlParser) start(t xml.StartElement) error {
	var parent *xmlFrame
	if n := len(p.stack); n > 0 {
		parent = p.stack[n-1]
	}
	f, err := p.newFrame(t)
	if err != nil {
		return err
	}
	switch {
	case parent == nil:
		if t.Name.Space == RDFNS && t.Name.Local == "RDF" {
			f.kind = kRoot
			return nil
		}
		_, err := p.nodeElement(t, f)
		return err
	case parent.kind == kRoot:
		_, err := p.nodeElement(t, f)
		return err
	case parent.kind == kProp:
		if parent.hasNode {
			return p.errf("a property element holds more than one node element")
		}
		if !isXMLSpace(parent.text) {
			return p.errf("a property element holds both text and a node element")
		}
		parent.hasNode = true
		s, err := p.nodeElement(t, f)
		if err != nil {
			return err
		}
		return p.emitStmt(parent.subject, parent.pred, s, parent.reify)
	case parent.kind == kCollection:
		s, err := p.nodeElement(t, f)
		if err != nil {
			return err
		}
		n := p.fresh()
		if parent.listCur.IsZero() {
			err = p.emitStmt(parent.subject, parent.pred, n, parent.reify)
		} else {
			err = p.emit(parent.listCur, rdfRest, n)
		}
		if err != nil {
			return err
		}
		parent.listCur = n
		return p.emit(n, rdfFirst, s)
	case parent.kind == kNode:
		return p.propertyElement(t, f, parent)
	}
	return p.errf("element <%s> not allowed inside an empty property element", t.Name.Local)
}

// nodeElement starts a node element in frame f and returns its subject.
func (p *rdfxmlParser) nodeElement(t xml.StartElement, f *xmlFrame) (Term, error) {
	f.kind = kNode
	if t.Name.Space == "" {
		return Term{}, p.errf("node element <%s> has no namespace", t.Name.Local)
	}
	if t.Name.Space == RDFNS {
		switch t.Name.Local {
		case "RDF", "ID", "about", "parseType", "resource", "nodeID", "datatype", "li", "aboutEach", "aboutEachPrefix", "bagID":
			return Term{}, p.errf("rdf:%s is not allowed as a node element", t.Name.Local)
		}
	}
	var subj Term
	set := func(s Term) error {
		if !subj.IsZero() {
			return p.errf("node element has more than one of rdf:about, rdf:ID, rdf:nodeID")
		}
		subj = s
		return nil
	}
	for _, a := range t.Attr {
		var err error
		switch rdfAttr(a) {
		case "about":
			err = set(IRI(ResolveIRI(f.base, a.Value)))
		case "ID":
			if !isNCName(a.Value) {
				return Term{}, p.errf("rdf:ID %q is not an XML name", a.Value)
			}
			id := ResolveIRI(f.base, "#"+a.Value)
			if err := p.newID(id); err != nil {
				return Term{}, err
			}
			err = set(IRI(id))
		case "nodeID":
			if !isNCName(a.Value) {
				return Term{}, p.errf("rdf:nodeID %q is not an XML name", a.Value)
			}
			err = set(writtenBlank(a.Value))
		}
		if err != nil {
			return Term{}, err
		}
	}
	if subj.IsZero() {
		subj = p.fresh()
	}
	f.subject = subj
	if !(t.Name.Space == RDFNS && t.Name.Local == "Description") {
		if err := p.emit(subj, rdfType, IRI(t.Name.Space+t.Name.Local)); err != nil {
			return Term{}, err
		}
	}
	return subj, p.propertyAttrs(t, f, subj, "about", "ID", "nodeID")
}

// propertyAttrs emits the property attributes of t as statements about
// subj; skip names the rdf: attributes the element already used.
func (p *rdfxmlParser) propertyAttrs(t xml.StartElement, f *xmlFrame, subj Term, skip ...string) error {
	for _, a := range t.Attr {
		if isSyntaxOnly(a) {
			continue
		}
		name := rdfAttr(a)
		if slices.Contains(skip, name) {
			continue
		}
		switch name {
		case "type":
			if err := p.emit(subj, rdfType, IRI(ResolveIRI(f.base, a.Value))); err != nil {
				return err
			}
			continue
		case "aboutEach", "aboutEachPrefix", "bagID":
			return p.errf("rdf:%s was removed from RDF", name)
		case "li", "RDF", "Description", "about", "ID", "nodeID", "resource", "parseType", "datatype":
			return p.errf("rdf:%s is not allowed here", name)
		}
		if a.Name.Space == "" {
			// RDF/XML 6.1.4: only the rdf: names listed in rdfAttr may be
			// written unqualified.
			return p.errf("attribute %s has no namespace", a.Name.Local)
		}
		if err := p.emit(subj, IRI(a.Name.Space+a.Name.Local), p.literal(a.Value, f.lang, "")); err != nil {
			return err
		}
	}
	return nil
}

func (p *rdfxmlParser) literal(text, lang, datatype string) Term {
	switch {
	case datatype != "":
		return TypedLiteral(text, datatype)
	case lang != "":
		return LangLiteral(text, lang)
	}
	return Literal(text)
}

func (p *rdfxmlParser) propertyElement(t xml.StartElement, f *xmlFrame, parent *xmlFrame) error {
	f.subject = parent.subject
	if t.Name.Space == "" {
		return p.errf("property element <%s> has no namespace", t.Name.Local)
	}
	pred := t.Name.Space + t.Name.Local
	if t.Name.Space == RDFNS {
		switch t.Name.Local {
		case "li":
			parent.li++
			pred = RDFNS + "_" + strconv.Itoa(parent.li)
		case "Description", "RDF", "ID", "about", "parseType", "resource", "nodeID", "datatype", "aboutEach", "aboutEachPrefix", "bagID":
			return p.errf("rdf:%s is not allowed as a property element", t.Name.Local)
		}
	}
	f.pred = IRI(pred)
	var parseType, resource, nodeID string
	var hasResource, hasNodeID, hasProps bool
	for _, a := range t.Attr {
		if isSyntaxOnly(a) {
			continue
		}
		switch rdfAttr(a) {
		case "ID":
			if !isNCName(a.Value) {
				return p.errf("rdf:ID %q is not an XML name", a.Value)
			}
			f.reify = ResolveIRI(f.base, "#"+a.Value)
			if err := p.newID(f.reify); err != nil {
				return err
			}
		case "parseType":
			parseType = a.Value
		case "resource":
			resource, hasResource = a.Value, true
		case "nodeID":
			if !isNCName(a.Value) {
				return p.errf("rdf:nodeID %q is not an XML name", a.Value)
			}
			nodeID, hasNodeID = a.Value, true
		case "datatype":
			f.datatype = ResolveIRI(f.base, a.Value)
		case "":
			if a.Name.Space == "" {
				return p.errf("attribute %s has no namespace", a.Name.Local)
			}
			hasProps = true
		default: // rdf:type and the names propertyAttrs refuses
			hasProps = true
		}
	}
	if hasResource && hasNodeID {
		return p.errf("property element has both rdf:resource and rdf:nodeID")
	}
	if parseType != "" {
		if hasResource || hasNodeID || hasProps || f.datatype != "" {
			return p.errf("rdf:parseType cannot be combined with rdf:resource, rdf:nodeID, rdf:datatype or property attributes")
		}
		switch parseType {
		case "Resource":
			n := p.fresh()
			f.kind, f.subject = kNode, n
			return p.emitStmt(parent.subject, f.pred, n, f.reify)
		case "Collection":
			f.kind = kCollection
			return nil
		default: // "Literal" and any other value
			lit, err := p.xmlLiteral(t)
			if err != nil {
				return err
			}
			if !utf8.ValidString(lit) {
				// encoding/xml checks the characters of text, not of
				// comments: a literal must be text a writer can carry.
				return p.errf("XML literal of %s: not valid UTF-8", f.pred.Value)
			}
			p.pop() // xmlLiteral read the end tag
			return p.emitStmt(parent.subject, f.pred, TypedLiteral(lit, rdfXMLLiteral), f.reify)
		}
	}
	if hasResource || hasNodeID || hasProps {
		if f.datatype != "" {
			return p.errf("rdf:datatype on an empty property element with rdf:resource, rdf:nodeID or property attributes")
		}
		f.kind = kEmptyProp
		var o Term
		switch {
		case hasResource:
			o = IRI(ResolveIRI(f.base, resource))
		case hasNodeID:
			o = writtenBlank(nodeID)
		default:
			o = p.fresh()
		}
		if err := p.emitStmt(parent.subject, f.pred, o, f.reify); err != nil {
			return err
		}
		return p.propertyAttrs(t, f, o, "ID", "resource", "nodeID")
	}
	f.kind = kProp
	return nil
}

// rdfxmlMaxIDs bounds the memory spent on finding a repeated rdf:ID; a
// document with more IDs (or whose IDs hold more than the retained-bytes
// limit) is read without the check.
const rdfxmlMaxIDs = 100_000

// newID records an rdf:ID's IRI: RDF/XML forbids using one twice with
// the same base (W3C test rdfms-difference-between-ID-and-about-error1).
func (p *rdfxmlParser) newID(iri string) error {
	if _, dup := p.ids[iri]; dup {
		return p.errf("rdf:ID %s used twice", iri)
	}
	if p.ids == nil {
		p.ids = map[string]struct{}{}
	}
	if len(p.ids) < rdfxmlMaxIDs && p.idBytes+len(iri) <= p.limit {
		p.ids[iri] = struct{}{}
		p.idBytes += len(iri)
	}
	return nil
}

// pop removes the top frame; it stays valid until the next newFrame.
func (p *rdfxmlParser) pop() *xmlFrame {
	f := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	p.held -= f.cost
	if cap(f.text) <= 4096 { // do not keep a huge literal's buffer
		p.free = append(p.free, f)
	}
	return f
}

func (p *rdfxmlParser) end() error {
	f := p.pop()
	switch f.kind {
	case kProp:
		if !f.hasNode {
			return p.emitStmt(f.subject, f.pred, p.literal(string(f.text), f.lang, f.datatype), f.reify)
		}
	case kCollection:
		if f.listCur.IsZero() {
			return p.emitStmt(f.subject, f.pred, rdfNil, f.reify)
		}
		return p.emit(f.listCur, rdfRest, rdfNil)
	}
	return nil
}

// isNCName reports whether s is an XML name without colons (the form of
// rdf:ID and rdf:nodeID values).
func isNCName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || unicode.IsLetter(r):
		case i > 0 && (r == '-' || r == '.' || r == 0xB7 || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r)):
		default:
			return false
		}
	}
	return utf8.ValidString(s)
}

// charsetReader lets the decoder read the encodings other than UTF-8 that
// RDF/XML documents declare in practice and that need no tables:
// US-ASCII and ISO-8859-1. Others are a syntax error.
func charsetReader(label string, in io.Reader) (io.Reader, error) {
	switch strings.ToLower(label) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return in, nil
	case "iso-8859-1", "latin1", "iso_8859-1", "l1":
		return &latin1Reader{r: in}, nil
	}
	return nil, fmt.Errorf("unsupported encoding %q", label)
}

// latin1Reader decodes ISO-8859-1 to UTF-8.
type latin1Reader struct {
	r   io.Reader
	buf []byte
	out []byte
}

func (l *latin1Reader) Read(b []byte) (int, error) {
	for len(l.out) == 0 {
		if l.buf == nil {
			l.buf = make([]byte, 2048)
		}
		n, err := l.r.Read(l.buf)
		for _, c := range l.buf[:n] {
			l.out = utf8.AppendRune(l.out, rune(c))
		}
		if n == 0 && err != nil {
			return 0, err
		}
	}
	n := copy(b, l.out)
	l.out = l.out[n:]
	return n, nil
}
