package rdf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"unicode/utf8"
)

// Datatype IRIs of Turtle's literal shorthands.
const (
	XSDNS      = "http://www.w3.org/2001/XMLSchema#"
	XSDInteger = XSDNS + "integer"
	XSDDecimal = XSDNS + "decimal"
	XSDDouble  = XSDNS + "double"
	XSDBoolean = XSDNS + "boolean"
)

// Limits that keep a hostile document from costing unbounded memory: a
// single token (string, IRI, name) and the nesting of [ ] and ( ).
const (
	turtleMaxToken = 16 << 20
	turtleMaxDepth = 1000
	// turtleMaxPrefixes bounds the prefix table, the one thing a reader
	// keeps for the whole document.
	turtleMaxPrefixes = 10000
)

// maxRetained is MaxRetainedBytes; tests lower it.
var maxRetained = MaxRetainedBytes

var (
	rdfType  = IRI(RDFNS + "type")
	rdfFirst = IRI(RDFNS + "first")
	rdfRest  = IRI(RDFNS + "rest")
	rdfNil   = IRI(RDFNS + "nil")
)

// errStop unwinds a parser whose consumer stopped the iteration.
var errStop = errors.New("rdf: iteration stopped")

// parseTurtle reads Turtle 1.1 from r, one statement at a time: the
// document is tokenised from a bufio.Reader and each triple is yielded as
// soon as it is complete, so memory is bounded by the longest token, the
// nesting depth and MaxRetainedBytes, not by the document.
func parseTurtle(r io.Reader, base string) iter.Seq2[Triple, error] {
	return func(yield func(Triple, error) bool) {
		p := &turtleParser{
			br:       bufio.NewReaderSize(r, 64<<10),
			line:     1,
			col:      1,
			base:     base,
			prefixes: map[string]string{},
			yield:    yield,
			limit:    maxRetained,
		}
		err := p.document()
		if err != nil && err != errStop {
			yield(Triple{}, err)
		}
	}
}

type turtleParser struct {
	br        *bufio.Reader
	line, col int
	base      string
	prefixes  map[string]string
	bnodes    int
	depth     int
	tl, tc    int // where the current token starts
	yield     func(Triple, error) bool
	sb        strings.Builder
	// What the reader keeps across tokens, bounded by limit in total
	// (MaxRetainedBytes): the prefix map's names and IRIs, and the
	// subjects and predicates of the enclosing statements while a [ ] or
	// ( ) is read (objectList holds them). The base IRI counts too.
	prefixBytes, heldBytes int
	limit                  int
}

// checkRetained refuses a document whose retained state (see
// turtleParser.limit) exceeds the bound, saying what holds it.
func (p *turtleParser) checkRetained() error {
	if n := p.prefixBytes + len(p.base) + p.heldBytes; n > p.limit {
		return &SyntaxError{Line: p.line, Col: p.col, Limit: true, Msg: fmt.Sprintf(
			"prefixes, base IRI and nesting hold more than %d bytes (prefix map %d, base %d, open statements %d)",
			p.limit, p.prefixBytes, len(p.base), p.heldBytes)}
	}
	return nil
}

// termBytes is what a term's strings cost.
func termBytes(t Term) int { return len(t.Value) + len(t.Lang) + len(t.Datatype) }

// limitf is errf for a reader limit (ErrLimit).
func (p *turtleParser) limitf(format string, a ...any) error {
	err := p.errf(format, a...)
	if se, ok := err.(*SyntaxError); ok {
		se.Limit = true
	}
	return err
}

func (p *turtleParser) emit(s, pr, o Term) error {
	if !p.yield(Triple{s, pr, o}, nil) {
		return errStop
	}
	return nil
}

func (p *turtleParser) fresh() Term {
	p.bnodes++
	return genBlank(p.bnodes)
}

func (p *turtleParser) errf(format string, a ...any) error {
	if err := p.ioErr(); err != nil {
		return err // the document did not end: the reader failed
	}
	return &SyntaxError{Line: p.line, Col: p.col, Msg: fmt.Sprintf(format, a...)}
}

// tokErrf reports an error about the whole current token, at its start.
func (p *turtleParser) tokErrf(format string, a ...any) error {
	return &SyntaxError{Line: p.tl, Col: p.tc, Msg: fmt.Sprintf(format, a...)}
}

// badRune is what peek and next return for a byte that is not UTF-8, so
// that a U+FFFD written in the document stays a valid character.
const badRune rune = -2

// peek returns the next rune without consuming it, -1 at the end.
func (p *turtleParser) peek() rune {
	b, _ := p.br.Peek(1)
	if len(b) == 0 {
		return -1
	}
	if b[0] < utf8.RuneSelf {
		return rune(b[0])
	}
	b, _ = p.br.Peek(utf8.UTFMax)
	r, n := utf8.DecodeRune(b)
	if r == utf8.RuneError && n == 1 {
		return badRune
	}
	return r
}

// peekByte returns the byte i positions ahead (0 = next), or 0.
func (p *turtleParser) peekByte(i int) byte {
	b, _ := p.br.Peek(i + 1)
	if len(b) <= i {
		return 0
	}
	return b[i]
}

// next consumes one rune; -1 at the end. I/O errors surface through ioErr.
func (p *turtleParser) next() rune {
	r, n, err := p.br.ReadRune()
	if err != nil {
		return -1
	}
	if r == utf8.RuneError && n == 1 {
		r = badRune
	}
	if r == '\n' {
		p.line++
		p.col = 1
	} else {
		p.col++
	}
	return r
}

// takeRun appends to p.sb the run of buffered ASCII bytes, none a line
// break, for which ok holds, and consumes them: the fast path for the
// plain stretches of IRIs and strings.
func (p *turtleParser) takeRun(ok *[256]bool) {
	for {
		buf, _ := p.br.Peek(p.br.Buffered())
		n := 0
		for n < len(buf) && ok[buf[n]] {
			n++
		}
		if n == 0 {
			return
		}
		p.sb.Write(buf[:n])
		p.br.Discard(n)
		p.col += n
		if n < len(buf) || p.sb.Len() > turtleMaxToken {
			return
		}
		if _, err := p.br.Peek(1); err != nil {
			return
		}
	}
}

// iriPlain and the string tables mark the ASCII bytes that stand for
// themselves in an IRI and in each kind of quoted string.
var iriPlain, dqPlain, sqPlain = func() (a, b, c [256]bool) {
	for i := 0x21; i < 0x7F; i++ {
		a[i], b[i], c[i] = true, true, true
	}
	for _, x := range "<>\\\"{}|^`" {
		a[x] = false
	}
	b['"'], b['\\'] = false, false
	c['\''], c['\\'] = false, false
	b[' '], c[' '], b['\t'], c['\t'] = true, true, true, true
	return
}()

// ioErr reports a read error other than io.EOF, which the bufio.Reader
// keeps until it is read past.
func (p *turtleParser) ioErr() error {
	if _, err := p.br.Peek(1); err != nil && err != io.EOF {
		return fmt.Errorf("turtle: reading: %w", err)
	}
	return nil
}

func (p *turtleParser) expect(c rune) error {
	if r := p.peek(); r != c {
		return p.unexpected(fmt.Sprintf("%q", c))
	}
	p.next()
	return nil
}

func (p *turtleParser) unexpected(want string) error {
	if err := p.ioErr(); err != nil {
		return err
	}
	r := p.peek()
	if r == badRune {
		return p.errf("invalid UTF-8")
	}
	if r < 0 {
		return p.errf("unexpected end of document, want %s", want)
	}
	return p.errf("unexpected %q, want %s", r, want)
}

// ws skips white space and comments.
func (p *turtleParser) ws() {
	for {
		switch p.peek() {
		case ' ', '\t', '\n', '\r':
			p.next()
		case '#':
			for r := p.next(); r >= 0 && r != '\n' && r != '\r'; r = p.next() {
			}
		default:
			p.tl, p.tc = p.line, p.col
			return
		}
	}
}

func (p *turtleParser) document() error {
	// A byte order mark is allowed at the start.
	if b, _ := p.br.Peek(3); string(b) == "\xef\xbb\xbf" {
		p.br.Discard(3)
	}
	for {
		p.ws()
		if p.peek() < 0 {
			return p.ioErr()
		}
		if err := p.statement(); err != nil {
			return err
		}
	}
}

func (p *turtleParser) statement() error {
	switch r := p.peek(); {
	case r == '@':
		p.next()
		kw := p.word()
		switch kw {
		case "prefix":
			if err := p.prefixDecl(); err != nil {
				return err
			}
		case "base":
			if err := p.baseDecl(); err != nil {
				return err
			}
		default:
			return p.errf("unknown directive @%s", kw)
		}
		p.ws()
		return p.expect('.')
	case ttlPNCharsBase(r):
		// PREFIX / BASE (SPARQL style) or a prefixed name subject.
		w, err := p.prefixPart()
		if err != nil {
			return err
		}
		if p.peek() != ':' {
			switch strings.ToUpper(w) {
			case "PREFIX":
				return p.prefixDecl()
			case "BASE":
				return p.baseDecl()
			}
			return p.tokErrf("unexpected word %q", w)
		}
		s, err := p.pnameAfterPrefix(w)
		if err != nil {
			return err
		}
		return p.triplesAfterSubject(s)
	}
	return p.triples()
}

// word reads ASCII letters (directive names after '@').
func (p *turtleParser) word() string {
	p.sb.Reset()
	for r := p.peek(); 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'; r = p.peek() {
		p.sb.WriteRune(p.next())
	}
	return p.sb.String()
}

func (p *turtleParser) prefixDecl() error {
	p.ws()
	var name string
	if ttlPNCharsBase(p.peek()) {
		w, err := p.prefixPart()
		if err != nil {
			return err
		}
		name = w
	}
	if err := p.expect(':'); err != nil {
		return err
	}
	p.ws()
	iri, err := p.iriRef()
	if err != nil {
		return err
	}
	old, ok := p.prefixes[name]
	if !ok && len(p.prefixes) >= turtleMaxPrefixes {
		return p.limitf("more than %d prefixes", turtleMaxPrefixes)
	}
	if ok {
		p.prefixBytes -= len(name) + len(old)
	}
	p.prefixBytes += len(name) + len(iri)
	p.prefixes[name] = iri
	return p.checkRetained()
}

func (p *turtleParser) baseDecl() error {
	p.ws()
	iri, err := p.iriRef()
	if err != nil {
		return err
	}
	p.base = iri
	return p.checkRetained()
}

func (p *turtleParser) triples() error {
	var s Term
	var err error
	switch p.peek() {
	case '[':
		p.next()
		p.ws()
		if p.peek() == ']' {
			p.next()
			s = p.fresh()
			break
		}
		// blankNodePropertyList predicateObjectList?
		if s, err = p.bnodePropertyListBody(); err != nil {
			return err
		}
		p.ws()
		if p.peek() == '.' {
			p.next()
			return nil
		}
		if err := p.predicateObjectList(s); err != nil {
			return err
		}
		p.ws()
		return p.expect('.')
	case '(':
		if s, err = p.collection(); err != nil {
			return err
		}
	case '<':
		iri, err := p.iriRef()
		if err != nil {
			return err
		}
		s = IRI(iri)
	default:
		if s, err = p.subjectOther(); err != nil {
			return err
		}
	}
	return p.triplesAfterSubject(s)
}

// subjectOther reads a subject that is a prefixed name with the empty
// prefix (":x") or a blank node label ("_:x").
func (p *turtleParser) subjectOther() (Term, error) {
	switch p.peek() {
	case ':':
		return p.pnameAfterPrefix("")
	case '_':
		return p.blankLabel()
	}
	return Term{}, p.unexpected("a subject")
}

func (p *turtleParser) triplesAfterSubject(s Term) error {
	if err := p.predicateObjectList(s); err != nil {
		return err
	}
	p.ws()
	return p.expect('.')
}

// predicateObjectList ::= verb objectList (';' (verb objectList)?)*
func (p *turtleParser) predicateObjectList(s Term) error {
	for {
		p.ws()
		pr, err := p.verb()
		if err != nil {
			return err
		}
		if err := p.objectList(s, pr); err != nil {
			return err
		}
		p.ws()
		if p.peek() != ';' {
			return nil
		}
		for p.peek() == ';' {
			p.next()
			p.ws()
		}
		switch p.peek() {
		case '.', ']', -1:
			return nil
		}
	}
}

func (p *turtleParser) objectList(s, pr Term) error {
	// s and pr stay alive while the objects are read, nested [ ] and ( )
	// included: they count towards the retained bytes.
	held := termBytes(s) + termBytes(pr)
	p.heldBytes += held
	err := p.checkRetained()
	if err == nil {
		err = p.objects(s, pr)
	}
	p.heldBytes -= held
	return err
}

func (p *turtleParser) objects(s, pr Term) error {
	for {
		p.ws()
		o, err := p.object()
		if err != nil {
			return err
		}
		if err := p.emit(s, pr, o); err != nil {
			return err
		}
		p.ws()
		if p.peek() != ',' {
			return nil
		}
		p.next()
	}
}

func (p *turtleParser) verb() (Term, error) {
	switch r := p.peek(); {
	case r == '<':
		iri, err := p.iriRef()
		return IRI(iri), err
	case r == ':':
		return p.pnameAfterPrefix("")
	case ttlPNCharsBase(r):
		if r == 'a' {
			// "a" alone is rdf:type; "a:x" or "ab:x" are prefixed names.
			if c := p.peekByte(1); !isNameByte(c) && c != ':' && c != '.' {
				p.next()
				return rdfType, nil
			}
		}
		w, err := p.prefixPart()
		if err != nil {
			return Term{}, err
		}
		if p.peek() != ':' {
			return Term{}, p.unexpected("':' of a prefixed name")
		}
		return p.pnameAfterPrefix(w)
	}
	return Term{}, p.unexpected("a predicate")
}

// isNameByte reports whether c (a byte) may continue a name; non-ASCII
// bytes are assumed to.
func isNameByte(c byte) bool {
	return c >= utf8.RuneSelf || c == '_' || c == '-' || '0' <= c && c <= '9' ||
		'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func (p *turtleParser) object() (Term, error) {
	switch r := p.peek(); {
	case r == '<':
		iri, err := p.iriRef()
		return IRI(iri), err
	case r == '_':
		return p.blankLabel()
	case r == ':':
		return p.pnameAfterPrefix("")
	case r == '[':
		p.next()
		p.ws()
		if p.peek() == ']' {
			p.next()
			return p.fresh(), nil
		}
		return p.bnodePropertyListBody()
	case r == '(':
		return p.collection()
	case r == '"' || r == '\'':
		return p.literal()
	case r == '+' || r == '-' || '0' <= r && r <= '9' || r == '.' && '0' <= p.peekByte(1) && p.peekByte(1) <= '9':
		return p.number()
	case ttlPNCharsBase(r):
		w, err := p.prefixPart()
		if err != nil {
			return Term{}, err
		}
		if p.peek() == ':' {
			return p.pnameAfterPrefix(w)
		}
		switch w {
		case "true", "false":
			return TypedLiteral(w, XSDBoolean), nil
		}
		return Term{}, p.tokErrf("unexpected word %q", w)
	}
	return Term{}, p.unexpected("an object")
}

// bnodePropertyListBody reads the inside of "[ ... ]" after the '[' (and
// white space) up to and including the ']', and returns the blank node.
func (p *turtleParser) bnodePropertyListBody() (Term, error) {
	if p.depth++; p.depth > turtleMaxDepth {
		return Term{}, p.limitf("nesting deeper than %d", turtleMaxDepth)
	}
	defer func() { p.depth-- }()
	b := p.fresh()
	if err := p.predicateObjectList(b); err != nil {
		return Term{}, err
	}
	p.ws()
	return b, p.expect(']')
}

// collection reads "( o1 o2 ... )", emitting the rdf:first/rdf:rest list
// as it goes, and returns its head (rdf:nil when empty).
func (p *turtleParser) collection() (Term, error) {
	if p.depth++; p.depth > turtleMaxDepth {
		return Term{}, p.limitf("nesting deeper than %d", turtleMaxDepth)
	}
	defer func() { p.depth-- }()
	p.next() // '('
	head, cur := rdfNil, Term{}
	for {
		p.ws()
		if p.peek() == ')' {
			p.next()
			if !cur.IsZero() {
				if err := p.emit(cur, rdfRest, rdfNil); err != nil {
					return Term{}, err
				}
			}
			return head, nil
		}
		n := p.fresh()
		if cur.IsZero() {
			head = n
		} else if err := p.emit(cur, rdfRest, n); err != nil {
			return Term{}, err
		}
		cur = n
		o, err := p.object()
		if err != nil {
			return Term{}, err
		}
		if err := p.emit(cur, rdfFirst, o); err != nil {
			return Term{}, err
		}
	}
}

// iriRef reads "<...>" with \u and \U escapes and resolves it against the
// base.
func (p *turtleParser) iriRef() (string, error) {
	if err := p.expect('<'); err != nil {
		return "", err
	}
	p.sb.Reset()
	for {
		p.takeRun(&iriPlain)
		line, col := p.line, p.col
		r := p.next()
		switch {
		case r == '>':
			iri := p.sb.String()
			if p.base != "" && !hasScheme(iri) {
				iri = ResolveIRI(p.base, iri)
			}
			return iri, nil
		case r == badRune:
			return "", &SyntaxError{Line: line, Col: col, Msg: "invalid UTF-8 in IRI"}
		case r < 0:
			return "", p.unexpected("'>' ending an IRI")
		case r == '\\':
			c := p.next()
			var u rune
			var err error
			switch c {
			case 'u':
				u, err = p.hex(4)
			case 'U':
				u, err = p.hex(8)
			default:
				return "", p.errf("bad escape \\%c in IRI", c)
			}
			if err != nil {
				return "", err
			}
			// An escape may not stand for a character the IRI may not
			// hold (W3C tests turtle-syntax-bad-uri-escape-*).
			if u <= 0x20 || strings.ContainsRune("<>\"{}|^`\\", u) {
				return "", p.errf("escaped character %U not allowed in IRI", u)
			}
			p.sb.WriteRune(u)
		case r <= 0x20 || strings.ContainsRune("<\"{}|^`", r):
			return "", &SyntaxError{Line: line, Col: col, Msg: fmt.Sprintf("character %q not allowed in IRI", r)}
		default:
			p.sb.WriteRune(r)
		}
		if p.sb.Len() > turtleMaxToken {
			return "", p.limitf("IRI longer than %d bytes", turtleMaxToken)
		}
	}
}

func (p *turtleParser) hex(n int) (rune, error) {
	var v rune
	for range n {
		c := p.next()
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | (c - '0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | (c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			v = v<<4 | (c - 'A' + 10)
		default:
			return 0, p.errf("bad hex digit in \\u escape")
		}
	}
	if v > utf8.MaxRune || 0xD800 <= v && v <= 0xDFFF {
		return 0, p.errf("escape \\U%08X is not a Unicode scalar value", v)
	}
	return v, nil
}

// prefixPart reads PN_PREFIX (the next rune is PN_CHARS_BASE): name
// characters and inner dots, never a trailing dot.
func (p *turtleParser) prefixPart() (string, error) {
	p.sb.Reset()
	p.sb.WriteRune(p.next())
	if err := p.nameTail(false, "name"); err != nil {
		return "", err
	}
	return p.sb.String(), nil
}

// nameTail appends to p.sb the rest of a name: PN_CHARS and the dots
// that a name character follows (a name never ends with a dot: that one
// ends the statement).
func (p *turtleParser) nameTail(local bool, what string) error {
	for {
		r := p.peek()
		if r == '.' {
			if !p.dotContinues(local) {
				return nil
			}
		} else if !ttlPNChars(r) {
			return nil
		}
		p.sb.WriteRune(p.next())
		if p.sb.Len() > turtleMaxToken {
			return p.limitf("%s longer than %d bytes", what, turtleMaxToken)
		}
	}
}

// dotContinues reports whether the '.' ahead (and any dots after it) is
// followed by a name character, so belongs to the name rather than
// ending the statement. In a local name (local) ':', '%' and '\' also
// continue it.
func (p *turtleParser) dotContinues(local bool) bool {
	for i := 1; ; i++ {
		b, _ := p.br.Peek(i + utf8.UTFMax)
		if len(b) <= i {
			return false
		}
		if b[i] == '.' {
			continue
		}
		r, _ := utf8.DecodeRune(b[i:])
		return ttlPNChars(r) || local && (r == ':' || r == '%' || r == '\\')
	}
}

// pnameAfterPrefix reads ':' PN_LOCAL? after the prefix pre and expands
// it.
func (p *turtleParser) pnameAfterPrefix(pre string) (Term, error) {
	ns, ok := p.prefixes[pre]
	if err := p.expect(':'); err != nil {
		return Term{}, err
	}
	if !ok {
		return Term{}, p.tokErrf("undeclared prefix %q", pre)
	}
	p.sb.Reset()
	p.sb.WriteString(ns)
	first := true
	for {
		r := p.peek()
		switch {
		case r == '.':
			if first || !p.dotContinues(true) {
				return IRI(p.sb.String()), nil
			}
			p.sb.WriteRune(p.next())
		case r == ':' || ttlPNChars(r):
			if first && !(r == ':' || ttlPNCharsU(r) || '0' <= r && r <= '9') {
				return IRI(p.sb.String()), nil // '-' cannot start a local name
			}
			p.sb.WriteRune(p.next())
		case r == '%':
			p.next()
			h1, h2 := p.next(), p.next()
			if !isHex(h1) || !isHex(h2) {
				return Term{}, p.errf("bad %%-escape in local name")
			}
			p.sb.WriteByte('%')
			p.sb.WriteRune(h1)
			p.sb.WriteRune(h2)
		case r == '\\':
			p.next()
			c := p.next()
			if c < 0 || !strings.ContainsRune("_~.-!$&'()*+,;=/?#@%", c) {
				return Term{}, p.errf("bad escape in local name")
			}
			p.sb.WriteRune(c)
		default:
			return IRI(p.sb.String()), nil
		}
		first = false
		if p.sb.Len() > turtleMaxToken {
			return Term{}, p.limitf("name longer than %d bytes", turtleMaxToken)
		}
	}
}

func isHex(r rune) bool {
	return '0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F'
}

// blankLabel reads "_:label"; the label is returned as written.
func (p *turtleParser) blankLabel() (Term, error) {
	p.next() // '_'
	if err := p.expect(':'); err != nil {
		return Term{}, err
	}
	r := p.peek()
	if !ttlPNCharsU(r) && !('0' <= r && r <= '9') {
		return Term{}, p.unexpected("a blank node label")
	}
	p.sb.Reset()
	p.sb.WriteRune(p.next())
	if err := p.nameTail(false, "label"); err != nil {
		return Term{}, err
	}
	return writtenBlank(p.sb.String()), nil
}

// literal reads a quoted string with an optional language tag or
// datatype.
func (p *turtleParser) literal() (Term, error) {
	lex, err := p.quoted()
	if err != nil {
		return Term{}, err
	}
	switch p.peek() {
	case '@':
		p.next()
		p.sb.Reset()
		for r := p.peek(); 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'; r = p.peek() {
			p.sb.WriteRune(p.next())
		}
		if p.sb.Len() == 0 {
			return Term{}, p.unexpected("a language tag")
		}
		for p.peek() == '-' {
			p.sb.WriteRune(p.next())
			n := 0
			for r := p.peek(); 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'; r = p.peek() {
				p.sb.WriteRune(p.next())
				n++
			}
			if n == 0 {
				return Term{}, p.unexpected("a language subtag")
			}
		}
		if p.sb.Len() > 256 {
			return Term{}, p.limitf("language tag too long")
		}
		return LangLiteral(lex, p.sb.String()), nil
	case '^':
		p.next()
		if err := p.expect('^'); err != nil {
			return Term{}, err
		}
		var dt Term
		switch r := p.peek(); {
		case r == '<':
			iri, err := p.iriRef()
			if err != nil {
				return Term{}, err
			}
			dt = IRI(iri)
		case r == ':':
			if dt, err = p.pnameAfterPrefix(""); err != nil {
				return Term{}, err
			}
		case ttlPNCharsBase(r):
			w, err := p.prefixPart()
			if err != nil {
				return Term{}, err
			}
			if dt, err = p.pnameAfterPrefix(w); err != nil {
				return Term{}, err
			}
		default:
			return Term{}, p.unexpected("a datatype IRI")
		}
		return TypedLiteral(lex, dt.Value), nil
	}
	return Literal(lex), nil
}

// quoted reads any of the four string forms and returns the unescaped
// lexical form.
func (p *turtleParser) quoted() (string, error) {
	q := p.next()
	long := false
	if p.peek() == q {
		if p.peekByte(1) == byte(q) {
			p.next()
			p.next()
			long = true
		} else {
			p.next()
			return "", nil // empty short string
		}
	}
	p.sb.Reset()
	plain := &dqPlain
	if q == '\'' {
		plain = &sqPlain
	}
	for {
		p.takeRun(plain)
		line, col := p.line, p.col
		r := p.next()
		switch {
		case r == badRune:
			return "", &SyntaxError{Line: line, Col: col, Msg: "invalid UTF-8 in string"}
		case r < 0:
			if err := p.ioErr(); err != nil {
				return "", err
			}
			return "", p.errf("unterminated string")
		case r == q:
			if !long {
				return p.sb.String(), nil
			}
			if p.peek() == q && p.peekByte(1) == byte(q) {
				// The first three quotes in a row end the string: its
				// content cannot end with a quote (the grammar wants a
				// non-quote after one or two).
				p.next()
				p.next()
				return p.sb.String(), nil
			}
			p.sb.WriteRune(r)
		case r == '\\':
			c := p.next()
			switch c {
			case 't':
				p.sb.WriteByte('\t')
			case 'b':
				p.sb.WriteByte('\b')
			case 'n':
				p.sb.WriteByte('\n')
			case 'r':
				p.sb.WriteByte('\r')
			case 'f':
				p.sb.WriteByte('\f')
			case '"', '\'', '\\':
				p.sb.WriteRune(c)
			case 'u', 'U':
				n := 4
				if c == 'U' {
					n = 8
				}
				u, err := p.hex(n)
				if err != nil {
					return "", err
				}
				p.sb.WriteRune(u)
			default:
				return "", p.errf("bad escape \\%c in string", c)
			}
		case !long && (r == '\n' || r == '\r'):
			return "", p.errf("line break in a single-line string")
		default:
			p.sb.WriteRune(r)
		}
		if p.sb.Len() > turtleMaxToken {
			return "", p.limitf("string longer than %d bytes", turtleMaxToken)
		}
	}
}

// number reads INTEGER, DECIMAL or DOUBLE; the lexical form is kept as
// written.
func (p *turtleParser) number() (Term, error) {
	p.sb.Reset()
	if r := p.peek(); r == '+' || r == '-' {
		p.sb.WriteRune(p.next())
	}
	digits := func() int {
		n := 0
		for r := p.peek(); '0' <= r && r <= '9'; r = p.peek() {
			p.sb.WriteRune(p.next())
			n++
			if p.sb.Len() > turtleMaxToken {
				return n
			}
		}
		return n
	}
	intDigits := digits()
	dt := XSDInteger
	if p.peek() == '.' {
		c := p.peekByte(1)
		isExp := (c == 'e' || c == 'E') && intDigits > 0 && p.expAhead(2)
		if '0' <= c && c <= '9' || isExp {
			p.sb.WriteRune(p.next())
			digits()
			dt = XSDDecimal
		}
	}
	if intDigits == 0 && dt == XSDInteger {
		return Term{}, p.unexpected("a number")
	}
	if r := p.peek(); (r == 'e' || r == 'E') && p.expAhead(1) {
		p.sb.WriteRune(p.next())
		if r := p.peek(); r == '+' || r == '-' {
			p.sb.WriteRune(p.next())
		}
		digits()
		dt = XSDDouble
	}
	if p.sb.Len() > turtleMaxToken {
		return Term{}, p.limitf("number longer than %d bytes", turtleMaxToken)
	}
	return TypedLiteral(p.sb.String(), dt), nil
}

// expAhead reports whether an exponent's digits follow the 'e' that is i-1
// bytes ahead: [eE] [+-]? [0-9].
func (p *turtleParser) expAhead(i int) bool {
	c := p.peekByte(i)
	if c == '+' || c == '-' {
		c = p.peekByte(i + 1)
	}
	return '0' <= c && c <= '9'
}

// ttlPNCharsBase is PN_CHARS_BASE (isPNCharsBase, shared with the
// N-Triples reader); badRune is not one.
func ttlPNCharsBase(r rune) bool { return isPNCharsBase(r) }

// ttlPNCharsU and ttlPNChars are Turtle's PN_CHARS_U and PN_CHARS; the
// N-Triples reader's isPNCharsU also admits ':', as its grammar does.
func ttlPNCharsU(r rune) bool { return r == '_' || ttlPNCharsBase(r) }

func ttlPNChars(r rune) bool {
	return ttlPNCharsU(r) || r == '-' || '0' <= r && r <= '9' || r == 0xB7 ||
		0x300 <= r && r <= 0x36F || 0x203F <= r && r <= 0x2040
}
