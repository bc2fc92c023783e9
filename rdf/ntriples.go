package rdf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"unicode/utf8"
)

// ErrSyntax is the sentinel every *SyntaxError unwraps to, so callers can
// tell malformed input from I/O failures with errors.Is.
var ErrSyntax = errors.New("rdf: syntax error")

// ErrInvalidTriple is returned by a Writer for a triple that no RDF syntax
// can express: a zero term, a literal subject, a non-IRI predicate.
var ErrInvalidTriple = errors.New("rdf: invalid triple")

// ErrLimit is what a *SyntaxError about a reader limit also unwraps to:
// a token, a line or the nesting too large, or the bytes a reader keeps
// from one statement to the next (prefixes, namespaces, base IRIs, the
// subjects and predicates of open [ ] and ( ) or elements) beyond
// MaxRetainedBytes. Such a document is refused, not misread; errors.Is
// tells it from malformed input where a caller cares (errors.Is(err,
// ErrSyntax) holds as well).
var ErrLimit = errors.New("rdf: document exceeds a reader limit")

// MaxRetainedBytes bounds the bytes a reader keeps across tokens: the
// Turtle prefix map, base IRI and the terms held open by nested [ ] and
// ( ); the RDF/XML namespace declarations, xml:base, xml:lang, the element
// names, subjects and predicates of the open elements and the text of an
// open property element. Each single token is bounded on its own (16
// MiB), so a reader's memory stays within a small multiple of this
// whatever the document. 64 MiB holds thousands of ordinary prefixes and
// any sane nesting with room to spare.
const MaxRetainedBytes = 64 << 20

// SyntaxError says where a document is malformed. Line and Col are 1-based;
// Col counts characters (runes), not bytes. Line is 0 when the error is
// not about a position in a document (ParseTerm).
type SyntaxError struct {
	Line, Col int
	Msg       string
	// Limit marks a document refused for a reader limit (ErrLimit)
	// rather than for its syntax.
	Limit bool
}

func (e *SyntaxError) Error() string {
	what := "syntax error"
	if e.Limit {
		what = "limit exceeded"
	}
	if e.Line == 0 {
		return fmt.Sprintf("rdf: %s at column %d: %s", what, e.Col, e.Msg)
	}
	return fmt.Sprintf("rdf: %s at line %d, column %d: %s", what, e.Line, e.Col, e.Msg)
}

// Unwrap makes errors.Is(err, ErrSyntax) true, and errors.Is(err,
// ErrLimit) for a limit.
func (e *SyntaxError) Unwrap() []error {
	if e.Limit {
		return []error{ErrSyntax, ErrLimit}
	}
	return []error{ErrSyntax}
}

// MaxNTriplesLine bounds one N-Triples line, so that a hostile or broken
// document without newlines cannot make the reader buffer it whole.
const MaxNTriplesLine = 16 << 20

// parseNTriples reads an N-Triples document line by line. Memory is bounded
// by the longest line (at most MaxNTriplesLine). The first error (syntax or
// read) is yielded once and ends the iteration.
func parseNTriples(r io.Reader) iter.Seq2[Triple, error] {
	return func(yield func(Triple, error) bool) {
		br := bufio.NewReaderSize(r, 64<<10)
		p := ntParser{}
		var long []byte // accumulates a line longer than br's buffer
		for {
			chunk, err := br.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				if len(long)+len(chunk) > MaxNTriplesLine {
					yield(Triple{}, &SyntaxError{Line: p.line + 1, Col: 1, Msg: fmt.Sprintf("line longer than %d bytes", MaxNTriplesLine), Limit: true})
					return
				}
				long = append(long, chunk...)
				continue
			}
			line := chunk
			if len(long) > 0 {
				long = append(long, chunk...)
				line = long
				if len(line) > MaxNTriplesLine {
					yield(Triple{}, &SyntaxError{Line: p.line + 1, Col: 1, Msg: fmt.Sprintf("line longer than %d bytes", MaxNTriplesLine), Limit: true})
					return
				}
			}
			if p.line == 0 && len(p.lastSRaw) == 0 {
				// A byte order mark some editors write is not part of the
				// first line.
				line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
			}
			if len(line) > 0 {
				if !p.lines(line, yield) {
					return
				}
			}
			long = long[:0]
			if len(long) == 0 && cap(long) > 1<<20 {
				long = nil // do not keep a huge buffer after one long line
			}
			if err != nil {
				if err != io.EOF {
					yield(Triple{}, fmt.Errorf("rdf: reading n-triples after line %d: %w", p.line, err))
				}
				return
			}
		}
	}
}

// ntParser holds the per-document state: the line number and the last
// subject and predicate, whose strings are reused when the next triple
// repeats them (the common case in sorted dumps) to save allocations.
type ntParser struct {
	line     int
	lastS    Term
	lastP    Term
	scratch  []byte
	lastSRaw []byte
	lastPRaw []byte
}

// lines parses a chunk ending in "\n" (or at EOF). A chunk may hold more
// than one line when lines end in a lone "\r".
func (p *ntParser) lines(chunk []byte, yield func(Triple, error) bool) bool {
	for len(chunk) > 0 {
		var line []byte
		i := bytes.IndexAny(chunk, "\r\n")
		if i < 0 {
			line, chunk = chunk, nil
		} else {
			line = chunk[:i]
			j := i + 1
			if chunk[i] == '\r' && j < len(chunk) && chunk[j] == '\n' {
				j++
			}
			chunk = chunk[j:]
		}
		p.line++
		t, ok, err := p.parseLine(line)
		if err != nil {
			yield(Triple{}, err)
			return false
		}
		if ok && !yield(t, nil) {
			return false
		}
	}
	return true
}

// ntScanner parses terms out of one line.
type ntScanner struct {
	b       []byte
	pos     int
	line    int
	scratch *[]byte
}

func (s *ntScanner) errAt(pos int, format string, args ...any) error {
	if pos > len(s.b) {
		pos = len(s.b)
	}
	return &SyntaxError{Line: s.line, Col: utf8.RuneCount(s.b[:pos]) + 1, Msg: fmt.Sprintf(format, args...)}
}

func (s *ntScanner) skipWS() {
	for s.pos < len(s.b) && (s.b[s.pos] == ' ' || s.b[s.pos] == '\t') {
		s.pos++
	}
}

func (p *ntParser) parseLine(line []byte) (Triple, bool, error) {
	s := ntScanner{b: line, line: p.line, scratch: &p.scratch}
	s.skipWS()
	if s.pos == len(line) || line[s.pos] == '#' {
		return Triple{}, false, nil
	}
	if !utf8.Valid(line) {
		i := 0
		for i < len(line) {
			r, n := utf8.DecodeRune(line[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return Triple{}, false, s.errAt(i, "invalid UTF-8")
	}
	var t Triple
	var err error
	// Subject, reusing the previous subject's string when it repeats
	// (IRIs only: a blank label "_:b1" is a prefix of "_:b10").
	start := s.pos
	switch line[s.pos] {
	case '<':
		if raw, ok := s.sameAs(p.lastSRaw); ok && p.lastS.Kind == KindIRI {
			t.S = p.lastS
			s.pos += len(raw)
		} else {
			if t.S, err = s.iri(); err != nil {
				return t, false, err
			}
			p.lastS, p.lastSRaw = t.S, append(p.lastSRaw[:0], line[start:s.pos]...)
		}
	case '_':
		if t.S, err = s.blank(); err != nil {
			return t, false, err
		}
	case '"':
		return t, false, s.errAt(s.pos, "a literal cannot be a subject")
	default:
		return t, false, s.errAt(s.pos, "expected a subject (IRI or blank node), found %s", s.what())
	}
	s.skipWS()
	if s.pos == len(line) {
		return t, false, s.errAt(s.pos, "expected a predicate, found end of line")
	}
	if line[s.pos] != '<' {
		return t, false, s.errAt(s.pos, "expected a predicate (IRI), found %s", s.what())
	}
	start = s.pos
	if raw, ok := s.sameAs(p.lastPRaw); ok && p.lastP.Kind != KindNone {
		t.P = p.lastP
		s.pos += len(raw)
	} else {
		if t.P, err = s.iri(); err != nil {
			return t, false, err
		}
		p.lastP, p.lastPRaw = t.P, append(p.lastPRaw[:0], line[start:s.pos]...)
	}
	s.skipWS()
	if s.pos == len(line) {
		return t, false, s.errAt(s.pos, "expected an object, found end of line")
	}
	switch line[s.pos] {
	case '<':
		t.O, err = s.iri()
	case '_':
		t.O, err = s.blank()
	case '"':
		t.O, err = s.literal()
	default:
		return t, false, s.errAt(s.pos, "expected an object (IRI, blank node or literal), found %s", s.what())
	}
	if err != nil {
		return t, false, err
	}
	s.skipWS()
	if s.pos == len(line) {
		return t, false, s.errAt(s.pos, "expected '.' at the end of the triple, found end of line")
	}
	switch line[s.pos] {
	case '.':
		s.pos++
	case '<', '_':
		return t, false, s.errAt(s.pos, "a fourth term (graph label) is N-Quads, not N-Triples")
	default:
		return t, false, s.errAt(s.pos, "expected '.' at the end of the triple, found %s", s.what())
	}
	s.skipWS()
	if s.pos < len(line) && line[s.pos] != '#' {
		return t, false, s.errAt(s.pos, "unexpected %s after the end of the triple", s.what())
	}
	return t, true, nil
}

// sameAs reports whether the line continues with raw.
func (s *ntScanner) sameAs(raw []byte) ([]byte, bool) {
	if len(raw) == 0 || !bytes.HasPrefix(s.b[s.pos:], raw) {
		return nil, false
	}
	return raw, true
}

// what describes the character at s.pos for an error message.
func (s *ntScanner) what() string {
	if s.pos >= len(s.b) {
		return "end of line"
	}
	r, _ := utf8.DecodeRune(s.b[s.pos:])
	return fmt.Sprintf("%q", r)
}

// iri parses an IRIREF at s.pos (which is '<').
func (s *ntScanner) iri() (Term, error) {
	start := s.pos
	s.pos++
	i := s.pos
	b := s.b
	for i < len(b) {
		c := b[i]
		if c == '>' {
			v := string(b[s.pos:i])
			s.pos = i + 1
			if !hasScheme(v) {
				return Term{}, s.errAt(start, "relative IRI <%s> (N-Triples needs absolute IRIs)", v)
			}
			return Term{Kind: KindIRI, Value: v}, nil
		}
		if c == '\\' {
			return s.iriSlow(start)
		}
		if c <= 0x20 || c == '<' || c == '"' || c == '{' || c == '}' || c == '|' || c == '^' || c == '`' {
			return Term{}, s.errAt(i, "character %q not allowed in an IRI", rune(c))
		}
		i++
	}
	return Term{}, s.errAt(start, "unterminated IRI (missing '>')")
}

// iriSlow parses an IRI containing \u escapes.
func (s *ntScanner) iriSlow(start int) (Term, error) {
	buf := (*s.scratch)[:0]
	i := start + 1
	b := s.b
	for i < len(b) {
		c := b[i]
		switch {
		case c == '>':
			v := string(buf)
			*s.scratch = buf
			s.pos = i + 1
			if !hasScheme(v) {
				return Term{}, s.errAt(start, "relative IRI <%s> (N-Triples needs absolute IRIs)", v)
			}
			return Term{Kind: KindIRI, Value: v}, nil
		case c == '\\':
			r, n, err := s.uchar(i)
			if err != nil {
				return Term{}, err
			}
			buf = utf8.AppendRune(buf, r)
			i += n
		case c <= 0x20 || c == '<' || c == '"' || c == '{' || c == '}' || c == '|' || c == '^' || c == '`':
			return Term{}, s.errAt(i, "character %q not allowed in an IRI", rune(c))
		default:
			buf = append(buf, c)
			i++
		}
	}
	*s.scratch = buf
	return Term{}, s.errAt(start, "unterminated IRI (missing '>')")
}

// uchar decodes \uXXXX or \UXXXXXXXX at i, returning the rune and the
// number of bytes consumed.
func (s *ntScanner) uchar(i int) (rune, int, error) {
	b := s.b
	if i+1 >= len(b) {
		return 0, 0, s.errAt(i, "incomplete escape")
	}
	var n int
	switch b[i+1] {
	case 'u':
		n = 4
	case 'U':
		n = 8
	default:
		return 0, 0, s.errAt(i, "invalid escape \\%c (only \\u and \\U here)", b[i+1])
	}
	if i+2+n > len(b) {
		return 0, 0, s.errAt(i, "incomplete \\%c escape", b[i+1])
	}
	var r rune
	for _, c := range b[i+2 : i+2+n] {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, 0, s.errAt(i, "invalid hex digit %q in \\%c escape", rune(c), b[i+1])
		}
		r = r<<4 | rune(d)
	}
	if r > utf8.MaxRune || (0xD800 <= r && r <= 0xDFFF) {
		return 0, 0, s.errAt(i, "escape \\%c%s is not a Unicode scalar value", b[i+1], b[i+2:i+2+n])
	}
	return r, 2 + n, nil
}

// hasScheme reports whether v starts with an IRI scheme and ':'.
func hasScheme(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return true
		default:
			return false
		}
	}
	return false
}

// blank parses a BLANK_NODE_LABEL at s.pos (which is '_').
func (s *ntScanner) blank() (Term, error) {
	start := s.pos
	b := s.b
	if start+1 >= len(b) || b[start+1] != ':' {
		return Term{}, s.errAt(start, "expected '_:' to start a blank node label")
	}
	i := start + 2
	n := blankLabelLen(b[i:])
	if n == 0 {
		return Term{}, s.errAt(i, "empty or invalid blank node label")
	}
	s.pos = i + n
	return Term{Kind: KindBlank, Value: string(b[i : i+n])}, nil
}

// blankLabelLen returns the length of the longest valid blank node label
// (without "_:") at the start of b: it may not start with '-', '.' or
// U+00B7 etc. and may not end with '.'.
func blankLabelLen(b []byte) int {
	i, end := 0, 0
	for i < len(b) {
		c := b[i]
		var r rune
		n := 1
		if c < utf8.RuneSelf {
			r = rune(c)
		} else {
			r, n = utf8.DecodeRune(b[i:])
		}
		if i == 0 {
			if !isPNCharsU(r) && !('0' <= r && r <= '9') {
				return 0
			}
		} else if r != '.' && !isPNChars(r) {
			break
		}
		i += n
		if r != '.' {
			end = i
		}
	}
	return end
}

func isPNCharsBase(r rune) bool {
	switch {
	case 'A' <= r && r <= 'Z', 'a' <= r && r <= 'z':
		return true
	case r < 0xC0:
		return false
	}
	return 0xC0 <= r && r <= 0xD6 || 0xD8 <= r && r <= 0xF6 || 0xF8 <= r && r <= 0x2FF ||
		0x370 <= r && r <= 0x37D || 0x37F <= r && r <= 0x1FFF || 0x200C <= r && r <= 0x200D ||
		0x2070 <= r && r <= 0x218F || 0x2C00 <= r && r <= 0x2FEF || 0x3001 <= r && r <= 0xD7FF ||
		0xF900 <= r && r <= 0xFDCF || 0xFDF0 <= r && r <= 0xFFFD || 0x10000 <= r && r <= 0xEFFFF
}

// isPNCharsU follows Turtle and the W3C N-Triples tests (nt-syntax-bad-bnode-01/02):
// no ':' in blank node labels, although the N-Triples REC's grammar lists it.
func isPNCharsU(r rune) bool { return r == '_' || isPNCharsBase(r) }

func isPNChars(r rune) bool {
	return isPNCharsU(r) || r == '-' || '0' <= r && r <= '9' || r == 0xB7 ||
		0x300 <= r && r <= 0x36F || 0x203F <= r && r <= 0x2040
}

// literal parses a STRING_LITERAL_QUOTE with its optional language tag or
// datatype at s.pos (which is '"').
func (s *ntScanner) literal() (Term, error) {
	start := s.pos
	b := s.b
	i := start + 1
	var lex string
	for {
		if i >= len(b) {
			return Term{}, s.errAt(start, "unterminated string literal")
		}
		c := b[i]
		if c == '"' {
			lex = string(b[start+1 : i])
			i++
			break
		}
		if c == '\\' {
			var err error
			lex, i, err = s.literalSlow(start)
			if err != nil {
				return Term{}, err
			}
			break
		}
		i++
	}
	s.pos = i
	// RDF 1.2 (and a reading of 1.1: '^^' and LANGTAG are tokens) allows
	// white space before the language tag or datatype.
	for j := i; j < len(b); j++ {
		if b[j] == '@' || b[j] == '^' {
			i = j
			break
		}
		if b[j] != ' ' && b[j] != '\t' {
			break
		}
	}
	if i < len(b) && b[i] == '@' {
		j := i + 1
		for j < len(b) && ('a' <= b[j] && b[j] <= 'z' || 'A' <= b[j] && b[j] <= 'Z') {
			j++
		}
		if j == i+1 {
			return Term{}, s.errAt(i, "empty or invalid language tag")
		}
		for j < len(b) && b[j] == '-' {
			k := j + 1
			for k < len(b) && ('a' <= b[k] && b[k] <= 'z' || 'A' <= b[k] && b[k] <= 'Z' || '0' <= b[k] && b[k] <= '9') {
				k++
			}
			if k == j+1 {
				return Term{}, s.errAt(j, "empty subtag in language tag")
			}
			j = k
		}
		s.pos = j
		return Term{Kind: KindLiteral, Value: lex, Lang: lowerASCII(b[i+1 : j]), Datatype: RDFLangString}, nil
	}
	if i+1 < len(b) && b[i] == '^' && b[i+1] == '^' {
		s.pos = i + 2
		s.skipWS()
		if s.pos >= len(b) || b[s.pos] != '<' {
			return Term{}, s.errAt(s.pos, "expected a datatype IRI after '^^'")
		}
		dt, err := s.iri()
		if err != nil {
			return Term{}, err
		}
		return Term{Kind: KindLiteral, Value: lex, Datatype: dt.Value}, nil
	}
	if i < len(b) && b[i] == '^' {
		return Term{}, s.errAt(i, "expected '^^' before a datatype")
	}
	return Term{Kind: KindLiteral, Value: lex, Datatype: XSDString}, nil
}

// echar maps the letter after a backslash (ECHAR) to the character it
// stands for; 0 means not an ECHAR.
var echar = [256]byte{'t': '\t', 'b': '\b', 'n': '\n', 'r': '\r', 'f': '\f', '"': '"', '\'': '\'', '\\': '\\'}

// echarOut is the inverse of echar for the writer, without \' (a
// literal in double quotes holds ' directly).
var echarOut = [256]byte{'\t': 't', '\b': 'b', '\n': 'n', '\r': 'r', '\f': 'f', '"': '"', '\\': '\\'}

// literalSlow decodes a literal with escapes; it returns the lexical form
// and the index after the closing quote.
func (s *ntScanner) literalSlow(start int) (string, int, error) {
	b := s.b
	buf := (*s.scratch)[:0]
	defer func() { *s.scratch = buf }()
	i := start + 1
	for i < len(b) {
		c := b[i]
		switch c {
		case '"':
			return string(buf), i + 1, nil
		case '\\':
			if i+1 >= len(b) {
				return "", 0, s.errAt(i, "incomplete escape")
			}
			if d := echar[b[i+1]]; d != 0 {
				buf = append(buf, d)
				i += 2
				continue
			}
			if b[i+1] != 'u' && b[i+1] != 'U' {
				return "", 0, s.errAt(i, "invalid escape \\%c", b[i+1])
			}
			r, n, err := s.uchar(i)
			if err != nil {
				return "", 0, err
			}
			buf = utf8.AppendRune(buf, r)
			i += n
		default:
			buf = append(buf, c)
			i++
		}
	}
	return "", 0, s.errAt(start, "unterminated string literal")
}

func lowerASCII(b []byte) string {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			return strings.ToLower(string(b))
		}
	}
	return string(b)
}

// ParseTerm parses one term in N-Triples syntax, the inverse of
// Term.String. Surrounding spaces and tabs are ignored; anything else
// after the term is an error.
func ParseTerm(str string) (Term, error) {
	var scratch []byte
	s := ntScanner{b: []byte(str), scratch: &scratch}
	s.skipWS()
	if s.pos == len(s.b) {
		return Term{}, s.errAt(s.pos, "empty term")
	}
	if !utf8.Valid(s.b) {
		return Term{}, s.errAt(0, "invalid UTF-8")
	}
	var t Term
	var err error
	switch s.b[s.pos] {
	case '<':
		t, err = s.iri()
	case '_':
		t, err = s.blank()
	case '"':
		t, err = s.literal()
	default:
		return Term{}, s.errAt(s.pos, "expected an IRI, blank node or literal, found %s", s.what())
	}
	if err != nil {
		return Term{}, err
	}
	s.skipWS()
	if s.pos != len(s.b) {
		return Term{}, s.errAt(s.pos, "unexpected %s after the term", s.what())
	}
	return t, nil
}

// String returns t in N-Triples syntax: <iri>, _:label, "lex", "lex"@lang
// or "lex"^^<datatype> (xsd:string literals without a datatype). Characters
// an IRI may not hold and control characters in literals are written as
// \u escapes; invalid UTF-8 is written as U+FFFD. The zero Term is "".
// Blank node labels are written as they are: they must be valid N-Triples
// labels for the result to parse.
func (t Term) String() string {
	switch t.Kind {
	case KindIRI:
		if !needsIRIEscape(t.Value) {
			return "<" + t.Value + ">"
		}
	case KindBlank:
		return "_:" + t.Value
	case KindNone:
		return ""
	}
	return string(appendTerm(make([]byte, 0, len(t.Value)+len(t.Datatype)+8), t))
}

// appendTerm appends t in N-Triples syntax to b.
func appendTerm(b []byte, t Term) []byte {
	switch t.Kind {
	case KindIRI:
		return appendIRI(b, t.Value)
	case KindBlank:
		b = append(b, '_', ':')
		return append(b, t.Value...)
	case KindLiteral:
		b = append(b, '"')
		b = appendLexical(b, t.Value)
		b = append(b, '"')
		if t.Lang != "" {
			b = append(b, '@')
			return append(b, t.Lang...)
		}
		if t.Datatype != "" && t.Datatype != XSDString {
			b = append(b, '^', '^')
			return appendIRI(b, t.Datatype)
		}
	}
	return b
}

func iriNeedsEscape(c byte) bool {
	return c <= 0x20 || c == '<' || c == '>' || c == '"' || c == '{' || c == '}' ||
		c == '|' || c == '^' || c == '`' || c == '\\' || c >= utf8.RuneSelf
}

// needsIRIEscape reports whether v needs the slow path (escapes, or
// non-ASCII that must be checked for valid UTF-8).
func needsIRIEscape(v string) bool {
	for i := 0; i < len(v); i++ {
		if iriNeedsEscape(v[i]) {
			return true
		}
	}
	return false
}

const hexDigits = "0123456789ABCDEF"

func appendUEscape(b []byte, r rune) []byte {
	if r > 0xFFFF {
		return append(b, '\\', 'U',
			hexDigits[r>>28&0xF], hexDigits[r>>24&0xF], hexDigits[r>>20&0xF], hexDigits[r>>16&0xF],
			hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
	}
	return append(b, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}

func appendIRI(b []byte, v string) []byte {
	b = append(b, '<')
	return append(appendEscaped(b, v, true), '>')
}

func appendLexical(b []byte, v string) []byte { return appendEscaped(b, v, false) }

// appendEscaped appends v, escaping what an IRIREF (iri) or a
// STRING_LITERAL_QUOTE may not hold directly, in the canonical N-Triples
// way: ECHAR for \t \b \n \r \f \" \\ in literals, UCHAR (upper-case hex)
// for other control characters and for IRI characters; invalid UTF-8
// becomes U+FFFD.
func appendEscaped(b []byte, v string, iri bool) []byte {
	start := 0
	for i := 0; i < len(v); {
		c := v[i]
		if iri && !iriNeedsEscape(c) || !iri && c >= 0x20 && c != '"' && c != '\\' && c != 0x7F && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(v[i:])
			if r == 0xFFFE || r == 0xFFFF {
				// Noncharacters, escaped in canonical N-Triples (RDF 1.2).
				b = append(b, v[start:i]...)
				b = appendUEscape(b, r)
				i += n
				start = i
				continue
			}
			if r != utf8.RuneError || n > 1 {
				i += n
				continue
			}
			b = append(b, v[start:i]...)
			b = append(b, "\uFFFD"...)
			i++
			start = i
			continue
		}
		b = append(b, v[start:i]...)
		if e := echarOut[c]; e != 0 && !iri {
			b = append(b, '\\', e)
		} else {
			b = appendUEscape(b, rune(c))
		}
		i++
		start = i
	}
	return append(b, v[start:]...)
}

// ntWriter writes N-Triples through a buffer; Close flushes it.
type ntWriter struct {
	w      *bufio.Writer
	buf    []byte
	err    error
	closed bool
}

func newNTriplesWriter(w io.Writer) Writer {
	return &ntWriter{w: bufio.NewWriterSize(w, 64<<10), buf: make([]byte, 0, 512)}
}

// errWriterClosed is returned by Write after Close.
var errWriterClosed = errors.New("rdf: write after Close")

func (w *ntWriter) Write(t Triple) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errWriterClosed
	}
	if err := checkTriple(t); err != nil {
		return err
	}
	b := appendTerm(w.buf[:0], t.S)
	b = append(b, ' ')
	b = appendTerm(b, t.P)
	b = append(b, ' ')
	b = appendTerm(b, t.O)
	b = append(b, ' ', '.', '\n')
	w.buf = b
	if _, err := w.w.Write(b); err != nil {
		w.err = fmt.Errorf("rdf: writing n-triples: %w", err)
		return w.err
	}
	return nil
}

func (w *ntWriter) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	if err := w.w.Flush(); err != nil {
		w.err = fmt.Errorf("rdf: writing n-triples: %w", err)
	}
	return w.err
}

// checkTriple refuses triples no RDF syntax can write.
func checkTriple(t Triple) error {
	switch {
	case t.S.Kind != KindIRI && t.S.Kind != KindBlank:
		return fmt.Errorf("%w: subject %q is not an IRI or blank node", ErrInvalidTriple, t.S.String())
	case t.P.Kind != KindIRI:
		return fmt.Errorf("%w: predicate %q is not an IRI", ErrInvalidTriple, t.P.String())
	case t.O.Kind == KindNone || t.O.Kind > KindLiteral:
		return fmt.Errorf("%w: object is missing", ErrInvalidTriple)
	case t.S.Kind == KindBlank && blankLabelLen([]byte(t.S.Value)) != len(t.S.Value):
		return fmt.Errorf("%w: blank node label %q is not valid N-Triples", ErrInvalidTriple, t.S.Value)
	case t.O.Kind == KindBlank && blankLabelLen([]byte(t.O.Value)) != len(t.O.Value):
		return fmt.Errorf("%w: blank node label %q is not valid N-Triples", ErrInvalidTriple, t.O.Value)
	}
	return nil
}
