package harvest

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/resourcesync-go/resourcesync/oai"
)

// response is what a page says besides its records.
type response struct {
	ResponseDate     string
	Verb             string // local name of the verb's element
	Err              *oai.Error
	Token            string
	HasToken         bool
	Expiration       string
	CompleteListSize int64 // -1 when not given
	Cursor           int64 // -1 when not given
	Granularity      string
	DeletedRecord    string
	Earliest         string
	Items            int // records (or headers) seen, malformed ones included
}

// item is one record of ListRecords or GetRecord, or one header of
// ListIdentifiers.
type item struct {
	Identifier string
	Datestamp  string
	Sets       []string
	Deleted    bool
	Metadata   []byte // canonical <metadata> child; nil if none
	Bad        error  // why the record is malformed
}

// errResponse marks a response that is not an OAI-PMH document.
var errResponse = errors.New("not an OAI-PMH response")

// errTruncated marks a response that ended inside the document.
var errTruncated = errors.New("response ends inside the document")

// bodyReader records the first failure of the underlying body (a network
// error, not the document's) and gives the decoder one byte at a time
// from a buffer, so that after a syntax error inside a record the parser
// knows where it is and can skip to the record's end.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// capReader gives the decoder the body one byte at a time and fails
// once more than the current cap has been read since it was set.
type capReader struct {
	br    *bufio.Reader
	n     int64 // bytes read
	limit int64 // fail past this offset; 0: no cap
	what  string
}

// errTooLarge marks a record or field over its cap.
var errTooLarge = errors.New("larger than the cap")

func (c *capReader) over() error {
	return fmt.Errorf("%s %w of %d bytes", c.what, errTooLarge, c.limitSize())
}

func (c *capReader) limitSize() int64 {
	if c.what == "record" {
		return maxRecordBytes
	}
	return maxFieldBytes
}

func (c *capReader) ReadByte() (byte, error) {
	if c.limit > 0 && c.n >= c.limit {
		return 0, c.over()
	}
	b, err := c.br.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.limit > 0 {
		if c.n >= c.limit {
			return 0, c.over()
		}
		p = p[:min(int64(len(p)), c.limit-c.n)]
	}
	n, err := c.br.Read(p)
	c.n += int64(n)
	return n, err
}

// capFrom caps what the decoder reads from now on at n bytes (0: no cap).
func (c *capReader) capFrom(n int64, what string) {
	c.limit, c.what = 0, what
	if n > 0 {
		c.limit = c.n + n
	}
}

type frame struct {
	name, local string
	mark        int
}

type parser struct {
	br     *bufio.Reader
	cr     *capReader
	body   *bodyReader
	d      *xml.Decoder
	ns     nsStack
	stack  []frame
	resp   response
	onItem func(*item) error

	it         *item
	unitDepth  int // depth of the record (or ListIdentifiers header) element
	unitName   string
	headDepth  int
	metaDepth  int
	collect    *strings.Builder
	collectFor string
	collectAt  int
	metaIn     int64 // input offset of the <metadata> element's start
	c          canon
	sb         strings.Builder
	root       bool
}

// parseResponse reads one OAI-PMH response from r, calling onItem for
// each record (or header) as it ends, malformed ones included (with Bad
// set). Records are canonicalised one at a time; nothing else is kept.
func parseResponse(r io.Reader, onItem func(*item) error) (*response, error) {
	body := &bodyReader{r: r}
	p := &parser{body: body, br: bufio.NewReaderSize(body, 64<<10), onItem: onItem}
	p.cr = &capReader{br: p.br}
	p.resp.CompleteListSize, p.resp.Cursor = -1, -1
	err := p.run()
	if body.err != nil {
		return nil, body.err
	}
	if err != nil {
		return nil, err
	}
	return &p.resp, nil
}

func (p *parser) newDecoder() {
	p.d = xml.NewDecoder(p.cr)
	p.d.Strict = true
}

func (p *parser) run() error {
	p.newDecoder()
	for {
		if p.it == nil && p.collect == nil {
			// Between records: the decoder keeps a token whole
			// (a comment, white space), so each is capped.
			p.cr.capFrom(maxFieldBytes, "token")
		}
		tok, err := p.d.RawToken()
		if err == io.EOF {
			if len(p.stack) > 0 {
				return errTruncated
			}
			if !p.root {
				return fmt.Errorf("%w: no document element", errResponse)
			}
			return nil
		}
		if err == nil {
			err = p.token(tok)
		}
		if err != nil {
			if ce, ok := err.(*callbackError); ok {
				return ce.err
			}
			var se *xml.SyntaxError
			if errors.As(err, &se) && strings.Contains(se.Msg, "unexpected EOF") {
				return errTruncated
			}
			if p.it == nil || p.body.err != nil {
				if errors.Is(err, errResponse) || errors.Is(err, errTruncated) {
					return err
				}
				return fmt.Errorf("%w: %v", errResponse, err)
			}
			// A record that is not well-formed: skip to its end.
			if p.it.Bad == nil {
				p.it.Bad = err
			}
			if err := p.skipUnit(); err != nil {
				return err
			}
			if err := p.deliver(); err != nil {
				return err.(*callbackError).err
			}
			p.newDecoder()
		}
	}
}

// skipUnit reads past the end tag of the current record and pops the
// stack to its parent. Elements of the record's name inside it (a MARC
// <record> in a record of an envelope without prefix) are counted, both
// those open when the error came and those after it.
func (p *parser) skipUnit() error {
	depth := 1
	for _, f := range p.stack[min(p.unitDepth, len(p.stack)):] {
		if f.name == p.unitName {
			depth++
		}
	}
	name := []byte(p.unitName)
	for {
		if _, err := p.br.ReadSlice('<'); err != nil {
			if err == bufio.ErrBufferFull {
				continue
			}
			return errTruncated
		}
		b, _ := p.br.Peek(len(name) + 2)
		end := len(b) > 0 && b[0] == '/'
		if end {
			b = b[1:]
		}
		if len(b) < len(name)+1 || !bytes.Equal(b[:len(name)], name) {
			continue
		}
		if c := b[len(name)]; c != '>' && c != '/' && c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			continue
		}
		// Read to the tag's end.
		tag, err := p.br.ReadSlice('>')
		for err == bufio.ErrBufferFull {
			tag, err = p.br.ReadSlice('>')
		}
		if err != nil {
			return errTruncated
		}
		switch {
		case end:
			depth--
		case len(tag) < 2 || tag[len(tag)-2] != '/':
			depth++
		}
		if depth == 0 {
			p.pop(p.unitDepth - 1)
			return nil
		}
	}
}

// pop leaves the stack at depth n.
func (p *parser) pop(n int) {
	if n < len(p.stack) {
		p.ns.decls = p.ns.decls[:p.stack[n].mark]
		p.stack = p.stack[:n]
	}
	if p.collectAt > n {
		p.collect = nil
	}
}

func (p *parser) parent() string {
	if len(p.stack) < 2 {
		return ""
	}
	return p.stack[len(p.stack)-2].local
}

func (p *parser) deliver() error {
	it := p.it
	p.cr.capFrom(0, "")
	p.it, p.unitDepth, p.headDepth, p.metaDepth = nil, 0, 0, 0
	p.collect = nil
	p.c.reset()
	p.resp.Items++
	if it.Bad == nil && it.Identifier == "" {
		it.Bad = errors.New("header without identifier")
	}
	if it.Bad == nil && p.resp.Verb != oai.ListIdentifiers && !it.Deleted && it.Metadata == nil {
		it.Bad = errors.New("record without metadata")
	}
	if err := p.onItem(it); err != nil {
		return &callbackError{err}
	}
	return nil
}

// callbackError carries onItem's error out of the parser unchanged.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }

func (p *parser) startCollect(field string) {
	if p.it == nil {
		p.cr.capFrom(maxFieldBytes, field)
	}
	p.sb.Reset()
	p.collect, p.collectFor, p.collectAt = &p.sb, field, len(p.stack)
}

func attr(e xml.StartElement, local string) (string, bool) {
	for _, a := range e.Attr {
		if a.Name.Local == local && a.Name.Space == "" {
			return a.Value, true
		}
	}
	return "", false
}

func (p *parser) token(tok xml.Token) error {
	switch t := tok.(type) {
	case xml.StartElement:
		if len(p.stack) >= maxDepth {
			return fmt.Errorf("%w: elements nested more than %d deep", errMalformed, maxDepth)
		}
		mark := p.ns.push(t.Attr)
		p.stack = append(p.stack, frame{qname(t.Name), t.Name.Local, mark})
		depth := len(p.stack)
		if p.metaDepth > 0 && depth > p.metaDepth {
			if p.it.Bad != nil {
				return nil
			}
			if depth == p.metaDepth+1 && p.it.Metadata != nil {
				p.it.Bad = errors.New("metadata with more than one element")
				return nil
			}
			p.bound()
			if err := p.c.start(t, &p.ns); err != nil {
				p.it.Bad = err
			}
			return nil
		}
		return p.start(t, depth)
	case xml.EndElement:
		n := len(p.stack)
		if n == 0 || p.stack[n-1].name != qname(t.Name) {
			return fmt.Errorf("%w: unexpected end tag </%s>", errMalformed, qname(t.Name))
		}
		if p.metaDepth > 0 && n > p.metaDepth {
			if p.it.Bad == nil {
				p.bound()
				if err := p.c.end(t); err != nil {
					p.it.Bad = err
				} else if n == p.metaDepth+1 {
					p.it.Metadata = bytes.Clone(p.c.out.Bytes())
					p.c.reset()
				}
			}
			p.pop(n - 1)
			return nil
		}
		if p.collect != nil && p.collectAt == n {
			p.endCollect()
		}
		if n == p.metaDepth {
			p.metaDepth = 0
		}
		if n == p.headDepth {
			p.headDepth = 0
		}
		p.pop(n - 1)
		if p.it != nil && n == p.unitDepth {
			return p.deliver()
		}
		return nil
	case xml.CharData:
		if p.metaDepth > 0 && len(p.stack) > p.metaDepth {
			if p.it.Bad == nil {
				p.bound()
				if err := p.c.text(t); err != nil {
					p.it.Bad = err
				}
			}
		} else if p.collect != nil && len(p.stack) == p.collectAt {
			p.collect.Write(t)
		}
	case xml.ProcInst:
		if p.metaDepth > 0 && len(p.stack) > p.metaDepth && p.it.Bad == nil {
			p.bound()
			if err := p.c.procInst(t); err != nil {
				p.it.Bad = err
			}
		}
	case xml.Directive:
		if len(p.stack) > 0 {
			return fmt.Errorf("%w: directive inside the document", errMalformed)
		}
	}
	return nil
}

func (p *parser) start(t xml.StartElement, depth int) error {
	local := t.Name.Local
	switch {
	case depth == 1:
		if local != "OAI-PMH" || p.root {
			return fmt.Errorf("%w: root element <%s>", errResponse, qname(t.Name))
		}
		p.root = true
	case depth == 2:
		switch local {
		case "responseDate":
			p.startCollect(local)
		case "error":
			code, _ := attr(t, "code")
			if p.resp.Err == nil {
				p.resp.Err = &oai.Error{Code: code}
				p.startCollect(local)
			}
		case "request":
		default:
			p.resp.Verb = local
		}
	case depth == 3 && p.parent() == oai.Identify:
		switch local {
		case "granularity", "deletedRecord", "earliestDatestamp":
			p.startCollect(local)
		}
	case depth == 3 && local == "resumptionToken" && (p.parent() == oai.ListRecords || p.parent() == oai.ListIdentifiers):
		p.resp.HasToken = true
		p.resp.Expiration, _ = attr(t, "expirationDate")
		if v, ok := attr(t, "completeListSize"); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				p.resp.CompleteListSize = n
			}
		}
		if v, ok := attr(t, "cursor"); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				p.resp.Cursor = n
			}
		}
		p.startCollect(local)
	case depth == 3 && local == "record" && (p.parent() == oai.ListRecords || p.parent() == oai.GetRecord):
		p.it, p.unitDepth, p.unitName = &item{}, depth, qname(t.Name)
		p.cr.capFrom(maxRecordBytes, "record")
	case depth == 3 && local == "header" && p.parent() == oai.ListIdentifiers:
		p.it, p.unitDepth, p.unitName = &item{}, depth, qname(t.Name)
		p.cr.capFrom(maxRecordBytes, "record")
		p.header(t, depth)
	case p.it != nil && depth == p.unitDepth+1 && p.headDepth == 0 && local == "header":
		p.header(t, depth)
	case p.it != nil && depth == p.unitDepth+1 && local == "metadata":
		p.metaDepth, p.metaIn = depth, p.cr.n
	case p.it != nil && p.headDepth > 0 && depth == p.headDepth+1:
		switch local {
		case "identifier", "datestamp", "setSpec":
			p.startCollect(local)
		}
	}
	return nil
}

// bound sets the bound of the canonical form from the bytes of the
// metadata read so far.
func (p *parser) bound() { p.c.out.limit = canonBound(p.cr.n - p.metaIn) }

func (p *parser) header(t xml.StartElement, depth int) {
	p.headDepth = depth
	if s, _ := attr(t, "status"); s == "deleted" {
		p.it.Deleted = true
	}
}

func (p *parser) endCollect() {
	if p.it == nil {
		p.cr.capFrom(0, "")
	}
	v := strings.TrimSpace(p.collect.String())
	p.collect = nil
	switch p.collectFor {
	case "responseDate":
		p.resp.ResponseDate = v
	case "error":
		p.resp.Err.Message = v
	case "granularity":
		p.resp.Granularity = v
	case "deletedRecord":
		p.resp.DeletedRecord = v
	case "earliestDatestamp":
		p.resp.Earliest = v
	case "resumptionToken":
		p.resp.Token = v
	case "identifier":
		if p.it != nil {
			p.it.Identifier = v
		}
	case "datestamp":
		if p.it != nil {
			p.it.Datestamp = v
		}
	case "setSpec":
		if p.it != nil {
			p.it.Sets = append(p.it.Sets, v)
		}
	}
}

// maxRecordBytes caps the bytes of one record (or ListIdentifiers
// header) in a response, and maxFieldBytes a field of the envelope
// (resumption token, responseDate, error message): a larger one is
// skipped (a record) or fails the response (a field), so memory stays
// bounded whatever the repository sends. A variable for the tests.
var maxRecordBytes int64 = 64 << 20

const maxFieldBytes = 1 << 20

// maxDepth caps the nesting of elements, in a record or around one (the
// record cap alone would allow millions of open elements).
const maxDepth = 10000
