package rs

import (
	"bytes"
	"errors"
	"io"
	"iter"
	"strconv"
	"strings"

	"github.com/resourcesync-go/resourcesync/internal/xmlscan"
)

// Limits bound what a Decoder accepts. A zero field takes the default.
type Limits struct {
	MaxDepth         int   // element nesting; default 64
	MaxAttrs         int   // attributes (namespace declarations included) per element; default 64
	MaxTokenBytes    int   // longest name, attribute value, text node, comment or PI; default 1 MiB
	MaxDocumentBytes int64 // whole document; default 1 GiB; negative for no limit
	// MaxLinks caps the rs:ln elements of one item, and those of the root
	// (ErrTooManyLinks beyond); default 10,000, also when negative. Links
	// are kept with their item or the head, so this bounds memory as the
	// streaming of items does for entries.
	MaxLinks int
}

// DefaultLimits are the limits used where a field of Limits is zero.
var DefaultLimits = Limits{
	MaxDepth:         64,
	MaxAttrs:         64,
	MaxTokenBytes:    1 << 20,
	MaxDocumentBytes: 1 << 30,
	MaxLinks:         10000,
}

func (l Limits) withDefaults() Limits {
	if l.MaxDepth == 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	if l.MaxAttrs == 0 {
		l.MaxAttrs = DefaultLimits.MaxAttrs
	}
	if l.MaxTokenBytes == 0 {
		l.MaxTokenBytes = DefaultLimits.MaxTokenBytes
	}
	if l.MaxDocumentBytes == 0 {
		l.MaxDocumentBytes = DefaultLimits.MaxDocumentBytes
	}
	if l.MaxLinks <= 0 {
		l.MaxLinks = DefaultLimits.MaxLinks
	}
	return l
}

// maxPending caps the diagnostics a Decoder holds between two calls of
// TakeDiagnostics, so that a hostile document cannot grow memory with them.
const maxPending = 1000

// Decoder reads a ResourceSync document from an io.Reader: first the Head,
// then the entries one at a time. Memory does not depend on the number of
// entries. It is not safe for concurrent use.
type Decoder struct {
	// Limits may be set before the first call of Head or Next.
	Limits Limits

	r   io.Reader
	sc  *xmlscan.Scanner
	err error

	head      Head
	headDone  bool
	headMD    bool // a root rs:md was seen
	legacy    string
	late      bool
	itemReady bool // the scanner is positioned on an item's start tag
	sitemapNS string

	alpha     bool // 2012 alpha markers seen at the root
	alphaType string
	rel09     bool
	upSeen    bool // a root rs:ln rel="up" as written (a 1.x document)
	badHead   []string
	maxLinks  int
	seenLoc   bool // the current item has a <loc>
	pending   []Diagnostic
	dropped   int
	pos       Pos
	headPos   Pos
	text      []byte
}

// NewDecoder returns a Decoder reading from r. It buffers its own reads.
func NewDecoder(r io.Reader) *Decoder { return &Decoder{r: r} }

// Head reads up to the first item (or the end of the root element) and
// returns the document's head. Root rs:md or rs:ln elements that appear
// after the first item (RS-GEN-10) are merged into the same Head when Next
// reaches them, with a diagnostic; LateHead then reports true.
func (d *Decoder) Head() (*Head, error) {
	if !d.headDone && d.err == nil {
		d.err = d.readHead()
	}
	if d.err != nil && d.err != io.EOF {
		return nil, d.err
	}
	return &d.head, nil
}

// Next returns the next item, or io.EOF after the last one once the root
// element has been closed properly. Every other error is fatal and is a
// *SyntaxError. Each call returns a new Entry that the caller may keep.
func (d *Decoder) Next() (*Entry, error) {
	e := new(Entry)
	if err := d.NextInto(e); err != nil {
		return nil, err
	}
	return e, nil
}

// NextInto is Next decoding into e, which it resets first; it lets a
// caller that does not keep entries avoid one allocation per entry.
func (d *Decoder) NextInto(e *Entry) error {
	if _, err := d.Head(); err != nil {
		return err
	}
	if d.err != nil {
		return d.err
	}
	for !d.itemReady {
		if err := d.advance(); err != nil {
			d.err = err
			return err
		}
	}
	d.itemReady = false
	*e = Entry{Links: e.Links[:0]}
	if err := d.readItem(e); err != nil {
		d.err = err
		return err
	}
	return nil
}

// All iterates over the remaining entries. A fatal error is yielded once,
// with a nil Entry, and ends the iteration.
func (d *Decoder) All() iter.Seq2[*Entry, error] {
	return func(yield func(*Entry, error) bool) {
		for {
			e, err := d.Next()
			if err == io.EOF {
				return
			}
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// Pos returns the position of the start tag of the item last returned by
// Next, or of the root element after Head.
func (d *Decoder) Pos() Pos { return d.pos }

// HeadPos returns the position of the root rs:md element (of the root
// element when there is none).
func (d *Decoder) HeadPos() Pos { return d.headPos }

// TakeDiagnostics returns the diagnostics found since the last call and
// forgets them. At most 1000 are held between calls; Dropped counts the rest.
func (d *Decoder) TakeDiagnostics() []Diagnostic {
	p := d.pending
	d.pending = nil
	return p
}

// Dropped returns how many diagnostics were discarded because more than
// 1000 were pending.
func (d *Decoder) Dropped() int { return d.dropped }

// Legacy names the pre-1.0 draft the document was recognised as ("0.9",
// "0.5", "0.1-alpha"), or "" for a 1.x document. Known after Head.
func (d *Decoder) Legacy() string { return d.legacy }

// LateHead reports whether root rs:md or rs:ln elements were found after
// the first item.
func (d *Decoder) LateHead() bool { return d.late }

// Offset returns the number of bytes of the document consumed so far.
func (d *Decoder) Offset() int64 {
	if d.sc == nil {
		return 0
	}
	return d.sc.Offset()
}

func (d *Decoder) diag(p Pos, rule string, sev Severity, msg string) {
	if len(d.pending) >= maxPending {
		d.dropped++
		return
	}
	d.pending = append(d.pending, Diagnostic{Pos: p, Rule: rule, Severity: sev, Message: msg})
}

func (d *Decoder) tokPos() Pos {
	off := d.sc.TokenOffset()
	l, c := d.sc.Position(off)
	return Pos{Line: l, Col: c, Offset: off}
}

// wrap turns a scanner error into a *SyntaxError with our sentinels.
func (d *Decoder) wrap(err error) error {
	var se *xmlscan.Error
	if !errors.As(err, &se) {
		return err
	}
	return &SyntaxError{Pos: Pos{Line: se.Line, Col: se.Col, Offset: se.Offset}, Err: se.Kind, Msg: se.Msg}
}

func (d *Decoder) next() (xmlscan.Kind, error) {
	k, err := d.sc.Next()
	if err != nil {
		if err == io.EOF {
			return 0, io.EOF
		}
		return 0, d.wrap(err)
	}
	return k, nil
}

func (d *Decoder) isSitemap(space string) bool { return space == d.sitemapNS }

// readHead reads the prolog, the root start tag and the root's children up
// to the first item.
func (d *Decoder) readHead() error {
	l := d.Limits.withDefaults()
	d.maxLinks = l.MaxLinks
	d.sc = xmlscan.New(d.r, xmlscan.Limits{
		MaxDepth: l.MaxDepth, MaxAttrs: l.MaxAttrs,
		MaxTokenBytes: l.MaxTokenBytes, MaxDocumentBytes: l.MaxDocumentBytes,
	})
	for {
		k, err := d.next()
		if err != nil {
			if err == io.EOF {
				err = &SyntaxError{Err: ErrSyntax, Msg: "no root element"}
			}
			return err
		}
		if k == xmlscan.StartElement {
			break
		}
	}
	name := d.sc.Name()
	d.pos = d.tokPos()
	d.headPos = d.pos
	local := string(name.Local)
	switch local {
	case "urlset":
		d.head.Root = URLSet
	case "sitemapindex":
		d.head.Root = SitemapIndex
	default:
		return &SyntaxError{Pos: d.pos, Err: ErrRoot, Msg: "root element is <" + string(name.Local) + ">"}
	}
	switch name.Space {
	case SitemapNS:
		d.sitemapNS = SitemapNS
	case "":
		d.sitemapNS = ""
		d.diag(d.pos, "RS-NS", SevWarning, "root <"+local+"> has no namespace; read as if in "+SitemapNS)
	default:
		return &SyntaxError{Pos: d.pos, Err: ErrNamespace, Msg: "<" + local + "> is in namespace " + strconv.Quote(name.Space) + ", want " + SitemapNS}
	}
	for _, a := range d.sc.Attrs() {
		if isRS(a.Name.Space) && string(a.Name.Local) == "type" {
			d.alpha = true
			d.alphaType = string(a.Value)
		}
	}
	for {
		k, err := d.next()
		if err == io.EOF {
			return &SyntaxError{Err: ErrTruncated}
		}
		if err != nil {
			return err
		}
		if k == xmlscan.EndElement && d.sc.Depth() == 1 {
			d.finishHead()
			return d.expectEOF()
		}
		if k != xmlscan.StartElement {
			continue
		}
		if d.isItem() {
			d.finishHead()
			d.itemReady = true
			return nil
		}
		if err := d.rootChild(false); err != nil {
			return err
		}
	}
}

// expectEOF consumes what follows the root element.
func (d *Decoder) expectEOF() error {
	_, err := d.next()
	if err == nil {
		return &SyntaxError{Pos: d.tokPos(), Err: ErrSyntax, Msg: "content after the root element"}
	}
	return err
}

func isRS(space string) bool {
	return space == RSNS || space == "http://www.openarchives.org/rs/terms"
}

// isItem reports whether the current start tag (at depth 2) is an item.
func (d *Decoder) isItem() bool {
	n := d.sc.Name()
	if !d.isSitemap(n.Space) {
		return false
	}
	l := string(n.Local)
	return l == "url" || l == "sitemap"
}

// advance reads root-level tokens between items until the next item or
// the end of the document.
func (d *Decoder) advance() error {
	for {
		k, err := d.next()
		if err != nil {
			if err == io.EOF {
				return &SyntaxError{Err: ErrTruncated}
			}
			return err
		}
		switch {
		case k == xmlscan.EndElement && d.sc.Depth() == 1:
			if err := d.expectEOF(); err != io.EOF {
				return err
			}
			return io.EOF
		case k == xmlscan.StartElement && d.isItem():
			d.itemReady = true
			return nil
		case k == xmlscan.StartElement:
			if err := d.rootChild(true); err != nil {
				return err
			}
		}
	}
}

// rootChild handles a non-item child of the root element; late is true
// once items have been read.
func (d *Decoder) rootChild(late bool) error {
	n := d.sc.Name()
	p := d.tokPos()
	switch {
	case isRS(n.Space) && string(n.Local) == "md":
		if late {
			d.late = true
			d.diag(p, "RS-GEN-10", SevWarning, "root <rs:md> after the first item; read anyway")
		}
		if d.headMD {
			d.diag(p, "RS-GEN-6", SevError, "more than one root <rs:md>; the later one is merged over the earlier")
		}
		d.headMD = true
		d.headPos = p
		d.readMD(&d.head.MD, p, true)
		if late {
			d.finishHead()
		}
	case isRS(n.Space) && string(n.Local) == "ln":
		if late {
			d.late = true
			d.diag(p, "RS-GEN-10", SevWarning, "root <rs:ln> after the first item; read anyway")
		}
		if len(d.head.Links) >= d.maxLinks {
			return &SyntaxError{Pos: p, Err: ErrTooManyLinks, Msg: "more than " + strconv.Itoa(d.maxLinks) + " root <rs:ln> elements"}
		}
		var ln Link
		d.readLink(&ln, p)
		if ln.Rel == RelUp {
			d.upSeen = true
		}
		if ln.Rel == RelResourceSync {
			// v0.6-0.9 pointed at the Capability List with rel="resourcesync".
			d.rel09 = true
			ln.Rel = RelUp
			d.diag(p, "RS-LEG-9", SevWarning, `root rs:ln rel="resourcesync" (ResourceSync 0.9) read as rel="up"`)
		}
		d.head.Links = append(d.head.Links, ln)
	case n.Space == XHTMLNS && (string(n.Local) == "meta" || string(n.Local) == "link"):
		d.alpha = true
		if string(n.Local) == "meta" {
			var name, content string
			for _, a := range d.sc.Attrs() {
				switch string(a.Name.Local) {
				case "name":
					name = string(a.Value)
				case "content":
					content = string(a.Value)
				}
			}
			if name == "DCTERMS.modified" {
				if t, err := ParseTime(strings.TrimSpace(content)); err == nil {
					d.head.MD.Modified = t
				} else {
					d.diag(p, "RS-DT-2", SevError, err.Error())
				}
			}
			d.diag(p, "RS-LEG-1", SevWarning, "<xhtml:meta> document metadata (2012 alpha draft); ResourceSync 1.1 uses the root <rs:md>")
		} else {
			d.diag(p, "RS-LEG-4", SevWarning, "<xhtml:link> between change sets (2012 alpha draft); ignored, ResourceSync 1.1 uses indexes and rs:ln")
		}
	default:
		if d.isSitemap(n.Space) {
			d.diag(p, "RS-GEN-5", SevWarning, "unexpected <"+string(n.Local)+"> in <"+d.head.Root.String()+">; skipped")
		}
	}
	return d.skip()
}

// skip consumes the rest of the element whose start tag is current.
func (d *Decoder) skip() error {
	depth := d.sc.Depth()
	for {
		k, err := d.next()
		if err != nil {
			if err == io.EOF {
				return &SyntaxError{Err: ErrTruncated}
			}
			return err
		}
		if k == xmlscan.EndElement && d.sc.Depth() == depth {
			return nil
		}
	}
}

// readText returns the text content of the current element, trimmed;
// child elements are skipped.
func (d *Decoder) readText() ([]byte, error) {
	depth := d.sc.Depth()
	d.text = d.text[:0]
	for {
		k, err := d.next()
		if err != nil {
			if err == io.EOF {
				return nil, &SyntaxError{Err: ErrTruncated}
			}
			return nil, err
		}
		switch k {
		case xmlscan.CharData:
			d.text = append(d.text, d.sc.Text()...)
		case xmlscan.StartElement:
			if err := d.skip(); err != nil {
				return nil, err
			}
		case xmlscan.EndElement:
			if d.sc.Depth() == depth {
				return bytes.TrimSpace(d.text), nil
			}
		}
	}
}

// finishHead maps legacy head forms onto the 1.1 model once the head is
// complete (at the first item, or again when a late rs:md arrives).
func (d *Decoder) finishHead() {
	d.headDone = true
	md := &d.head.MD
	p := d.headPos
	switch md.Capability {
	case "resourcesync":
		md.Capability = CapDescription
		d.legacy = "0.9"
		d.diag(p, "RS-LEG-9", SevWarning, `capability="resourcesync" (ResourceSync 0.9 Description) read as "description"`)
	case "changelist-notification":
		md.Capability = CapChangeNotification
		d.diag(p, "RS-LEG-11", SevWarning, `capability="changelist-notification" (Change Notification 1.0) read as "change-notification"`)
	}
	// The draft is recognised from what the document shows. A root
	// rel="up" link (written so) appeared with 0.9.1; without one, the
	// time attributes of the older drafts tell them apart from 1.x errors.
	if !md.Modified.IsZero() && !d.alpha {
		// 0.5/0.6: modified= was the document's last modification time.
		switch c := md.Capability; {
		case c.IsSnapshot() && md.At.IsZero():
			md.At = md.Modified
			d.setLegacy("0.5")
			d.diag(p, "RS-LEG-8", SevWarning, "snapshot time given as modified= (ResourceSync 0.5/0.6); read as at=")
		case (c == CapChangeList || c == CapChangeDump || c == CapChangeDumpManifest) && md.From.IsZero() && md.Until.IsZero() && !d.upSeen:
			d.setLegacy("0.5")
			d.diag(p, "RS-LEG-8", SevWarning, "root modified= on a "+string(c)+" (ResourceSync 0.5/0.6: the document's last modification time); 1.1 uses from/until, so the interval it covers is not stated")
		case c == CapCapabilityList && !d.upSeen:
			d.setLegacy("0.5")
			d.diag(p, "RS-LEG-8", SevWarning, "root modified= on a Capability List without rel=\"up\" (ResourceSync 0.5/0.6 draft)")
		}
	}
	if d.rel09 {
		d.setLegacy("0.9")
	}
	// 0.9: snapshot documents gave their time as from= (without until).
	if md.Capability.IsSnapshot() && md.At.IsZero() && !md.From.IsZero() && md.Until.IsZero() &&
		(d.legacy == "0.9" || !d.upSeen && !d.alpha) {
		md.At, md.From = md.From, Time{}
		d.setLegacy("0.9")
		d.diag(p, "RS-LEG-9", SevWarning, "snapshot time given as from= (ResourceSync 0.9); read as at=")
	}
	if d.alpha && !d.headMD {
		d.legacy = "0.1-alpha"
		if d.alphaType == "changeset" {
			md.Capability = CapChangeList
			if !md.Modified.IsZero() && md.Until.IsZero() {
				md.Until = md.Modified
			}
			d.diag(p, "RS-LEG-3", SevWarning, `<urlset rs:type="changeset"> (2012 alpha draft) read as a Change List`)
		} else {
			md.Capability = CapResourceList
			if !md.Modified.IsZero() && md.At.IsZero() {
				md.At = md.Modified
			}
			d.diag(p, "RS-LEG-1", SevWarning, "no root <rs:md> (2012 alpha draft); read as a Resource List")
		}
	}
}

// setLegacy records the draft unless one was recognised already.
func (d *Decoder) setLegacy(v string) {
	if d.legacy == "" {
		d.legacy = v
	}
}

// readItem reads the item whose start tag is current into e.
func (d *Decoder) readItem(e *Entry) error {
	d.pos = d.tokPos()
	d.seenLoc = false
	if l := string(d.sc.Name().Local); l != d.head.Root.ItemName() {
		d.diag(d.pos, "RS-GEN-5", SevError, "<"+l+"> item in <"+d.head.Root.String()+">")
	}
	depth := d.sc.Depth()
	seenMD := false
	for {
		k, err := d.next()
		if err != nil {
			if err == io.EOF {
				return &SyntaxError{Err: ErrTruncated}
			}
			return err
		}
		if k == xmlscan.EndElement && d.sc.Depth() == depth {
			return nil
		}
		if k != xmlscan.StartElement {
			continue
		}
		n := d.sc.Name()
		switch {
		case d.isSitemap(n.Space):
			if err := d.itemSitemapChild(e, n); err != nil {
				return err
			}
			continue
		case isRS(n.Space):
			switch string(n.Local) {
			case "md":
				p := d.tokPos()
				if seenMD {
					d.diag(p, "RS-GEN-6", SevError, "<rs:md> repeated in one item; the later one is merged over the earlier")
				}
				seenMD = true
				d.readMD(&e.MD, p, false)
			case "ln":
				if len(e.Links) >= d.maxLinks {
					return &SyntaxError{Pos: d.tokPos(), Err: ErrTooManyLinks, Msg: "more than " + strconv.Itoa(d.maxLinks) + " <rs:ln> elements in one item"}
				}
				e.Links = append(e.Links, Link{})
				d.readLink(&e.Links[len(e.Links)-1], d.tokPos())
			case "fixity", "size", "mimetype", "contentencoding", "path":
				if err := d.alphaChild(e, string(n.Local)); err != nil {
					return err
				}
				continue
			}
		}
		if err := d.skip(); err != nil {
			return err
		}
	}
}

func (d *Decoder) itemSitemapChild(e *Entry, n xmlscan.Name) error {
	local := string(n.Local)
	var rsType string
	if local == "lastmod" {
		for _, a := range d.sc.Attrs() {
			if isRS(a.Name.Space) && string(a.Name.Local) == "type" {
				rsType = string(a.Value)
			}
		}
	}
	p := d.tokPos()
	switch local {
	case "loc", "lastmod", "changefreq", "priority", "expires":
	default:
		return d.skip()
	}
	t, err := d.readText()
	if err != nil {
		return err
	}
	switch local {
	case "loc":
		if d.seenLoc {
			d.diag(p, "RS-GEN-7", SevError, "<loc> repeated in one item; the last one is read")
		}
		d.seenLoc = true
		e.Loc = string(t)
	case "changefreq":
		e.ChangeFreq = string(t)
	case "priority":
		e.Priority = string(t)
	case "lastmod":
		e.LastMod = d.parseTime(t, p, "lastmod")
		if rsType != "" {
			d.diag(p, "RS-LEG-3", SevWarning, `<lastmod rs:type="`+rsType+`"> (2012 alpha draft) read as rs:md change`)
			switch Change(rsType) {
			case Created, Updated, Deleted:
				e.MD.Change = Change(rsType)
			}
		}
	case "expires":
		d.diag(p, "RS-LEG-3", SevWarning, "<expires> (2012 alpha draft) read as a deletion")
		e.MD.Change = Deleted
		e.MD.DateTime = d.parseTime(t, p, "expires")
	}
	return nil
}

// alphaChild maps the 2012 alpha draft's per-item child elements.
func (d *Decoder) alphaChild(e *Entry, local string) error {
	p := d.tokPos()
	var typ string
	if local == "fixity" {
		for _, a := range d.sc.Attrs() {
			if string(a.Name.Local) == "type" && a.Name.Space == "" {
				typ = string(a.Value)
			}
		}
	}
	t, err := d.readText()
	if err != nil {
		return err
	}
	v := string(t)
	switch local {
	case "fixity":
		alg := strings.ToLower(typ)
		if alg == "sha256" {
			alg = SHA256
		} else if alg == "sha1" {
			alg = SHA1
		}
		if h, ok := Base64ToHex(alg, v); ok {
			e.MD.Hashes = append(e.MD.Hashes, Hash{Alg: alg, Value: h})
			d.diag(p, "RS-LEG-2", SevWarning, "<rs:fixity> base64 digest (2012 alpha draft) converted to hash=\""+alg+":"+h+"\"")
		} else {
			d.diag(p, "RS-LEG-2", SevWarning, "<rs:fixity type=\""+typ+"\"> (2012 alpha draft) digest "+strconv.Quote(v)+" is not valid base64 of that algorithm; ignored")
		}
	case "size":
		n, err := strconv.ParseInt(v, 10, 64)
		if err == nil && n >= 0 {
			e.MD.Length, e.MD.HasLength = n, true
		}
		d.diag(p, "RS-LEG-2", SevWarning, "<rs:size> (2012 alpha draft) read as length")
	case "mimetype":
		e.MD.Type = v
		d.diag(p, "RS-LEG-2", SevWarning, "<rs:mimetype> (2012 alpha draft) read as type")
	case "contentencoding":
		e.MD.Encoding = v
		d.diag(p, "RS-LEG-2", SevWarning, "<rs:contentencoding> (2012 alpha draft) read as encoding")
	case "path":
		if !strings.HasPrefix(v, "/") {
			v = "/" + v
		}
		e.MD.Path = v
		d.diag(p, "RS-LEG-2", SevWarning, "<rs:path> (2012 alpha draft) read as path")
	}
	return nil
}

func (d *Decoder) parseTime(b []byte, p Pos, what string) Time {
	t, err := parseTimeBytes(bytes.TrimSpace(b))
	if err != nil {
		d.diag(p, "RS-DT-2", SevError, what+": "+err.Error())
		return Time{}
	}
	return t
}

// readMD reads the attributes of the current rs:md start tag into md.
func (d *Decoder) readMD(md *Metadata, p Pos, root bool) {
	for _, a := range d.sc.Attrs() {
		if a.Name.Space != "" {
			if isRS(a.Name.Space) {
				d.diag(p, "RS-GEN-4", SevError, "attribute "+string(a.Name.Prefix)+":"+string(a.Name.Local)+
					" is prefixed; ResourceSync attributes must not be (write "+string(a.Name.Local)+"=); ignored")
				continue
			}
			md.Extra = append(md.Extra, Attr{Space: a.Name.Space, Local: string(a.Name.Local), Value: string(a.Value)})
			continue
		}
		v := a.Value
		switch string(a.Name.Local) {
		case "capability":
			md.Capability = Capability(v)
		case "change":
			md.Change = Change(v)
		case "at":
			md.At = d.mdTime(v, p, "at", root)
		case "completed":
			md.Completed = d.mdTime(v, p, "completed", root)
		case "from":
			md.From = d.mdTime(v, p, "from", root)
		case "until":
			md.Until = d.mdTime(v, p, "until", root)
		case "datetime":
			md.DateTime = d.mdTime(v, p, "datetime", root)
		case "modified":
			md.Modified = d.mdTime(v, p, "modified", root)
		case "hash":
			md.Hashes = d.hashAttr(v, p, "rs:md")
		case "length":
			md.Length, md.HasLength = d.parseLength(v, p)
		case "type":
			md.Type = string(v)
		case "encoding":
			md.Encoding = string(v)
		case "path":
			md.Path = string(v)
		default:
			md.Extra = append(md.Extra, Attr{Local: string(a.Name.Local), Value: string(v)})
			d.diag(p, "RS-GEN-4", SevWarning, "unknown attribute "+string(a.Name.Local)+" on <rs:md>; extension attributes must be in their own namespace")
		}
	}
}

// mdTime parses a time attribute of rs:md, remembering a root attribute
// that is present but invalid (HeadAttrInvalid).
func (d *Decoder) mdTime(v []byte, p Pos, name string, root bool) Time {
	t, err := parseTimeBytes(bytes.TrimSpace(v))
	if err != nil {
		d.diag(p, "RS-DT-2", SevError, name+": "+err.Error())
		if root && len(d.badHead) < 16 {
			d.badHead = append(d.badHead, name)
		}
		return Time{}
	}
	return t
}

// HeadAttrInvalid reports whether the root rs:md carried the named time
// attribute ("at", "from"...) with a value that could not be parsed: its
// field is then zero although the attribute is present, and a diagnostic
// said why.
func (d *Decoder) HeadAttrInvalid(name string) bool {
	for _, b := range d.badHead {
		if b == name {
			return true
		}
	}
	return false
}

// hashAttr splits a hash attribute; an empty one is reported, as the
// attribute would otherwise vanish without a trace (RS-URL-5).
func (d *Decoder) hashAttr(v []byte, p Pos, where string) Hashes {
	h := SplitHashes(string(v))
	if len(h) == 0 {
		d.diag(p, "RS-URL-5", SevError, where+" hash attribute is empty; want algorithm:digest")
	}
	return h
}

func (d *Decoder) parseLength(v []byte, p Pos) (int64, bool) {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
	if err != nil || n < 0 {
		d.diag(p, "RS-URL-6", SevError, "length "+strconv.Quote(string(v))+" is not a non-negative integer")
		return 0, false
	}
	return n, true
}

// readLink reads the attributes of the current rs:ln start tag into ln.
func (d *Decoder) readLink(ln *Link, p Pos) {
	for _, a := range d.sc.Attrs() {
		if a.Name.Space != "" {
			if isRS(a.Name.Space) {
				d.diag(p, "RS-GEN-4", SevError, "attribute "+string(a.Name.Prefix)+":"+string(a.Name.Local)+
					" is prefixed; ResourceSync attributes must not be; ignored")
				continue
			}
			ln.Extra = append(ln.Extra, Attr{Space: a.Name.Space, Local: string(a.Name.Local), Value: string(a.Value)})
			continue
		}
		v := a.Value
		switch string(a.Name.Local) {
		case "rel":
			ln.Rel = string(v)
			if r, ok := foldRel(ln.Rel); ok {
				d.diag(p, "RS-LN-3", SevWarning, "rel "+strconv.Quote(ln.Rel)+" read as "+strconv.Quote(r)+": relation types are case-insensitive (RFC 8288); write them in lowercase")
				ln.Rel = r
			}
		case "href":
			ln.Href = string(bytes.TrimSpace(v))
		case "type":
			ln.Type = string(v)
		case "hash":
			ln.Hashes = d.hashAttr(v, p, "rs:ln")
		case "length":
			ln.Length, ln.HasLength = d.parseLength(v, p)
		case "modified":
			ln.Modified = d.parseTime(v, p, "modified")
		case "path":
			ln.Path = string(v)
		case "encoding":
			ln.Encoding = string(v)
		case "pri":
			n, err := strconv.Atoi(string(v))
			if err != nil || n < 1 || n > 999999 {
				d.diag(p, "RS-LN-2", SevError, "pri "+strconv.Quote(string(v))+" is not an integer from 1 to 999999")
			} else {
				ln.Pri = n
			}
		case "profile":
			ln.Profile = string(v)
		default:
			ln.Extra = append(ln.Extra, Attr{Local: string(a.Name.Local), Value: string(v)})
			d.diag(p, "RS-GEN-4", SevWarning, "unknown attribute "+string(a.Name.Local)+" on <rs:ln>; extension attributes must be in their own namespace")
		}
	}
}

// foldRel lowercases the registered relation types (tokens without a
// colon) of a rel value, which compare case-insensitively (RFC 8288 §2.1.1);
// extension types (URIs) are left as written. It reports whether anything
// changed.
func foldRel(rel string) (string, bool) {
	upper := false
	for _, f := range strings.Fields(rel) {
		if !strings.Contains(f, ":") && strings.ToLower(f) != f {
			upper = true
			break
		}
	}
	if !upper {
		return rel, false
	}
	fs := strings.Fields(rel)
	for i, f := range fs {
		if !strings.Contains(f, ":") {
			fs[i] = strings.ToLower(f)
		}
	}
	return strings.Join(fs, " "), true
}
