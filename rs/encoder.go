package rs

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// ErrInvalidXMLChar is matched (errors.Is) by the error an Encoder returns
// for a string that cannot be written as XML 1.0: one holding a character
// outside the XML Char production (such as U+0000, most C0 controls,
// U+FFFE) or bytes that are not UTF-8. Errors for invalid UTF-8 also match
// ErrInvalidUTF8.
var ErrInvalidXMLChar = errors.New("character not allowed in XML 1.0")

// ErrInvalidName is matched by the error an Encoder returns for an Extra
// attribute whose local name is not an XML NCName, or whose namespace is
// the reserved xmlns namespace.
var ErrInvalidName = errors.New("invalid XML attribute name")

// ErrEncoderState is matched by the error an Encoder returns when its
// methods are called out of order: WriteEntry or Close before WriteHead,
// WriteHead twice, or anything after Close.
var ErrEncoderState = errors.New("encoder methods called out of order")

const (
	xmlNS   = "http://www.w3.org/XML/1998/namespace"
	xmlnsNS = "http://www.w3.org/2000/xmlns/"

	xmlDecl = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"

	// flushAt is the buffered size beyond which the Encoder writes to w,
	// always between two entries.
	flushAt = 64 << 10
)

// Encoder writes one ResourceSync document as strict 1.1 XML: UTF-8, the
// Sitemap namespace as default namespace and the ResourceSync namespace
// with prefix rs, both declared once on the root element; elements in the
// order of the Sitemap XSD (RS-GEN-10); attributes in a fixed order;
// absent values (zero Time, empty string, HasLength false, Pri 0) omitted.
//
// Call WriteHead once, then WriteEntry for each item, then Close. Output is
// buffered and written to the underlying writer in chunks between entries.
// An entry holding a string that cannot be written as XML is refused as a
// whole: nothing of it is written and the Encoder stays usable. An error of
// the underlying writer is sticky: every later call returns it.
//
// Writing an entry does not allocate once the buffer has grown to size.
// An Encoder is not safe for concurrent use.
type Encoder struct {
	w     io.Writer
	buf   []byte
	root  RootKind
	state encState
	err   error // sticky write error
	n     int64 // bytes handed to w

	rootNS []string // namespaces declared on the root; prefix "ns"+(i+1)
	preNS  []string // namespaces to declare on the root first (Splitter)
	elemNS []string // namespaces declared on the element being written
}

type encState uint8

const (
	stateNew encState = iota
	stateBody
	stateClosed
)

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w io.Writer) *Encoder {
	return &Encoder{w: w, buf: make([]byte, 0, flushAt+4096)}
}

// WriteHead writes the XML declaration, the root start tag (urlset or
// sitemapindex as h.Root says) with its namespace declarations, the root
// rs:md (omitted when all its fields are empty) and the root rs:ln
// elements. Every namespace used by an Extra attribute of h is declared on
// the root with a generated prefix (ns1, ns2, …).
func (e *Encoder) WriteHead(h *Head) error {
	if e.err != nil {
		return e.err
	}
	if e.state != stateNew {
		return fmt.Errorf("rs: WriteHead: %w", ErrEncoderState)
	}
	e.rootNS = append(e.rootNS[:0], e.preNS...)
	addNS := func(extra []Attr) {
		for _, a := range extra {
			if a.Space == "" || a.Space == RSNS || a.Space == xmlNS || a.Space == xmlnsNS || indexOf(e.rootNS, a.Space) >= 0 {
				continue
			}
			e.rootNS = append(e.rootNS, a.Space)
		}
	}
	addNS(h.MD.Extra)
	for i := range h.Links {
		addNS(h.Links[i].Extra)
	}

	b := e.buf[:0]
	b = append(b, xmlDecl...)
	b = append(b, '<')
	b = append(b, h.Root.String()...)
	b = append(b, ` xmlns="`+SitemapNS+`" xmlns:rs="`+RSNS+`"`...)
	var err error
	for i, ns := range e.rootNS {
		b = appendNSDecl(b, i+1)
		if b, err = appendAttrText(b, ns, "namespace URI"); err != nil {
			return fmt.Errorf("rs: WriteHead: %w", err)
		}
		b = append(b, '"')
	}
	b = append(b, ">\n"...)
	if b, err = e.appendMD(b, &h.MD); err == nil {
		if !mdEmpty(&h.MD) {
			b = append(b, '\n')
		}
		for i := range h.Links {
			if b, err = e.appendLink(b, &h.Links[i]); err != nil {
				break
			}
			b = append(b, '\n')
		}
	}
	if err != nil {
		e.buf = b[:0]
		return fmt.Errorf("rs: WriteHead: %w", err)
	}
	e.buf = b
	e.root = h.Root
	e.state = stateBody
	return nil
}

// WriteEntry writes one item: <url> in a urlset, <sitemap> in a
// sitemapindex, with loc, lastmod, changefreq, priority, rs:md (omitted
// when all its fields are empty) and rs:ln in that order, followed by a
// newline. A namespace used by an Extra attribute and not declared on the
// root is declared on the rs:md or rs:ln element that uses it.
//
// If a string of e cannot be written as XML the returned error matches
// ErrInvalidXMLChar (or ErrInvalidName) and nothing of e is written.
func (e *Encoder) WriteEntry(en *Entry) error {
	if e.err != nil {
		return e.err
	}
	if e.state != stateBody {
		return fmt.Errorf("rs: WriteEntry: %w", ErrEncoderState)
	}
	b, err := e.appendEntry(e.buf, en)
	if err != nil {
		return fmt.Errorf("rs: WriteEntry %q: %w", en.Loc, err)
	}
	e.buf = b
	if len(b) >= flushAt {
		return e.flush()
	}
	return nil
}

// Close writes the root end tag and flushes the buffer. It does not close
// the underlying writer. Calling Close again returns nil.
func (e *Encoder) Close() error {
	if e.err != nil {
		return e.err
	}
	switch e.state {
	case stateClosed:
		return nil
	case stateNew:
		return fmt.Errorf("rs: Close: %w", ErrEncoderState)
	}
	e.buf = appendEndRoot(e.buf, e.root)
	e.state = stateClosed
	return e.flush()
}

// reset makes e ready to write a new document to w.
func (e *Encoder) reset(w io.Writer) {
	e.w, e.buf, e.state, e.err, e.n = w, e.buf[:0], stateNew, nil, 0
}

// Written returns the number of bytes of the document produced so far,
// buffered bytes included.
func (e *Encoder) Written() int64 { return e.n + int64(len(e.buf)) }

func (e *Encoder) flush() error {
	if e.err != nil {
		return e.err
	}
	if len(e.buf) == 0 {
		return nil
	}
	n, err := e.w.Write(e.buf)
	e.n += int64(n)
	if err == nil && n < len(e.buf) {
		err = io.ErrShortWrite
	}
	e.buf = e.buf[:0]
	if err != nil {
		e.err = fmt.Errorf("rs: write: %w", err)
		return e.err
	}
	return nil
}

func appendEndRoot(b []byte, k RootKind) []byte {
	b = append(b, "</"...)
	b = append(b, k.String()...)
	return append(b, ">\n"...)
}

// appendEntry appends the XML of en to b. On error the returned slice is b
// unchanged in length.
func (e *Encoder) appendEntry(b []byte, en *Entry) ([]byte, error) {
	start := len(b)
	item := "url"
	if e.root == SitemapIndex {
		item = "sitemap"
	}
	var err error
	b = append(b, '<')
	b = append(b, item...)
	b = append(b, "><loc>"...)
	if b, err = appendText(b, en.Loc, "loc"); err != nil {
		return b[:start], err
	}
	b = append(b, "</loc>"...)
	if !en.LastMod.IsZero() {
		b = append(b, "<lastmod>"...)
		b = en.LastMod.AppendFormat(b)
		b = append(b, "</lastmod>"...)
	}
	if en.ChangeFreq != "" {
		b = append(b, "<changefreq>"...)
		if b, err = appendText(b, en.ChangeFreq, "changefreq"); err != nil {
			return b[:start], err
		}
		b = append(b, "</changefreq>"...)
	}
	if en.Priority != "" {
		b = append(b, "<priority>"...)
		if b, err = appendText(b, en.Priority, "priority"); err != nil {
			return b[:start], err
		}
		b = append(b, "</priority>"...)
	}
	if b, err = e.appendMD(b, &en.MD); err != nil {
		return b[:start], err
	}
	for i := range en.Links {
		if b, err = e.appendLink(b, &en.Links[i]); err != nil {
			return b[:start], err
		}
	}
	b = append(b, "</"...)
	b = append(b, item...)
	b = append(b, ">\n"...)
	return b, nil
}

// mdEmpty reports whether no field of m is set.
func mdEmpty(m *Metadata) bool {
	return m.Capability == "" && m.Change == "" && m.At.IsZero() && m.Completed.IsZero() &&
		m.From.IsZero() && m.Until.IsZero() && m.DateTime.IsZero() && m.Modified.IsZero() &&
		len(m.Hashes) == 0 && !m.HasLength && m.Type == "" && m.Encoding == "" && m.Path == "" &&
		len(m.Extra) == 0
}

func (e *Encoder) appendMD(b []byte, m *Metadata) ([]byte, error) {
	if mdEmpty(m) {
		return b, nil
	}
	var err error
	b = append(b, "<rs:md"...)
	if b, err = appendAttr(b, " capability=\"", string(m.Capability), "capability"); err != nil {
		return b, err
	}
	if b, err = appendAttr(b, " change=\"", string(m.Change), "change"); err != nil {
		return b, err
	}
	b = appendTimeAttr(b, " at=\"", m.At)
	b = appendTimeAttr(b, " completed=\"", m.Completed)
	b = appendTimeAttr(b, " from=\"", m.From)
	b = appendTimeAttr(b, " until=\"", m.Until)
	b = appendTimeAttr(b, " datetime=\"", m.DateTime)
	b = appendTimeAttr(b, " modified=\"", m.Modified)
	if b, err = appendHashes(b, m.Hashes); err != nil {
		return b, err
	}
	if m.HasLength {
		b = append(b, " length=\""...)
		b = strconv.AppendInt(b, m.Length, 10)
		b = append(b, '"')
	}
	if b, err = appendAttr(b, " type=\"", m.Type, "type"); err != nil {
		return b, err
	}
	if b, err = appendAttr(b, " encoding=\"", m.Encoding, "encoding"); err != nil {
		return b, err
	}
	if b, err = appendAttr(b, " path=\"", m.Path, "path"); err != nil {
		return b, err
	}
	if b, err = e.appendExtra(b, m.Extra); err != nil {
		return b, err
	}
	return append(b, "/>"...), nil
}

func (e *Encoder) appendLink(b []byte, l *Link) ([]byte, error) {
	var err error
	b = append(b, "<rs:ln"...)
	if b, err = appendAttr(b, " rel=\"", l.Rel, "rel"); err != nil {
		return b, err
	}
	if b, err = appendAttr(b, " href=\"", l.Href, "href"); err != nil {
		return b, err
	}
	b = appendTimeAttr(b, " modified=\"", l.Modified)
	if b, err = appendHashes(b, l.Hashes); err != nil {
		return b, err
	}
	if l.HasLength {
		b = append(b, " length=\""...)
		b = strconv.AppendInt(b, l.Length, 10)
		b = append(b, '"')
	}
	if b, err = appendAttr(b, " type=\"", l.Type, "type"); err != nil {
		return b, err
	}
	if b, err = appendAttr(b, " encoding=\"", l.Encoding, "encoding"); err != nil {
		return b, err
	}
	if b, err = appendAttr(b, " path=\"", l.Path, "path"); err != nil {
		return b, err
	}
	if l.Pri != 0 {
		b = append(b, " pri=\""...)
		b = strconv.AppendInt(b, int64(l.Pri), 10)
		b = append(b, '"')
	}
	if b, err = appendAttr(b, " profile=\"", l.Profile, "profile"); err != nil {
		return b, err
	}
	if b, err = e.appendExtra(b, l.Extra); err != nil {
		return b, err
	}
	return append(b, "/>"...), nil
}

// appendExtra appends the declarations of namespaces not declared on the
// root, then the Extra attributes in their given order.
func (e *Encoder) appendExtra(b []byte, extra []Attr) ([]byte, error) {
	if len(extra) == 0 {
		return b, nil
	}
	var err error
	e.elemNS = e.elemNS[:0]
	for _, a := range extra {
		if !isNCName(a.Local) {
			return b, fmt.Errorf("%w: %q", ErrInvalidName, a.Local)
		}
		switch {
		case a.Space == xmlnsNS || a.Space == "" && a.Local == "xmlns":
			return b, fmt.Errorf("%w: namespace declarations cannot be Extra attributes", ErrInvalidName)
		case a.Space == "" || a.Space == RSNS || a.Space == xmlNS:
		case indexOf(e.rootNS, a.Space) >= 0 || indexOf(e.elemNS, a.Space) >= 0:
		default:
			e.elemNS = append(e.elemNS, a.Space)
			b = appendNSDecl(b, len(e.rootNS)+len(e.elemNS))
			if b, err = appendAttrText(b, a.Space, "namespace URI"); err != nil {
				return b, err
			}
			b = append(b, '"')
		}
	}
	for _, a := range extra {
		b = append(b, ' ')
		switch {
		case a.Space == "":
		case a.Space == RSNS:
			b = append(b, "rs:"...)
		case a.Space == xmlNS:
			b = append(b, "xml:"...)
		default:
			i := indexOf(e.rootNS, a.Space)
			if i < 0 {
				i = len(e.rootNS) + indexOf(e.elemNS, a.Space)
			}
			b = appendPrefix(b, i+1)
			b = append(b, ':')
		}
		b = append(b, a.Local...)
		b = append(b, "=\""...)
		if b, err = appendAttrText(b, a.Value, a.Local); err != nil {
			return b, err
		}
		b = append(b, '"')
	}
	return b, nil
}

func appendPrefix(b []byte, n int) []byte {
	b = append(b, "ns"...)
	return strconv.AppendInt(b, int64(n), 10)
}

// appendNSDecl appends ` xmlns:nsN="` (the value and closing quote are the
// caller's).
func appendNSDecl(b []byte, n int) []byte {
	b = append(b, " xmlns:"...)
	b = appendPrefix(b, n)
	return append(b, "=\""...)
}

func indexOf(s []string, v string) int {
	for i := range s {
		if s[i] == v {
			return i
		}
	}
	return -1
}

func appendTimeAttr(b []byte, open string, t Time) []byte {
	if t.IsZero() {
		return b
	}
	b = append(b, open...)
	b = t.AppendFormat(b)
	return append(b, '"')
}

// appendAttr appends open (` name="`), the escaped value and the closing
// quote, or nothing when v is empty.
func appendAttr(b []byte, open, v, field string) ([]byte, error) {
	if v == "" {
		return b, nil
	}
	b = append(b, open...)
	b, err := appendAttrText(b, v, field)
	return append(b, '"'), err
}

func appendHashes(b []byte, h Hashes) ([]byte, error) {
	if len(h) == 0 {
		return b, nil
	}
	var err error
	b = append(b, " hash=\""...)
	for i := range h {
		if i > 0 {
			b = append(b, ' ')
		}
		if b, err = appendAttrText(b, h[i].Alg, "hash"); err != nil {
			return b, err
		}
		b = append(b, ':')
		if b, err = appendAttrText(b, h[i].Value, "hash"); err != nil {
			return b, err
		}
	}
	return append(b, '"'), nil
}

// Escape classes of ASCII bytes.
const (
	escNone   = iota // written as is
	escBad           // not an XML character
	escAlways        // escaped in text and attributes
	escAttr          // escaped in attributes only
)

var escClass = func() (t [utf8.RuneSelf]uint8) {
	for c := 0; c < 0x20; c++ {
		t[c] = escBad
	}
	t['\t'], t['\n'] = escAttr, escAttr
	t['\r'] = escAlways // a literal CR would be normalised away by parsers
	t['&'], t['<'], t['>'] = escAlways, escAlways, escAlways
	t['"'] = escAttr
	return t
}()

func escapeOf(c byte) string {
	switch c {
	case '&':
		return "&amp;"
	case '<':
		return "&lt;"
	case '>':
		return "&gt;"
	case '"':
		return "&quot;"
	case '\t':
		return "&#x9;"
	case '\n':
		return "&#xA;"
	case '\r':
		return "&#xD;"
	}
	panic("unreachable")
}

// appendText appends s escaped as character data.
func appendText(b []byte, s, field string) ([]byte, error) { return appendEscaped(b, s, false, field) }

// appendAttrText appends s escaped as a double-quoted attribute value.
func appendAttrText(b []byte, s, field string) ([]byte, error) {
	return appendEscaped(b, s, true, field)
}

func appendEscaped(b []byte, s string, attr bool, field string) ([]byte, error) {
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch escClass[c] {
			case escNone:
				i++
				continue
			case escBad:
				return b, fmt.Errorf("%w: %s: U+%04X at byte %d of %q", ErrInvalidXMLChar, field, c, i, s)
			case escAttr:
				if !attr {
					i++
					continue
				}
			}
			b = append(b, s[last:i]...)
			b = append(b, escapeOf(c)...)
			i++
			last = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return b, fmt.Errorf("%w: %w: %s: byte %d of %q", ErrInvalidXMLChar, ErrInvalidUTF8, field, i, s)
		}
		if r == 0xFFFE || r == 0xFFFF {
			return b, fmt.Errorf("%w: %s: U+%04X at byte %d of %q", ErrInvalidXMLChar, field, r, i, s)
		}
		i += size
	}
	return append(b, s[last:]...), nil
}

// isNCName reports whether s is a non-empty XML name without a colon.
func isNCName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z':
		case i > 0 && (r == '-' || r == '.' || '0' <= r && r <= '9'):
		case r >= 0xC0 && r != utf8.RuneError && r != 0xD7 && r != 0xF7 &&
			(unicode.IsLetter(r) || i > 0 && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r))):
		default:
			return false
		}
	}
	return true
}
