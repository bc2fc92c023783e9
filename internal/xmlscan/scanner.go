package xmlscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// Kind is the kind of a token.
type Kind uint8

// Token kinds. Comments, processing instructions and the XML declaration
// are consumed by the Scanner and never returned.
const (
	StartElement Kind = iota + 1
	EndElement
	CharData // text or CDATA, entity references resolved
)

// XMLNS is the namespace the prefix "xml" is bound to.
const XMLNS = "http://www.w3.org/XML/1998/namespace"

// Name is a namespace-resolved name. Local is valid until the next call
// of Next; Space is a string owned by the Scanner that the caller may keep.
type Name struct {
	Space  string
	Local  []byte
	Prefix []byte // as written; empty when unprefixed
}

// Attr is an attribute of a start tag. Value has entity and character
// references resolved and white space normalised (XML 1.0 §3.3.3). Name
// and Value are valid until the next call of Next. Namespace declarations
// are not included.
type Attr struct {
	Name  Name
	Value []byte
}

// Limits bound what the Scanner accepts. All must be positive.
type Limits struct {
	MaxDepth         int
	MaxAttrs         int
	MaxTokenBytes    int
	MaxDocumentBytes int64 // negative: no limit
}

// Error kinds, matched with errors.Is on *Error.
var (
	ErrSyntax           = errors.New("XML not well-formed")
	ErrDTD              = errors.New("DOCTYPE and entity declarations are not allowed")
	ErrEntity           = errors.New("undefined entity reference")
	ErrDepth            = errors.New("elements nested too deeply")
	ErrAttrs            = errors.New("too many attributes")
	ErrTokenTooLarge    = errors.New("token too large")
	ErrDocumentTooLarge = errors.New("document too large")
	ErrInvalidUTF8      = errors.New("invalid UTF-8")
	ErrInvalidChar      = errors.New("character not allowed in XML")
	ErrEncoding         = errors.New("unsupported character encoding")
	ErrTruncated        = errors.New("document ends before its root element is closed")
)

// Error is a fatal scanning error at a byte offset, with its line and
// column (1-based; column counted in bytes).
type Error struct {
	Offset    int64
	Line, Col int
	Kind      error // one of the Err* values, or the reader's error
	Msg       string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("line %d:%d: %v", e.Line, e.Col, e.Kind)
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

func (e *Error) Unwrap() error { return e.Kind }

type binding struct {
	prefix string
	uri    string
}

type rawAttr struct {
	qname      []byte
	value      []byte // raw, undecoded (slice of buf)
	needDecode bool
}

var errNeedMore = errors.New("need more input")

const minRead = 32 << 10

// Scanner is a namespace-aware XML 1.0 pull tokenizer over an io.Reader. It
// reads UTF-8 only, refuses any DOCTYPE, resolves only the predefined and
// numeric character references, and enforces Limits; every byte of the
// document passes through a bounded buffer, so memory does not depend on
// the document's size. It is not safe for concurrent use.
type Scanner struct {
	r   io.Reader
	lim Limits

	buf   []byte
	pos   int   // next byte to scan
	end   int   // end of valid data
	base  int64 // absolute offset of buf[0]
	rerr  error // error from r, delivered once buf is drained
	atEOF bool

	line      int
	lineStart int64 // absolute offset of the current line's first byte
	counted   int64 // absolute offset up to which newlines are counted

	ns      []binding
	nsMark  []int // len(ns) before each open element
	names   []byte
	nameOff []int // start of each open element's qname in names
	depth   int

	started    bool
	bomChecked bool
	rootSeen   bool
	rootClosed bool
	pendingEnd bool // a self-closing tag's end token is due

	tokStart int64
	kind     Kind
	name     Name
	attrs    []Attr
	raw      []rawAttr
	text     []byte
	scratch  []byte
	abuf     []byte // decoded attribute values

	err error
}

// New returns a Scanner reading r within lim.
func New(r io.Reader, lim Limits) *Scanner {
	return &Scanner{
		r:    r,
		lim:  lim,
		buf:  make([]byte, 64<<10),
		line: 1,
		ns:   []binding{{"xml", XMLNS}, {"", ""}},
	}
}

// Kind returns the kind of the current token.
func (s *Scanner) Kind() Kind { return s.kind }

// Name returns the element name of the current start or end tag.
func (s *Scanner) Name() Name { return s.name }

// Attrs returns the attributes of the current start tag.
func (s *Scanner) Attrs() []Attr { return s.attrs }

// Text returns the current CharData token.
func (s *Scanner) Text() []byte { return s.text }

// Depth returns the element depth: 1 inside the root element's start tag
// and content, 0 outside it. For an EndElement it is the depth of the
// element being closed.
func (s *Scanner) Depth() int { return s.depth }

// TokenOffset returns the absolute byte offset of the current token.
func (s *Scanner) TokenOffset() int64 { return s.tokStart }

// Position returns the line and column (1-based, bytes) of an absolute
// offset at or after the start of the current token.
func (s *Scanner) Position(off int64) (line, col int) {
	s.countTo(off)
	return s.line, int(off-s.lineStart) + 1
}

// Offset returns the number of bytes consumed.
func (s *Scanner) Offset() int64 { return s.base + int64(s.pos) }

// countTo advances newline counting to absolute offset off, which must not
// lie before data already discarded from the buffer.
func (s *Scanner) countTo(off int64) {
	if off <= s.counted {
		return
	}
	from := int(s.counted - s.base)
	to := int(off - s.base)
	if from < 0 {
		from = 0
	}
	if to > s.end {
		to = s.end
	}
	seg := s.buf[from:to]
	for {
		i := bytes.IndexByte(seg, '\n')
		if i < 0 {
			break
		}
		s.line++
		s.lineStart = s.base + int64(from+i+1)
		from += i + 1
		seg = seg[i+1:]
	}
	s.counted = off
}

func (s *Scanner) fail(off int64, kind error, format string, args ...any) error {
	line, col := s.Position(off)
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	s.err = &Error{Offset: off, Line: line, Col: col, Kind: kind, Msg: msg}
	return s.err
}

// fill keeps buf[keep:end], discards the rest, and reads more input. It
// returns io.EOF when nothing more can be read.
func (s *Scanner) fill(keep int) error {
	if s.atEOF {
		return io.EOF
	}
	s.countTo(s.base + int64(keep))
	if keep > 0 {
		n := copy(s.buf, s.buf[keep:s.end])
		s.base += int64(keep)
		s.pos -= keep
		s.end = n
	}
	if len(s.buf)-s.end < minRead {
		if s.end >= s.lim.MaxTokenBytes+4096 {
			return s.fail(s.base, ErrTokenTooLarge, "a token exceeds %d bytes", s.lim.MaxTokenBytes)
		}
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for tries := 0; ; tries++ {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if s.lim.MaxDocumentBytes >= 0 && s.base+int64(s.end) > s.lim.MaxDocumentBytes {
			return s.fail(s.lim.MaxDocumentBytes, ErrDocumentTooLarge, "more than %d bytes", s.lim.MaxDocumentBytes)
		}
		if err != nil {
			s.atEOF = true
			if err != io.EOF {
				s.rerr = err
			}
			if n > 0 {
				return nil
			}
			if s.rerr != nil {
				return s.fail(s.base+int64(s.end), s.rerr, "reading document")
			}
			return io.EOF
		}
		if n > 0 {
			return nil
		}
		if tries > 100 {
			return s.fail(s.base+int64(s.end), io.ErrNoProgress, "reader returns no data")
		}
	}
}

// Next advances to the next token. It returns io.EOF after the root
// element has been closed and only white space, comments and processing
// instructions followed. Every other error is an *Error and is sticky.
func (s *Scanner) Next() (Kind, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.pendingEnd {
		s.pendingEnd = false
		s.kind = EndElement
		s.attrs = s.attrs[:0]
		return EndElement, nil
	}
	if s.kind == EndElement {
		s.popElement()
	}
	for {
		start := s.pos
		k, err := s.scan()
		if err == nil {
			if k == 0 { // consumed something that is not a token
				continue
			}
			s.kind = k
			return k, nil
		}
		if err != errNeedMore {
			return 0, err
		}
		s.pos = start
		if s.atEOF {
			return 0, s.atEnd()
		}
		if ferr := s.fill(start); ferr != nil {
			if ferr != io.EOF {
				return 0, ferr
			}
			if s.pos >= s.end {
				return 0, s.atEnd()
			}
			// Input ended: scan what is left once more, knowing it is all.
		}
	}
}

func (s *Scanner) atEnd() error {
	if s.pos < s.end {
		// A token is incomplete at the end of the input.
		if s.rootSeen && !s.rootClosed {
			return s.fail(s.base+int64(s.pos), ErrTruncated, "incomplete markup at end of input")
		}
		return s.fail(s.base+int64(s.pos), ErrSyntax, "incomplete markup at end of input")
	}
	if !s.rootSeen {
		return s.fail(s.base+int64(s.pos), ErrSyntax, "no root element")
	}
	if !s.rootClosed {
		return s.fail(s.base+int64(s.pos), ErrTruncated, "%d element(s) still open", s.depth)
	}
	s.err = io.EOF
	return io.EOF
}

func (s *Scanner) popElement() {
	if s.depth == 0 {
		return
	}
	s.depth--
	s.names = s.names[:s.nameOff[s.depth]]
	s.nameOff = s.nameOff[:s.depth]
	s.ns = s.ns[:s.nsMark[s.depth]]
	s.nsMark = s.nsMark[:s.depth]
	if s.depth == 0 {
		s.rootClosed = true
	}
	s.kind = 0
}

// scan scans one construct at s.pos. It returns errNeedMore when the
// buffer ends inside it; the caller then rewinds and refills.
func (s *Scanner) scan() (Kind, error) {
	if !s.started {
		if s.end-s.pos < 5 && !s.atEOF {
			return 0, errNeedMore
		}
		b := s.buf[s.pos:s.end]
		if !s.bomChecked && bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}) {
			s.bomChecked = true
			s.pos += 3
			return 0, nil // consumed; look for the declaration next
		}
		s.bomChecked = true
		s.started = true
		switch {
		case bytes.HasPrefix(b, []byte{0xFE, 0xFF}), bytes.HasPrefix(b, []byte{0xFF, 0xFE}),
			bytes.HasPrefix(b, []byte{0, '<'}), bytes.HasPrefix(b, []byte{'<', 0}):
			return 0, s.fail(s.base+int64(s.pos), ErrEncoding, "UTF-16 documents are not supported; convert to UTF-8")
		}
		if bytes.HasPrefix(s.buf[s.pos:s.end], []byte("<?xml")) {
			return s.scanDecl()
		}
	}
	if s.pos >= s.end {
		return 0, errNeedMore
	}
	s.tokStart = s.base + int64(s.pos)
	if s.buf[s.pos] != '<' {
		return s.scanText()
	}
	if s.pos+1 >= s.end {
		return 0, errNeedMore
	}
	switch s.buf[s.pos+1] {
	case '/':
		return s.scanEnd()
	case '?':
		return s.scanPI()
	case '!':
		return s.scanBang()
	}
	return s.scanStart()
}

// limitCheck fails with ErrTokenTooLarge when the construct that started
// at s.pos already spans more than the limit.
func (s *Scanner) tooLarge(n int) error {
	if n > s.lim.MaxTokenBytes {
		return s.fail(s.tokStart, ErrTokenTooLarge, "a token exceeds %d bytes", s.lim.MaxTokenBytes)
	}
	return nil
}

func (s *Scanner) scanDecl() (Kind, error) {
	b := s.buf[s.pos:s.end]
	i := bytes.Index(b, []byte("?>"))
	if i < 0 {
		if err := s.tooLarge(len(b)); err != nil {
			return 0, err
		}
		s.started = false // re-run the BOM/declaration check after refill
		return 0, errNeedMore
	}
	decl := b[5:i]
	if len(decl) > 0 && !isSpace(decl[0]) {
		// "<?xml-stylesheet ...?>" and the like: an ordinary PI.
		s.pos += i + 2
		return 0, nil
	}
	if j := bytes.Index(decl, []byte("encoding")); j >= 0 {
		rest := bytes.TrimLeft(decl[j+8:], " \t\r\n")
		if len(rest) > 0 && rest[0] == '=' {
			rest = bytes.TrimLeft(rest[1:], " \t\r\n")
			if len(rest) > 1 && (rest[0] == '"' || rest[0] == '\'') {
				if k := bytes.IndexByte(rest[1:], rest[0]); k >= 0 {
					enc := string(bytes.ToLower(rest[1 : 1+k]))
					switch enc {
					case "utf-8", "utf8", "us-ascii", "ascii":
					default:
						return 0, s.fail(s.base+int64(s.pos), ErrEncoding, "encoding %q; only UTF-8 is read", rest[1:1+k])
					}
				}
			}
		}
	}
	s.pos += i + 2
	return 0, nil
}

func (s *Scanner) scanPI() (Kind, error) {
	b := s.buf[s.pos:s.end]
	i := bytes.Index(b[2:], []byte("?>"))
	if i < 0 {
		return 0, s.needMoreOrTooLarge(len(b))
	}
	body := b[2 : 2+i]
	if len(body) >= 3 && (body[0]|0x20) == 'x' && (body[1]|0x20) == 'm' && (body[2]|0x20) == 'l' &&
		(len(body) == 3 || isSpace(body[3])) {
		return 0, s.fail(s.tokStart, ErrSyntax, "XML declaration not at the start of the document")
	}
	if _, err := s.checkChars(body, s.tokStart+2); err != nil {
		return 0, err
	}
	s.pos += 2 + i + 2
	return 0, nil
}

func (s *Scanner) needMoreOrTooLarge(n int) error {
	if err := s.tooLarge(n); err != nil {
		return err
	}
	if s.atEOF {
		return s.atEndInside()
	}
	return errNeedMore
}

func (s *Scanner) atEndInside() error {
	if s.rootSeen && !s.rootClosed {
		return s.fail(s.tokStart, ErrTruncated, "incomplete markup at end of input")
	}
	return s.fail(s.tokStart, ErrSyntax, "incomplete markup at end of input")
}

func (s *Scanner) scanBang() (Kind, error) {
	b := s.buf[s.pos:s.end]
	switch {
	case bytes.HasPrefix(b, []byte("<!--")):
		i := bytes.Index(b[4:], []byte("--"))
		for i >= 0 && 4+i+2 < len(b) && b[4+i+2] != '>' {
			return 0, s.fail(s.tokStart+int64(4+i), ErrSyntax, "'--' inside a comment")
		}
		if i < 0 || 4+i+2 >= len(b) {
			return 0, s.needMoreOrTooLarge(len(b))
		}
		if _, err := s.checkChars(b[4:4+i], s.tokStart+4); err != nil {
			return 0, err
		}
		s.pos += 4 + i + 3
		return 0, nil
	case bytes.HasPrefix(b, []byte("<![CDATA[")):
		if s.depth == 0 {
			return 0, s.fail(s.tokStart, ErrSyntax, "CDATA section outside the root element")
		}
		i := bytes.Index(b[9:], []byte("]]>"))
		if i < 0 {
			return 0, s.needMoreOrTooLarge(len(b))
		}
		t := b[9 : 9+i]
		if _, err := s.checkChars(t, s.tokStart+9); err != nil {
			return 0, err
		}
		if bytes.IndexByte(t, '\r') >= 0 {
			s.scratch = normalizeNewlines(s.scratch[:0], t)
			t = s.scratch
		}
		s.text = t
		s.pos += 9 + i + 3
		return CharData, nil
	case len(b) < 9:
		if s.atEOF {
			return 0, s.fail(s.tokStart, ErrSyntax, "unknown markup declaration")
		}
		return 0, errNeedMore
	case bytes.HasPrefix(b, []byte("<!DOCTYPE")):
		return 0, s.fail(s.tokStart, ErrDTD, "document type declarations are refused (no entity expansion, no external fetch)")
	case bytes.HasPrefix(b, []byte("<!ENTITY")), bytes.HasPrefix(b, []byte("<!ELEMENT")),
		bytes.HasPrefix(b, []byte("<!ATTLIST")), bytes.HasPrefix(b, []byte("<!NOTATION")):
		return 0, s.fail(s.tokStart, ErrDTD, "markup declarations are refused")
	}
	return 0, s.fail(s.tokStart, ErrSyntax, "unknown markup declaration")
}

func (s *Scanner) scanText() (Kind, error) {
	b := s.buf[s.pos:s.end]
	i := bytes.IndexByte(b, '<')
	if i < 0 {
		if err := s.tooLarge(len(b)); err != nil {
			return 0, err
		}
		if s.atEOF {
			i = len(b)
		} else {
			return 0, errNeedMore
		}
	}
	if err := s.tooLarge(i); err != nil {
		return 0, err
	}
	raw := b[:i]
	if s.depth == 0 {
		for k, c := range raw {
			if !isSpace(c) {
				return 0, s.fail(s.tokStart+int64(k), ErrSyntax, "text outside the root element")
			}
		}
		s.pos += i
		return 0, nil
	}
	t, err := s.decodeText(raw, s.tokStart, false)
	if err != nil {
		return 0, err
	}
	s.text = t
	s.pos += i
	return CharData, nil
}

func (s *Scanner) scanEnd() (Kind, error) {
	b := s.buf[s.pos:s.end]
	i := bytes.IndexByte(b, '>')
	if i < 0 {
		return 0, s.needMoreOrTooLarge(len(b))
	}
	q := b[2:i]
	for len(q) > 0 && isSpace(q[len(q)-1]) {
		q = q[:len(q)-1]
	}
	if s.depth == 0 {
		return 0, s.fail(s.tokStart, ErrSyntax, "end tag </%s> without a start tag", q)
	}
	open := s.names[s.nameOff[s.depth-1]:]
	if !bytes.Equal(q, open) {
		return 0, s.fail(s.tokStart, ErrSyntax, "end tag </%s> does not match <%s>", q, open)
	}
	s.name = s.resolveElem(q)
	s.attrs = s.attrs[:0]
	s.pos += i + 1
	return EndElement, nil
}

func (s *Scanner) scanStart() (Kind, error) {
	b := s.buf[s.pos:s.end]
	if s.rootClosed {
		return 0, s.fail(s.tokStart, ErrSyntax, "element after the end of the root element")
	}
	p := 1
	n := scanName(b[p:])
	if n < 0 {
		return 0, s.needMoreOrTooLarge(len(b))
	}
	if n == 0 {
		return 0, s.fail(s.tokStart+1, ErrSyntax, "expected an element name after '<'")
	}
	qname := b[p : p+n]
	p += n
	s.raw = s.raw[:0]
	selfClose := false
	for {
		ws := p
		for p < len(b) && isSpace(b[p]) {
			p++
		}
		if p >= len(b) {
			return 0, s.needMoreOrTooLarge(len(b))
		}
		c := b[p]
		if c == '>' {
			p++
			break
		}
		if c == '/' {
			if p+1 >= len(b) {
				return 0, s.needMoreOrTooLarge(len(b))
			}
			if b[p+1] != '>' {
				return 0, s.fail(s.tokStart+int64(p), ErrSyntax, "expected '/>'")
			}
			p += 2
			selfClose = true
			break
		}
		if ws == p {
			return 0, s.fail(s.tokStart+int64(p), ErrSyntax, "expected white space before an attribute")
		}
		an := scanName(b[p:])
		if an < 0 {
			return 0, s.needMoreOrTooLarge(len(b))
		}
		if an == 0 {
			return 0, s.fail(s.tokStart+int64(p), ErrSyntax, "invalid character %q in a start tag", c)
		}
		aq := b[p : p+an]
		p += an
		for p < len(b) && isSpace(b[p]) {
			p++
		}
		if p >= len(b) {
			return 0, s.needMoreOrTooLarge(len(b))
		}
		if b[p] != '=' {
			return 0, s.fail(s.tokStart+int64(p), ErrSyntax, "expected '=' after attribute %s", aq)
		}
		p++
		for p < len(b) && isSpace(b[p]) {
			p++
		}
		if p >= len(b) {
			return 0, s.needMoreOrTooLarge(len(b))
		}
		q := b[p]
		if q != '"' && q != '\'' {
			return 0, s.fail(s.tokStart+int64(p), ErrSyntax, "attribute value of %s not quoted", aq)
		}
		j := bytes.IndexByte(b[p+1:], q)
		if j < 0 {
			return 0, s.needMoreOrTooLarge(len(b))
		}
		val := b[p+1 : p+1+j]
		if len(s.raw) >= s.lim.MaxAttrs {
			return 0, s.fail(s.tokStart, ErrAttrs, "more than %d attributes on <%s>", s.lim.MaxAttrs, qname)
		}
		s.raw = append(s.raw, rawAttr{qname: aq, value: val})
		if err := s.tooLarge(j); err != nil {
			return 0, err
		}
		p += 1 + j + 1
		if err := s.tooLarge(p); err != nil {
			return 0, err
		}
	}
	if err := s.tooLarge(p); err != nil {
		return 0, err
	}
	// The whole tag is in the buffer: now check and resolve it.
	if s.depth >= s.lim.MaxDepth {
		return 0, s.fail(s.tokStart, ErrDepth, "more than %d levels", s.lim.MaxDepth)
	}
	if !utf8.Valid(qname) {
		return 0, s.fail(s.tokStart+1, ErrInvalidUTF8, "in an element name")
	}
	s.nsMark = append(s.nsMark, len(s.ns))
	s.nameOff = append(s.nameOff, len(s.names))
	s.names = append(s.names, qname...)
	s.depth++
	if s.depth == 1 {
		s.rootSeen = true
	}
	// Namespace declarations first, then values.
	s.abuf = s.abuf[:0]
	type span struct{ a, b int }
	var spans [16]span
	sp := spans[:0]
	for k := range s.raw {
		ra := &s.raw[k]
		start := len(s.abuf)
		var err error
		s.abuf, err = s.decodeAttr(s.abuf, ra.value, s.tokStart)
		if err != nil {
			return 0, err
		}
		sp = append(sp, span{start, len(s.abuf)})
		for k2 := 0; k2 < k; k2++ {
			if bytes.Equal(s.raw[k2].qname, ra.qname) {
				return 0, s.fail(s.tokStart, ErrSyntax, "attribute %s given twice on <%s>", ra.qname, qname)
			}
		}
		switch {
		case bytes.Equal(ra.qname, []byte("xmlns")):
			s.ns = append(s.ns, binding{"", string(s.abuf[start:])})
		case bytes.HasPrefix(ra.qname, []byte("xmlns:")):
			pfx := ra.qname[6:]
			uri := s.abuf[start:]
			if len(uri) == 0 {
				return 0, s.fail(s.tokStart, ErrSyntax, "prefix %s bound to an empty namespace", pfx)
			}
			s.ns = append(s.ns, binding{string(pfx), string(uri)})
		}
	}
	s.name = s.resolveElem(qname)
	if s.name.Space == "\x00" {
		return 0, s.fail(s.tokStart, ErrSyntax, "undeclared namespace prefix %s", s.name.Prefix)
	}
	s.attrs = s.attrs[:0]
	for k := range s.raw {
		ra := &s.raw[k]
		if bytes.Equal(ra.qname, []byte("xmlns")) || bytes.HasPrefix(ra.qname, []byte("xmlns:")) {
			continue
		}
		var nm Name
		if c := bytes.IndexByte(ra.qname, ':'); c >= 0 {
			uri, ok := s.lookup(ra.qname[:c])
			if !ok {
				return 0, s.fail(s.tokStart, ErrSyntax, "undeclared namespace prefix %s", ra.qname[:c])
			}
			nm = Name{Space: uri, Local: ra.qname[c+1:], Prefix: ra.qname[:c]}
		} else {
			nm = Name{Local: ra.qname}
		}
		s.attrs = append(s.attrs, Attr{Name: nm, Value: s.abuf[sp[k].a:sp[k].b]})
	}
	// Attributes with the same expanded name are also an error (Namespaces §6.3).
	for i := 1; i < len(s.attrs); i++ {
		for j := 0; j < i; j++ {
			if s.attrs[i].Name.Space != "" && s.attrs[i].Name.Space == s.attrs[j].Name.Space &&
				bytes.Equal(s.attrs[i].Name.Local, s.attrs[j].Name.Local) {
				return 0, s.fail(s.tokStart, ErrSyntax, "attribute {%s}%s given twice", s.attrs[i].Name.Space, s.attrs[i].Name.Local)
			}
		}
	}
	s.pos += p
	if selfClose {
		s.pendingEnd = true
	}
	return StartElement, nil
}

func (s *Scanner) resolveElem(q []byte) Name {
	if c := bytes.IndexByte(q, ':'); c >= 0 {
		uri, ok := s.lookup(q[:c])
		if !ok {
			return Name{Space: "\x00", Local: q[c+1:], Prefix: q[:c]}
		}
		return Name{Space: uri, Local: q[c+1:], Prefix: q[:c]}
	}
	uri, _ := s.lookup(nil)
	return Name{Space: uri, Local: q}
}

func (s *Scanner) lookup(prefix []byte) (string, bool) {
	for i := len(s.ns) - 1; i >= 0; i-- {
		if s.ns[i].prefix == string(prefix) {
			return s.ns[i].uri, true
		}
	}
	return "", false
}

// scanName returns the length of the XML name at the start of b, 0 if b
// does not start with a name, or -1 if b ends inside the name.
func scanName(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	if !isNameStart(b[0]) {
		return 0
	}
	for i := 1; i < len(b); i++ {
		if !isNameByte(b[i]) {
			return i
		}
	}
	return -1
}

var nameStart, nameByte [256]bool

func init() {
	for c := 0; c < 256; c++ {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || c >= 0x80
		nameStart[c] = ok
		nameByte[c] = ok || c >= '0' && c <= '9' || c == '-' || c == '.'
	}
}

func isNameStart(c byte) bool { return nameStart[c] }
func isNameByte(c byte) bool  { return nameByte[c] }
func isSpace(c byte) bool     { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// checkChars verifies that b is UTF-8 made of XML Char code points. It
// reports whether b holds a byte that decoding must rewrite ('&', '\t',
// '\n' or '\r').
func (s *Scanner) checkChars(b []byte, off int64) (bool, error) {
	special := false
	i := 0
	// Fast path: eight bytes at a time while they are printable ASCII
	// other than '&' (SWAR: no byte >= 0x80, < 0x20 or == '&').
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		const lo, hi = 0x0101010101010101, 0x8080808080808080
		amp := w ^ (0x26 * lo)
		if (w|((w-0x20*lo)&^w)|((amp-lo)&^amp))&hi != 0 {
			break
		}
	}
	for i < len(b) {
		c := b[i]
		if c >= 0x20 && c < 0x80 {
			if c == '&' {
				special = true
			}
			i++
			continue
		}
		if c < 0x20 {
			if c != '\t' && c != '\n' && c != '\r' {
				return false, s.fail(off+int64(i), ErrInvalidChar, "control character %#x", c)
			}
			special = true
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return false, s.fail(off+int64(i), ErrInvalidUTF8, "byte %#x", c)
		}
		if r == 0xFFFE || r == 0xFFFF {
			return false, s.fail(off+int64(i), ErrInvalidChar, "code point %U", r)
		}
		i += size
	}
	return special, nil
}

// decodeText checks raw text and resolves references in it.
func (s *Scanner) decodeText(raw []byte, off int64, _ bool) ([]byte, error) {
	special, err := s.checkChars(raw, off)
	if err != nil {
		return nil, err
	}
	if !special || bytes.IndexByte(raw, '&') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		if i := bytes.Index(raw, []byte("]]>")); i >= 0 {
			return nil, s.fail(off+int64(i), ErrSyntax, "']]>' in text")
		}
		return raw, nil
	}
	out, err := s.resolveRefs(s.scratch[:0], raw, off, false)
	if err != nil {
		return nil, err
	}
	s.scratch = out
	return out, nil
}

// decodeAttr appends the normalised value of a raw attribute value to dst.
func (s *Scanner) decodeAttr(dst, raw []byte, off int64) ([]byte, error) {
	special, err := s.checkChars(raw, off)
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(raw, '<') >= 0 {
		return nil, s.fail(off, ErrSyntax, "'<' in an attribute value")
	}
	if !special {
		return append(dst, raw...), nil
	}
	return s.resolveRefs(dst, raw, off, true)
}

// resolveRefs appends raw to dst resolving references; in attributes it
// also maps literal white space to spaces.
func (s *Scanner) resolveRefs(dst, raw []byte, off int64, attr bool) ([]byte, error) {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch c {
		case '\r':
			if i+1 < len(raw) && raw[i+1] == '\n' {
				i++
			}
			if attr {
				dst = append(dst, ' ')
			} else {
				dst = append(dst, '\n')
			}
			continue
		case '\n', '\t':
			if attr {
				dst = append(dst, ' ')
				continue
			}
		case '&':
			j := bytes.IndexByte(raw[i:], ';')
			if j < 0 {
				return nil, s.fail(off+int64(i), ErrSyntax, "'&' not starting a reference (write &amp;)")
			}
			ref := raw[i+1 : i+j]
			var ok bool
			dst, ok = appendRef(dst, ref)
			if !ok {
				if len(ref) > 0 && ref[0] == '#' {
					return nil, s.fail(off+int64(i), ErrSyntax, "invalid character reference &%s;", ref)
				}
				return nil, s.fail(off+int64(i), ErrEntity, "&%s; (only the five predefined entities are defined)", ref)
			}
			i += j
			continue
		}
		dst = append(dst, c)
	}
	return dst, nil
}

func appendRef(dst, ref []byte) ([]byte, bool) {
	switch string(ref) {
	case "lt":
		return append(dst, '<'), true
	case "gt":
		return append(dst, '>'), true
	case "amp":
		return append(dst, '&'), true
	case "apos":
		return append(dst, '\''), true
	case "quot":
		return append(dst, '"'), true
	}
	if len(ref) < 2 || ref[0] != '#' {
		return dst, false
	}
	var r rune
	digits := ref[1:]
	base := rune(10)
	if digits[0] == 'x' {
		base = 16
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 8 {
		return dst, false
	}
	for _, c := range digits {
		var v rune
		switch {
		case c >= '0' && c <= '9':
			v = rune(c - '0')
		case base == 16 && c >= 'a' && c <= 'f':
			v = rune(c-'a') + 10
		case base == 16 && c >= 'A' && c <= 'F':
			v = rune(c-'A') + 10
		default:
			return dst, false
		}
		r = r*base + v
	}
	if !isXMLChar(r) {
		return dst, false
	}
	return utf8.AppendRune(dst, r), true
}

func isXMLChar(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

func normalizeNewlines(dst, b []byte) []byte {
	for i := 0; i < len(b); i++ {
		if b[i] == '\r' {
			if i+1 < len(b) && b[i+1] == '\n' {
				i++
			}
			dst = append(dst, '\n')
			continue
		}
		dst = append(dst, b[i])
	}
	return dst
}
