package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/resourcesync-go/resourcesync/oai"
	"github.com/resourcesync-go/resourcesync/oai/harvest"
)

// ErrNotFound is returned by Collection.Get for an unknown ID.
var ErrNotFound = errors.New("oai provider: no such item")

// ErrBadCursor is what a Collection's List returns for a Query.After it
// did not make. The token key is not secret by default, so a harvester
// can forge any cursor: it gets badResumptionToken.
var ErrBadCursor = errors.New("oai provider: bad cursor")

// Item is one item of a collection: a resource, or a deleted one.
type Item struct {
	ID        string    // stable local identifier, a relative URI (see the package documentation)
	URL       string    // the resource's URL
	Sets      []string  // setSpecs of the sets the item belongs to
	Datestamp time.Time // when its last change was recorded (see Datestamps)
	Deleted   bool
	Type      string    // media type
	Length    int64     // bytes
	LastMod   time.Time // the resource's lastmod
	// Prefix, in a RecordCollection, is the metadata format the item is a
	// record in (its ID is then the record's OAI identifier).
	Prefix string
	// Cursor, given as Query.After, resumes a listing after this item.
	Cursor string
}

// Query selects the items of a listing.
type Query struct {
	From  time.Time // Datestamp >= From (zero: no lower bound)
	Until time.Time // Datestamp < Until (zero: no upper bound)
	Set   string    // setSpec, "" for every set
	After string    // an Item.Cursor: list the items after it ("" from the start); List returns ErrBadCursor for one it did not make
	// Prefix, for a RecordCollection: only the records in this format
	// (others may be yielded too; the Handler skips them).
	Prefix string
}

// Set is one set of the collection.
type Set struct {
	Spec string // setSpec: [A-Za-z0-9-_.!~*'()]+ segments separated by ':'
	Name string
}

// A Collection is what the provider serves. Its methods are called
// concurrently.
type Collection interface {
	// Earliest returns a lower bound of every datestamp, zero when the
	// collection is empty.
	Earliest(ctx context.Context) (time.Time, error)
	// Sets returns the sets; none when the collection has no set hierarchy.
	Sets(ctx context.Context) ([]Set, error)
	// List calls yield for the items matching q, deleted ones included,
	// in an order that does not change between calls (new items may
	// appear anywhere), each at most once, until yield returns false.
	List(ctx context.Context, q Query, yield func(Item) bool) error
	// Get returns the item with ID id, deleted or not, or ErrNotFound.
	Get(ctx context.Context, id string) (Item, error)
	// Open returns the bytes of a (not deleted) item.
	Open(ctx context.Context, it Item) (io.ReadCloser, error)
}

// A RecordCollection holds OAI-PMH records as they were harvested: each
// item is the record of one OAI identifier (Item.ID) in one format
// (Item.Prefix), its bytes the metadata element. The Handler serves them
// as themselves: identifiers unchanged, oai_dc not generated.
type RecordCollection interface {
	Collection
	// GetRecord returns the record of identifier in prefix (deleted or
	// not), or ErrNotFound.
	GetRecord(ctx context.Context, identifier, prefix string) (Item, error)
}

// Format is a metadata format beside oai_dc.
type Format struct {
	Prefix    string
	Namespace string
	Schema    string // URL of its XML Schema; "" means Namespace
}

// ParseFormat reads PREFIX=NAMESPACE[=SCHEMA].
func ParseFormat(s string) (Format, error) {
	parts := strings.SplitN(s, "=", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return Format{}, fmt.Errorf("metadata format %q: want PREFIX=NAMESPACE[=SCHEMA]", s)
	}
	f := Format{Prefix: parts[0], Namespace: parts[1]}
	if len(parts) == 3 {
		f.Schema = parts[2]
	}
	if !validPrefix(f.Prefix) || f.Prefix == oai.DCPrefix {
		return Format{}, fmt.Errorf("metadata format %q: invalid or reserved prefix %q", s, f.Prefix)
	}
	if f.Namespace == oai.DCNamespace || f.Namespace == oai.Namespace {
		return Format{}, fmt.Errorf("metadata format %q: namespace %s is reserved", s, f.Namespace)
	}
	return f, nil
}

// Config configures a Handler.
type Config struct {
	// BaseURL is the endpoint's URL, as harvesters reach it.
	BaseURL string
	// RepositoryIdentifier is the middle of every identifier
	// (oai:REPOSITORY:ID); default: BaseURL's host name.
	RepositoryIdentifier string
	RepositoryName       string   // default "resourcesync"
	AdminEmails          []string // default "nobody@" + host (Identify requires one)
	Formats              []Format // besides oai_dc
	// PageSize is the number of records (headers for ListIdentifiers) per
	// response; default 100 (500 for ListIdentifiers).
	PageSize int
	// TokenTTL is how long a resumption token stays valid; default 24h.
	TokenTTL time.Duration
	// TokenKey signs resumption tokens; default: derived from BaseURL
	// (tokens then survive restarts; they are not secrets).
	TokenKey []byte
	// MaxRecordBytes caps the files served as records of a Format (larger
	// ones are not offered in it); default 16 MiB.
	MaxRecordBytes int64
	// MaxConcurrent caps the requests answered at once (each may hold
	// a record of MaxRecordBytes); more get 503 with Retry-After.
	// Default 16.
	MaxConcurrent int
	Now           func() time.Time
}

// Handler serves a Collection over OAI-PMH 2.0.
type Handler struct {
	c     Collection
	rc    RecordCollection // c, when it is one
	cfg   Config
	repo  string
	key   []byte
	forms map[string]Format
	busy  chan struct{} // one token per request being answered
}

// New returns a Handler for c.
func New(c Collection, cfg Config) (*Handler, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("oai provider: base URL %q must be an absolute http(s) URL", cfg.BaseURL)
	}
	if cfg.RepositoryIdentifier == "" {
		cfg.RepositoryIdentifier = u.Hostname()
	}
	if cfg.RepositoryName == "" {
		cfg.RepositoryName = "resourcesync"
	}
	if len(cfg.AdminEmails) == 0 {
		h := u.Hostname()
		if !strings.Contains(h, ".") {
			h += ".invalid"
		}
		cfg.AdminEmails = []string{"nobody@" + h}
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 100
	}
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = 24 * time.Hour
	}
	if cfg.MaxRecordBytes <= 0 {
		cfg.MaxRecordBytes = 16 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 16
	}
	h := &Handler{c: c, cfg: cfg, repo: cfg.RepositoryIdentifier, key: cfg.TokenKey, forms: map[string]Format{},
		busy: make(chan struct{}, cfg.MaxConcurrent)}
	h.rc, _ = c.(RecordCollection)
	if h.key == nil {
		h.key = []byte("resourcesync oai-pmh token " + cfg.BaseURL)
	}
	for _, f := range cfg.Formats {
		if f.Schema == "" {
			f.Schema = f.Namespace
		}
		if _, dup := h.forms[f.Prefix]; dup || f.Prefix == oai.DCPrefix || !validPrefix(f.Prefix) {
			return nil, fmt.Errorf("oai provider: invalid or repeated metadata prefix %q", f.Prefix)
		}
		h.forms[f.Prefix] = f
	}
	return h, nil
}

// Identifier returns the OAI identifier of an item ID (of a
// RecordCollection: the ID itself).
func (h *Handler) Identifier(id string) string {
	if h.rc != nil {
		return id
	}
	return "oai:" + h.repo + ":" + id
}

func (h *Handler) localID(identifier string) (string, bool) {
	if h.rc != nil {
		return identifier, true
	}
	p := "oai:" + h.repo + ":"
	if !strings.HasPrefix(identifier, p) || len(identifier) == len(p) {
		return "", false
	}
	return identifier[len(p):], true
}

// ServeHTTP answers one OAI-PMH request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case h.busy <- struct{}{}:
		defer func() { <-h.busy }()
	default:
		// Each answer may hold a record of MaxRecordBytes: past
		// MaxConcurrent, OAI-PMH's own flow control.
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many requests at once; retry later", http.StatusServiceUnavailable)
		return
	}
	var raw string
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		raw = r.URL.RawQuery
	case http.MethodPost:
		ct := r.Header.Get("Content-Type")
		if mt, _, _ := strings.Cut(ct, ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded") {
			http.Error(w, "POST needs Content-Type application/x-www-form-urlencoded", http.StatusUnsupportedMediaType)
			return
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<16+1))
		if err != nil {
			return
		}
		if len(b) > 1<<16 {
			http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
			return
		}
		raw = string(b)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	now := h.cfg.Now()
	req, perr := parseRequest(raw)
	if perr != nil {
		h.writeErrors(w, now, nil, perr)
		return
	}
	if req.token != "" && (req.verb == oai.ListIdentifiers || req.verb == oai.ListRecords) {
		if perr := req.resume(h.key, now); perr != nil {
			h.writeErrors(w, now, req, perr)
			return
		}
	}
	rw := &responder{h: h, w: w, now: now, req: req}
	if err := h.dispatch(r.Context(), rw); err != nil {
		var oe *oai.Error
		if errors.As(err, &oe) && !rw.started {
			h.writeErrors(w, now, req, oe)
			return
		}
		if !rw.started {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		// Mid-stream: the body is already partly sent; cut the
		// connection so the harvester sees a failure, not a short list.
		panic(http.ErrAbortHandler)
	}
	rw.flush()
}

// writeErrors writes an error response. req is nil for badVerb and
// badArgument, whose request element carries no attributes.
func (h *Handler) writeErrors(w http.ResponseWriter, now time.Time, req *request, errs ...*oai.Error) {
	bw := bufio.NewWriter(w)
	h.prelude(bw, now, req)
	for _, e := range errs {
		bw.WriteString(`<error code="` + e.Code + `">`)
		escape(bw, e.Message)
		bw.WriteString("</error>\n")
	}
	bw.WriteString("</OAI-PMH>\n")
	bw.Flush()
}

func (h *Handler) prelude(bw *bufio.Writer, now time.Time, req *request) {
	bw.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	bw.WriteString(`<OAI-PMH xmlns="` + oai.Namespace + `" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="` + oai.Namespace + ` ` + oai.SchemaURL + `">` + "\n")
	bw.WriteString("<responseDate>" + oai.Second.Format(now) + "</responseDate>\n<request")
	if req != nil {
		for _, a := range req.echo() {
			bw.WriteString(" " + a[0] + `="`)
			escapeAttr(bw, a[1])
			bw.WriteString(`"`)
		}
	}
	bw.WriteString(">")
	escape(bw, h.cfg.BaseURL)
	bw.WriteString("</request>\n")
}

// responder writes a verb's answer, starting it only once the first
// element is ready, so that an error found before (noRecordsMatch) can
// still be the whole answer.
type responder struct {
	h       *Handler
	w       http.ResponseWriter
	bw      *bufio.Writer
	now     time.Time
	req     *request
	started bool
}

func (rw *responder) start() *bufio.Writer {
	if !rw.started {
		rw.started = true
		rw.bw = bufio.NewWriterSize(rw.w, 32<<10)
		rw.h.prelude(rw.bw, rw.now, rw.req)
		rw.bw.WriteString("<" + rw.req.verb + ">\n")
	}
	return rw.bw
}

func (rw *responder) flush() {
	if rw.started {
		rw.bw.WriteString("</" + rw.req.verb + ">\n</OAI-PMH>\n")
		rw.bw.Flush()
	}
}

func oaiErr(code, format string, args ...any) *oai.Error {
	return &oai.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (h *Handler) dispatch(ctx context.Context, rw *responder) error {
	req := rw.req
	switch req.verb {
	case oai.Identify:
		return h.identify(ctx, rw)
	case oai.ListMetadataFormats:
		return h.listMetadataFormats(ctx, rw)
	case oai.ListSets:
		return h.listSets(ctx, rw)
	case oai.GetRecord:
		return h.getRecord(ctx, rw)
	case oai.ListIdentifiers, oai.ListRecords:
		return h.list(ctx, rw)
	}
	return oaiErr(oai.BadVerb, "unknown verb")
}

func (h *Handler) identify(ctx context.Context, rw *responder) error {
	earliest, err := h.c.Earliest(ctx)
	if err != nil {
		return err
	}
	if earliest.IsZero() {
		earliest = rw.now
	}
	bw := rw.start()
	el(bw, "repositoryName", h.cfg.RepositoryName)
	el(bw, "baseURL", h.cfg.BaseURL)
	el(bw, "protocolVersion", "2.0")
	for _, a := range h.cfg.AdminEmails {
		el(bw, "adminEmail", a)
	}
	el(bw, "earliestDatestamp", oai.Second.Format(earliest))
	el(bw, "deletedRecord", "persistent")
	el(bw, "granularity", oai.Second.String())
	if !repoIDRE.MatchString(h.repo) || h.rc != nil {
		return nil // not a domain name: no oai-identifier description
	}
	bw.WriteString(`<description><oai-identifier xmlns="http://www.openarchives.org/OAI/2.0/oai-identifier" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/oai-identifier http://www.openarchives.org/OAI/2.0/oai-identifier.xsd">`)
	el(bw, "scheme", "oai")
	el(bw, "repositoryIdentifier", h.repo)
	el(bw, "delimiter", ":")
	el(bw, "sampleIdentifier", h.Identifier("path/to/file.xml"))
	bw.WriteString("</oai-identifier></description>\n")
	return nil
}

// repoIDRE is the oai-identifier scheme's repositoryIdentifier.
var repoIDRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9\-]*(\.[a-zA-Z][a-zA-Z0-9\-]*)+$`)

func (h *Handler) formats() []Format {
	fs := []Format{{Prefix: oai.DCPrefix, Namespace: oai.DCNamespace, Schema: oai.DCSchemaURL}}
	for _, f := range h.cfg.Formats {
		fs = append(fs, h.forms[f.Prefix])
	}
	return fs
}

func (h *Handler) listMetadataFormats(ctx context.Context, rw *responder) error {
	fs := h.formats()
	if rw.req.identifier != "" && h.rc != nil {
		var mine []Format
		for _, f := range fs {
			_, err := h.rc.GetRecord(ctx, rw.req.identifier, f.Prefix)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			mine = append(mine, f)
		}
		if len(mine) == 0 {
			return oaiErr(oai.IDDoesNotExist, "no such item")
		}
		fs = mine
	} else if rw.req.identifier != "" {
		it, err := h.item(ctx, rw.req.identifier)
		if err != nil {
			return err
		}
		ns := ""
		if !it.Deleted && len(h.forms) > 0 {
			ns = h.rootNamespace(ctx, it)
		}
		var mine []Format
		for _, f := range fs {
			if f.Prefix == oai.DCPrefix || (ns != "" && f.Namespace == ns) {
				mine = append(mine, f)
			}
		}
		fs = mine
	}
	bw := rw.start()
	for _, f := range fs {
		bw.WriteString("<metadataFormat>")
		el(bw, "metadataPrefix", f.Prefix)
		el(bw, "schema", f.Schema)
		el(bw, "metadataNamespace", f.Namespace)
		bw.WriteString("</metadataFormat>\n")
	}
	return nil
}

func (h *Handler) listSets(ctx context.Context, rw *responder) error {
	if rw.req.token != "" {
		// This provider never splits ListSets.
		return oaiErr(oai.BadResumptionToken, "ListSets is never split: no resumption token is valid")
	}
	sets, err := h.c.Sets(ctx)
	if err != nil {
		return err
	}
	if len(sets) == 0 {
		return oaiErr(oai.NoSetHierarchy, "this repository has no sets")
	}
	bw := rw.start()
	for _, s := range sets {
		bw.WriteString("<set>")
		el(bw, "setSpec", s.Spec)
		el(bw, "setName", s.Name)
		bw.WriteString("</set>\n")
	}
	return nil
}

// item resolves an OAI identifier.
func (h *Handler) item(ctx context.Context, identifier string) (Item, error) {
	id, ok := h.localID(identifier)
	if !ok {
		return Item{}, oaiErr(oai.IDDoesNotExist, "not an identifier of this repository (oai:%s:...)", h.repo)
	}
	it, err := h.c.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Item{}, oaiErr(oai.IDDoesNotExist, "no such item")
	}
	return it, err
}

func (h *Handler) getRecord(ctx context.Context, rw *responder) error {
	req := rw.req
	if _, ok := h.format(req.prefix); !ok {
		return oaiErr(oai.CannotDisseminateFormat, "unknown metadata format")
	}
	var it Item
	var err error
	if h.rc != nil {
		it, err = h.rc.GetRecord(ctx, req.identifier, req.prefix)
		if errors.Is(err, ErrNotFound) {
			// Known in another format?
			for _, f := range h.formats() {
				if _, e := h.rc.GetRecord(ctx, req.identifier, f.Prefix); e == nil {
					return oaiErr(oai.CannotDisseminateFormat, "the item is not available in this format")
				}
			}
			err = oaiErr(oai.IDDoesNotExist, "no such item")
		}
	} else {
		it, err = h.item(ctx, req.identifier)
	}
	if err != nil {
		return err
	}
	var md []byte
	if !it.Deleted {
		md, err = h.metadata(ctx, it, req.prefix)
		if err != nil {
			return err
		}
		if md == nil {
			return oaiErr(oai.CannotDisseminateFormat, "the item is not available in this format")
		}
	}
	h.writeRecord(rw.start(), it, md)
	return nil
}

func (h *Handler) format(prefix string) (Format, bool) {
	if prefix == oai.DCPrefix {
		return Format{Prefix: oai.DCPrefix, Namespace: oai.DCNamespace, Schema: oai.DCSchemaURL}, true
	}
	f, ok := h.forms[prefix]
	return f, ok
}

// metadata returns the metadata element of it in prefix, nil when it has
// none in that format.
func (h *Handler) metadata(ctx context.Context, it Item, prefix string) ([]byte, error) {
	if h.rc != nil {
		if it.Prefix != prefix {
			return nil, nil
		}
	} else if prefix == oai.DCPrefix {
		return h.dublinCore(it), nil
	}
	f, _ := h.format(prefix)
	if (h.rc == nil && !maybeXML(it)) || it.Length > h.cfg.MaxRecordBytes {
		return nil, nil
	}
	rc, err := h.c.Open(ctx, it)
	if err != nil {
		return nil, nil // gone since listed: it will be a deleted record
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, h.cfg.MaxRecordBytes+1))
	if err != nil || int64(len(b)) > h.cfg.MaxRecordBytes {
		return nil, nil
	}
	root, ns, ok := xmlRoot(b)
	if !ok || ns != f.Namespace {
		return nil, nil
	}
	return embeddable(b[root:]), nil
}

// rootNamespace sniffs the namespace of an item's root element ("" when it
// is not XML).
func (h *Handler) rootNamespace(ctx context.Context, it Item) string {
	if !maybeXML(it) || it.Length > h.cfg.MaxRecordBytes {
		return ""
	}
	rc, err := h.c.Open(ctx, it)
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, h.cfg.MaxRecordBytes+1))
	if err != nil {
		return ""
	}
	_, ns, ok := xmlRoot(b)
	if !ok {
		return ""
	}
	return ns
}

func maybeXML(it Item) bool {
	t := strings.ToLower(it.Type)
	return t == "" || strings.Contains(t, "xml")
}

// xmlRoot checks that b is a well-formed UTF-8 XML document and returns
// the offset of its root element and the root's namespace.
func xmlRoot(b []byte) (off int, ns string, ok bool) {
	if !utf8.Valid(b) {
		return 0, "", false
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	// Only UTF-8 documents: their bytes are copied into a UTF-8 response.
	d.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		if strings.EqualFold(label, "utf-8") || strings.EqualFold(label, "utf8") {
			return r, nil
		}
		return nil, fmt.Errorf("charset %s", label)
	}
	depth, roots := 0, 0
	for {
		before := int(d.InputOffset())
		tok, err := d.RawToken()
		if err == io.EOF {
			if roots != 1 || depth != 0 {
				return 0, "", false
			}
			// encoding/xml lets through what a stricter parser
			// refuses (repeated attributes, undeclared prefixes, a
			// directive after the root, <?xml?> inside): the bytes
			// are copied into the response, which must stay
			// namespace-well-formed, so they must pass the
			// harvester's canonicaliser, which checks all that.
			if _, err := harvest.Canonical(b[off:]); err != nil {
				return 0, "", false
			}
			return off, ns, true
		}
		if err != nil {
			return 0, "", false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				off = before
				ns = rootNS(t)
				if roots > 1 {
					return 0, "", false
				}
			}
			depth++
		case xml.EndElement:
			depth--
		case xml.Directive:
			// A doctype may define entities the record would then lack.
			if depth == 0 && bytes.Contains(t, []byte("ENTITY")) {
				return 0, "", false
			}
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return 0, "", false
			}
		}
	}
}

// embeddable returns the document element doc (from xmlRoot) as it is
// copied into <metadata>: when an unprefixed element of doc has no
// default namespace in the file, the root gets xmlns="" so that the
// element does not fall into the response's OAI-PMH namespace.
func embeddable(doc []byte) []byte {
	d := xml.NewDecoder(bytes.NewReader(doc))
	var defaults []string // default namespace per open element
	need := false
	rootName := ""
	for !need {
		tok, err := d.RawToken()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			cur := ""
			if n := len(defaults); n > 0 {
				cur = defaults[n-1]
			}
			for _, a := range t.Attr {
				if a.Name.Space == "" && a.Name.Local == "xmlns" {
					if rootName == "" {
						return doc // the root says it itself
					}
					cur = a.Value
				}
			}
			if rootName == "" {
				rootName = t.Name.Local
				if t.Name.Space != "" {
					rootName = t.Name.Space + ":" + rootName
				}
			}
			defaults = append(defaults, cur)
			need = t.Name.Space == "" && cur == ""
		case xml.EndElement:
			defaults = defaults[:len(defaults)-1]
		}
	}
	if !need {
		return doc
	}
	// doc starts with '<' and the root's name (xmlRoot's offset).
	n := 1 + len(rootName)
	out := make([]byte, 0, len(doc)+10)
	out = append(out, doc[:n]...)
	out = append(out, ` xmlns=""`...)
	return append(out, doc[n:]...)
}

// rootNS resolves the root element's namespace from its own attributes
// (RawToken does not resolve prefixes; the root has no ancestors).
func rootNS(t xml.StartElement) string {
	want := "xmlns"
	if t.Name.Space != "" {
		want = "xmlns:" + t.Name.Space
	}
	for _, a := range t.Attr {
		name := a.Name.Local
		if a.Name.Space != "" {
			name = a.Name.Space + ":" + a.Name.Local
		}
		if name == want {
			return a.Value
		}
	}
	return ""
}

func (h *Handler) dublinCore(it Item) []byte {
	var b bytes.Buffer
	bw := bufio.NewWriter(&b)
	bw.WriteString(`<oai_dc:dc xmlns:oai_dc="` + oai.DCNamespace + `" xmlns:dc="` + oai.DCElements + `" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="` + oai.DCNamespace + " " + oai.DCSchemaURL + `">`)
	title := it.ID
	if u, err := url.PathUnescape(it.ID); err == nil {
		title = u
	}
	el(bw, "dc:title", title)
	el(bw, "dc:identifier", it.URL)
	if !it.LastMod.IsZero() {
		el(bw, "dc:date", oai.Second.Format(it.LastMod))
	}
	if it.Type != "" {
		el(bw, "dc:format", it.Type)
	}
	el(bw, "dc:format", strconv.FormatInt(it.Length, 10)+" bytes")
	bw.WriteString("</oai_dc:dc>")
	bw.Flush()
	return b.Bytes()
}

func (h *Handler) writeHeader(bw *bufio.Writer, it Item) {
	if it.Deleted {
		bw.WriteString(`<header status="deleted">`)
	} else {
		bw.WriteString("<header>")
	}
	el(bw, "identifier", h.Identifier(it.ID))
	el(bw, "datestamp", oai.Second.Format(it.Datestamp))
	for _, s := range it.Sets {
		el(bw, "setSpec", s)
	}
	bw.WriteString("</header>")
}

func (h *Handler) writeRecord(bw *bufio.Writer, it Item, md []byte) {
	bw.WriteString("<record>")
	h.writeHeader(bw, it)
	if !it.Deleted {
		bw.WriteString("<metadata>")
		bw.Write(md)
		bw.WriteString("</metadata>")
	}
	bw.WriteString("</record>\n")
}

// list answers ListIdentifiers and ListRecords: one page of items from
// the request's cursor, then a token naming the last one sent if another
// matching item follows.
func (h *Handler) list(ctx context.Context, rw *responder) error {
	req := rw.req
	if _, ok := h.format(req.prefix); !ok {
		return oaiErr(oai.CannotDisseminateFormat, "unknown metadata format")
	}
	if req.set != "" {
		sets, err := h.c.Sets(ctx)
		if err != nil {
			return err
		}
		if len(sets) == 0 {
			return oaiErr(oai.NoSetHierarchy, "this repository has no sets")
		}
	}
	page := h.cfg.PageSize
	if req.verb == oai.ListIdentifiers {
		page *= 5
	}
	q := Query{From: req.from, Set: req.set, After: req.cursor}
	if h.rc != nil {
		q.Prefix = req.prefix
	}
	if !req.until.IsZero() {
		q.Until = req.until.Add(req.untilGran.Unit())
	}
	sent, more := 0, false
	var last Item
	var ferr error
	err := h.c.List(ctx, q, func(it Item) bool {
		if ctx.Err() != nil {
			return false
		}
		// The Collection filters; this keeps a faulty one from breaking
		// the protocol's promises.
		ds := it.Datestamp.Truncate(time.Second)
		if ds.Before(q.From) || (!q.Until.IsZero() && !ds.Before(q.Until)) {
			return true
		}
		if h.rc != nil && it.Prefix != req.prefix {
			return true
		}
		var md []byte
		if (req.prefix != oai.DCPrefix || h.rc != nil) && !it.Deleted {
			// Only items in the format are listed in it.
			m, err := h.metadata(ctx, it, req.prefix)
			if err != nil {
				ferr = err
				return false
			}
			if m == nil {
				return true
			}
			md = m
		}
		if sent == page {
			more = true
			return false
		}
		bw := rw.start()
		if req.verb == oai.ListIdentifiers {
			h.writeHeader(bw, it)
			bw.WriteString("\n")
		} else {
			if md == nil && !it.Deleted {
				md = h.dublinCore(it)
			}
			h.writeRecord(bw, it, md)
		}
		sent++
		last = it
		return true
	})
	if err == nil {
		err = ferr
	}
	if err == nil {
		err = ctx.Err()
	}
	if errors.Is(err, ErrBadCursor) && !rw.started {
		return oaiErr(oai.BadResumptionToken, "the token points nowhere in this repository")
	}
	if err != nil {
		return err
	}
	if sent == 0 {
		if req.token != "" {
			// Everything the token pointed at went away meanwhile.
			bw := rw.start()
			bw.WriteString("<resumptionToken/>\n")
			return nil
		}
		return oaiErr(oai.NoRecordsMatch, "no record matches the arguments")
	}
	bw := rw.start()
	if more {
		t := token{verb: req.verb, prefix: req.prefix, from: req.from, fromGran: req.fromGran, until: req.until, untilGran: req.untilGran,
			set: req.set, cursor: last.Cursor, offset: req.offset + sent, expires: rw.now.Add(h.cfg.TokenTTL).Truncate(time.Second)}
		bw.WriteString(`<resumptionToken expirationDate="` + oai.Second.Format(t.expires) + `" cursor="` + strconv.Itoa(req.offset) + `">`)
		escape(bw, t.encode(h.key))
		bw.WriteString("</resumptionToken>\n")
	} else if req.token != "" {
		bw.WriteString(`<resumptionToken cursor="` + strconv.Itoa(req.offset) + `"/>` + "\n")
	}
	return nil
}

func el(bw *bufio.Writer, name, text string) {
	bw.WriteString("<" + name + ">")
	escape(bw, text)
	bw.WriteString("</" + name + ">")
}

func escape(w io.Writer, s string) { xml.EscapeText(w, []byte(s)) }

func escapeAttr(w io.Writer, s string) { xml.EscapeText(w, []byte(s)) }
