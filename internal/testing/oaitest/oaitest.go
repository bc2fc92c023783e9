package oaitest

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/oai"
)

// Malformed is a defect a record's XML is served with.
type Malformed int

const (
	WellFormed   Malformed = iota
	BadXML                 // the metadata's tags do not match
	BadUTF8                // the metadata holds bytes that are not UTF-8
	NoIdentifier           // the header has no identifier element
)

// Options configure a repository. The zero value is a repository with
// second granularity, persistent deleted records, pages of 100 and tokens
// valid for an hour, whose clock starts at 2024-01-01T00:00:00Z.
type Options struct {
	Name          string
	Granularity   oai.Granularity
	DeletedRecord string        // "persistent" (""), "transient" or "no"
	PageSize      int           // records or headers per page; 0 means 100
	TokenTTL      time.Duration // expirationDate = clock + TTL; 0 means 1h, negative none
	Start         time.Time     // the clock's start
	// Namespaces are declared on every response's root element
	// (prefix → URI), so that metadata may use prefixes it does not
	// declare itself.
	Namespaces map[string]string
}

// Record is a record as the repository holds it.
type Record struct {
	Identifier string
	Datestamp  time.Time // at the repository's granularity
	Sets       []string
	Deleted    bool
	Metadata   map[string]string // prefix → the <metadata> child's XML
	Malformed  Malformed
}

// Server is a running repository. Its methods are safe for concurrent use.
type Server struct {
	URL string // the base URL (http://127.0.0.1:port/oai)

	srv  *httptest.Server
	opts Options

	mu       sync.Mutex
	now      time.Time
	slots    []slot
	index    map[string]int32 // explicit identifier → slot
	genSlot  []int32          // generated number → slot
	formats  []format
	sets     []string
	tokens   map[string]*token
	tokenSeq int
	fail     int
	failCode int
	failWait time.Duration
	hook     func(verb string, args url.Values)
	requests map[string]int
}

type slot struct {
	gen     int32 // generated number, or -1
	version int32
	stamp   int64 // unix seconds at the granularity
	deleted bool
	bad     Malformed
	ex      *explicit
}

type explicit struct {
	id   string
	sets []string
	meta map[string]string
}

type format struct{ prefix, schema, ns string }

type token struct {
	verb, prefix, set, from, until string
	pos, size, cursor              int
	expires                        time.Time
}

// New starts a repository on 127.0.0.1; it stops when the test ends.
func New(t testing.TB, o Options) *Server {
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	if o.TokenTTL == 0 {
		o.TokenTTL = time.Hour
	}
	if o.DeletedRecord == "" {
		o.DeletedRecord = "persistent"
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if o.Name == "" {
		o.Name = "oaitest repository"
	}
	s := &Server{
		opts:     o,
		now:      o.Start.UTC(),
		index:    map[string]int32{},
		tokens:   map[string]*token{},
		requests: map[string]int{},
		formats:  []format{{oai.DCPrefix, oai.DCSchemaURL, oai.DCNamespace}},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/oai"
	t.Cleanup(s.srv.Close)
	return s
}

// Close stops the server (also done when the test ends).
func (s *Server) Close() { s.srv.Close() }

// Now is the repository's clock.
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// Advance moves the clock on by d and returns the new time.
func (s *Server) Advance(d time.Duration) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(d)
	return s.now
}

// SetNow sets the clock.
func (s *Server) SetNow(t time.Time) {
	s.mu.Lock()
	s.now = t.UTC()
	s.mu.Unlock()
}

// AddFormat adds a metadata format besides oai_dc.
func (s *Server) AddFormat(prefix, schema, namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.formats = append(s.formats, format{prefix, schema, namespace})
}

// stamp is the clock at the granularity (unix seconds).
func (s *Server) stampLocked() int64 {
	t := s.now.Truncate(time.Second)
	if s.opts.Granularity == oai.Day {
		t = t.Truncate(24 * time.Hour)
	}
	return t.Unix()
}

func (s *Server) addSetsLocked(sets []string) {
	for _, sp := range sets {
		for {
			if !slices.Contains(s.sets, sp) {
				s.sets = append(s.sets, sp)
			}
			i := strings.LastIndexByte(sp, ':')
			if i < 0 {
				break
			}
			sp = sp[:i]
		}
	}
}

// Put adds or replaces the record id, stamped with the clock: its sets
// and its metadata per prefix (the XML of the <metadata> child, served
// as given).
func (s *Server) Put(id string, sets []string, metadata map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ex := &explicit{id: id, sets: slices.Clone(sets), meta: map[string]string{}}
	for k, v := range metadata {
		ex.meta[k] = v
	}
	s.addSetsLocked(sets)
	i, ok := s.lookupLocked(id)
	if !ok {
		i = int32(len(s.slots))
		s.slots = append(s.slots, slot{gen: -1})
	}
	sl := &s.slots[i]
	if sl.gen >= 0 {
		s.genSlot[sl.gen] = -1
	}
	*sl = slot{gen: -1, stamp: s.stampLocked(), ex: ex, bad: sl.bad}
	s.index[id] = i
}

// Touch restamps the record id with the clock and changes its bytes (a
// generated record's version goes up; an explicit record's metadata gets
// a comment-free change appended to its first text). It reports whether
// the record exists.
func (s *Server) Touch(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.lookupLocked(id)
	if !ok {
		return false
	}
	sl := &s.slots[i]
	sl.version++
	sl.stamp = s.stampLocked()
	sl.deleted = false
	return true
}

// SetSets changes the sets of the record id and restamps it.
func (s *Server) SetSets(id string, sets []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.lookupLocked(id)
	if !ok {
		return false
	}
	s.explicitLocked(i)
	s.slots[i].ex.sets = slices.Clone(sets)
	s.slots[i].stamp = s.stampLocked()
	s.addSetsLocked(sets)
	return true
}

// explicitLocked turns a generated record into an explicit one.
func (s *Server) explicitLocked(i int32) {
	sl := &s.slots[i]
	if sl.ex != nil {
		return
	}
	n := int(sl.gen)
	sl.ex = &explicit{id: genID(n), sets: genSets(n), meta: map[string]string{oai.DCPrefix: genMeta(n, int(sl.version))}}
	s.genSlot[n] = -1
	sl.gen, sl.version = -1, 0
	s.index[sl.ex.id] = i
}

// Delete marks the record id deleted, stamped with the clock (with
// deletedRecord=no it simply disappears). It reports whether it existed.
func (s *Server) Delete(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.lookupLocked(id)
	if !ok || s.slots[i].deleted {
		return false
	}
	s.slots[i].deleted = true
	s.slots[i].stamp = s.stampLocked()
	return true
}

// Forget drops the record id entirely, tombstone included (a transient
// repository purging its deleted records).
func (s *Server) Forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.lookupLocked(id); ok {
		s.slots[i].deleted = true
		s.slots[i].stamp = -1 // never listed again
	}
}

// SetMalformed makes the record id be served with defect m (WellFormed
// repairs it) without restamping it.
func (s *Server) SetMalformed(id string, m Malformed) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.lookupLocked(id)
	if ok {
		s.slots[i].bad = m
	}
	return ok
}

// Generate adds n records made from their number on demand, stamped with
// the clock: identifiers oai:gen:N (N counting on from earlier calls),
// oai_dc metadata of about 600 bytes, sets "gen" and "gen:even" or
// "gen:odd". It returns the first new number.
func (s *Server) Generate(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := len(s.genSlot)
	st := s.stampLocked()
	s.slots = slices.Grow(s.slots, n)
	s.genSlot = slices.Grow(s.genSlot, n)
	for k := 0; k < n; k++ {
		s.genSlot = append(s.genSlot, int32(len(s.slots)))
		s.slots = append(s.slots, slot{gen: int32(first + k), stamp: st})
	}
	s.addSetsLocked([]string{"gen:even", "gen:odd"})
	return first
}

// GenID is the identifier of generated record n.
func GenID(n int) string { return genID(n) }

func genID(n int) string { return "oai:gen:" + strconv.Itoa(n) }

func genSets(n int) []string {
	if n%2 == 0 {
		return []string{"gen:even"}
	}
	return []string{"gen:odd"}
}

func genMeta(n, version int) string {
	return fmt.Sprintf(`<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/oai_dc/ http://www.openarchives.org/OAI/2.0/oai_dc.xsd">`+
		`<dc:title>Generated record %d, version %d</dc:title><dc:creator>Tester, A. &amp; Tester, B.</dc:creator>`+
		`<dc:subject>testing</dc:subject><dc:description>Record number %d of a generated repository; its text is long enough to be a realistic Dublin Core description of a repository item.</dc:description>`+
		`<dc:date>2024-01-01</dc:date><dc:type>Text</dc:type><dc:identifier>oai:gen:%d</dc:identifier><dc:language>en</dc:language></oai_dc:dc>`, n, version, n, n)
}

func (s *Server) lookupLocked(id string) (int32, bool) {
	if i, ok := s.index[id]; ok {
		return i, true
	}
	if rest, ok := strings.CutPrefix(id, "oai:gen:"); ok {
		if n, err := strconv.Atoi(rest); err == nil && n >= 0 && n < len(s.genSlot) && strconv.Itoa(n) == rest && s.genSlot[n] >= 0 {
			return s.genSlot[n], true
		}
	}
	return 0, false
}

// view is a slot's record, built on demand.
func (s *Server) viewLocked(sl *slot) Record {
	r := Record{Deleted: sl.deleted, Malformed: sl.bad, Datestamp: time.Unix(sl.stamp, 0).UTC()}
	if sl.ex != nil {
		r.Identifier, r.Sets = sl.ex.id, sl.ex.sets
		r.Metadata = map[string]string{}
		for k, v := range sl.ex.meta {
			if sl.version > 0 {
				v = bump(v, int(sl.version))
			}
			r.Metadata[k] = v
		}
	} else {
		n := int(sl.gen)
		r.Identifier, r.Sets = genID(n), genSets(n)
		r.Metadata = map[string]string{oai.DCPrefix: genMeta(n, int(sl.version))}
	}
	return r
}

// bump changes explicit metadata for Touch: a text node is inserted after
// the first start tag.
func bump(v string, version int) string {
	if i := strings.IndexByte(v, '>'); i >= 0 && i > 0 && v[i-1] != '/' {
		return v[:i+1] + "v" + strconv.Itoa(version) + " " + v[i+1:]
	}
	return v
}

// Get returns the record id as currently held.
func (s *Server) Get(id string) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.lookupLocked(id)
	if !ok || s.slots[i].stamp < 0 {
		return Record{}, false
	}
	return s.viewLocked(&s.slots[i]), true
}

// All yields every record held (deleted ones included, not those
// forgotten), in listing order. The repository is locked meanwhile: the
// loop body must not call the Server.
func (s *Server) All() iter.Seq[Record] {
	return func(yield func(Record) bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i := range s.slots {
			if s.slots[i].stamp < 0 || (s.slots[i].deleted && s.opts.DeletedRecord == "no") {
				continue
			}
			if !yield(s.viewLocked(&s.slots[i])) {
				return
			}
		}
	}
}

// ExpireTokens makes every resumptionToken issued so far answer
// badResumptionToken.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	s.tokens = map[string]*token{}
	s.mu.Unlock()
}

// Fail answers the next n requests with status (503 when 0) and, when
// retryAfter > 0, a Retry-After header of that many whole seconds
// (rounded up).
func (s *Server) Fail(n, status int, retryAfter time.Duration) {
	if status == 0 {
		status = http.StatusServiceUnavailable
	}
	s.mu.Lock()
	s.fail, s.failCode, s.failWait = n, status, retryAfter
	s.mu.Unlock()
}

// OnRequest sets a function called before each request is answered
// (outside the repository's lock, so it may change the repository, expire
// tokens or inject failures for this very request).
func (s *Server) OnRequest(f func(verb string, args url.Values)) {
	s.mu.Lock()
	s.hook = f
	s.mu.Unlock()
}

// Requests returns how many requests of verb were answered ("" for all),
// failures injected by Fail included.
func (s *Server) Requests(verb string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if verb == "" {
		n := 0
		for _, c := range s.requests {
			n += c
		}
		return n
	}
	return s.requests[verb]
}

type oaiErr struct{ code, msg string }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	args := r.Form
	verb := args.Get("verb")
	s.mu.Lock()
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		hook(verb, args)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[verb]++
	if s.fail > 0 {
		s.fail--
		if s.failWait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((s.failWait+time.Second-1)/time.Second)))
		}
		http.Error(w, "injected failure", s.failCode)
		return
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	bw := bufio.NewWriterSize(w, 64<<10)
	defer bw.Flush()
	bw.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	bw.WriteString(`<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"`)
	for _, p := range sortedKeys(s.opts.Namespaces) {
		fmt.Fprintf(bw, ` xmlns:%s="%s"`, p, esc(s.opts.Namespaces[p]))
	}
	bw.WriteString(` xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/ http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd">` + "\n")
	fmt.Fprintf(bw, "<responseDate>%s</responseDate>\n", s.now.UTC().Format("2006-01-02T15:04:05Z"))
	e := s.answer(bw, verb, args)
	if e != nil {
		bw.WriteString("<request>" + esc(s.URL) + "</request>\n")
		fmt.Fprintf(bw, `<error code="%s">%s</error>`+"\n", e.code, esc(e.msg))
	}
	bw.WriteString("</OAI-PMH>\n")
}

var allowed = map[string][]string{
	oai.Identify:            {},
	oai.ListMetadataFormats: {"identifier"},
	oai.ListSets:            {"resumptionToken"},
	oai.ListIdentifiers:     {"metadataPrefix", "set", "from", "until", "resumptionToken"},
	oai.ListRecords:         {"metadataPrefix", "set", "from", "until", "resumptionToken"},
	oai.GetRecord:           {"identifier", "metadataPrefix"},
}

func (s *Server) request(bw *bufio.Writer, verb string, args url.Values) {
	bw.WriteString(`<request verb="` + esc(verb) + `"`)
	for _, k := range sortedKeys(args) {
		if k != "verb" {
			bw.WriteString(" " + k + `="` + esc(args.Get(k)) + `"`)
		}
	}
	bw.WriteString(">" + esc(s.URL) + "</request>\n")
}

// answer writes the verb's element, or returns the error to write.
func (s *Server) answer(bw *bufio.Writer, verb string, args url.Values) *oaiErr {
	okArgs, ok := allowed[verb]
	if !ok {
		return &oaiErr{oai.BadVerb, "illegal verb"}
	}
	for k, v := range args {
		if k == "verb" {
			if len(v) > 1 {
				return &oaiErr{oai.BadVerb, "repeated verb"}
			}
			continue
		}
		if !slices.Contains(okArgs, k) || len(v) > 1 {
			return &oaiErr{oai.BadArgument, "illegal or repeated argument " + k}
		}
	}
	switch verb {
	case oai.Identify:
		s.request(bw, verb, args)
		earliest := s.opts.Start
		for i := range s.slots {
			if t := time.Unix(s.slots[i].stamp, 0); s.slots[i].stamp >= 0 && t.Before(earliest) {
				earliest = t
			}
		}
		fmt.Fprintf(bw, "<Identify><repositoryName>%s</repositoryName><baseURL>%s</baseURL><protocolVersion>2.0</protocolVersion>"+
			"<adminEmail>admin@example.org</adminEmail><earliestDatestamp>%s</earliestDatestamp><deletedRecord>%s</deletedRecord>"+
			"<granularity>%s</granularity></Identify>\n",
			esc(s.opts.Name), esc(s.URL), s.opts.Granularity.Format(earliest), s.opts.DeletedRecord, s.opts.Granularity)
		return nil
	case oai.ListMetadataFormats:
		fs := s.formats
		if id := args.Get("identifier"); args.Has("identifier") {
			i, ok := s.lookupLocked(id)
			if !ok || s.slots[i].stamp < 0 {
				return &oaiErr{oai.IDDoesNotExist, id}
			}
			r := s.viewLocked(&s.slots[i])
			fs = nil
			for _, f := range s.formats {
				if _, ok := r.Metadata[f.prefix]; ok {
					fs = append(fs, f)
				}
			}
			if len(fs) == 0 {
				return &oaiErr{oai.NoMetadataFormats, id}
			}
		}
		s.request(bw, verb, args)
		bw.WriteString("<ListMetadataFormats>")
		for _, f := range fs {
			fmt.Fprintf(bw, "<metadataFormat><metadataPrefix>%s</metadataPrefix><schema>%s</schema><metadataNamespace>%s</metadataNamespace></metadataFormat>",
				esc(f.prefix), esc(f.schema), esc(f.ns))
		}
		bw.WriteString("</ListMetadataFormats>\n")
		return nil
	case oai.ListSets:
		if args.Has("resumptionToken") {
			return &oaiErr{oai.BadResumptionToken, "no such token"}
		}
		if len(s.sets) == 0 {
			return &oaiErr{oai.NoSetHierarchy, "no sets"}
		}
		s.request(bw, verb, args)
		bw.WriteString("<ListSets>")
		for _, sp := range s.sets {
			fmt.Fprintf(bw, "<set><setSpec>%s</setSpec><setName>%s</setName></set>", esc(sp), esc(sp))
		}
		bw.WriteString("</ListSets>\n")
		return nil
	case oai.GetRecord:
		id, prefix := args.Get("identifier"), args.Get("metadataPrefix")
		if id == "" || prefix == "" {
			return &oaiErr{oai.BadArgument, "identifier and metadataPrefix are required"}
		}
		if !s.hasFormat(prefix) {
			return &oaiErr{oai.CannotDisseminateFormat, prefix}
		}
		i, ok := s.lookupLocked(id)
		if !ok || s.slots[i].stamp < 0 || (s.slots[i].deleted && s.opts.DeletedRecord == "no") {
			return &oaiErr{oai.IDDoesNotExist, id}
		}
		r := s.viewLocked(&s.slots[i])
		if _, ok := r.Metadata[prefix]; !ok {
			return &oaiErr{oai.CannotDisseminateFormat, prefix}
		}
		s.request(bw, verb, args)
		bw.WriteString("<GetRecord>")
		s.writeRecord(bw, &r, prefix, true)
		bw.WriteString("</GetRecord>\n")
		return nil
	}
	return s.list(bw, verb, args)
}

func (s *Server) hasFormat(prefix string) bool {
	for _, f := range s.formats {
		if f.prefix == prefix {
			return true
		}
	}
	return false
}

// list answers ListRecords and ListIdentifiers.
func (s *Server) list(bw *bufio.Writer, verb string, args url.Values) *oaiErr {
	var tk token
	if args.Has("resumptionToken") {
		if len(args) > 2 {
			return &oaiErr{oai.BadArgument, "resumptionToken is exclusive"}
		}
		p, ok := s.tokens[args.Get("resumptionToken")]
		if !ok || p.verb != verb || (!p.expires.IsZero() && s.now.After(p.expires)) {
			return &oaiErr{oai.BadResumptionToken, "unknown or expired token"}
		}
		tk = *p
	} else {
		tk = token{verb: verb, prefix: args.Get("metadataPrefix"), set: args.Get("set"), from: args.Get("from"), until: args.Get("until"), size: -1}
		if tk.prefix == "" {
			return &oaiErr{oai.BadArgument, "metadataPrefix is required"}
		}
		var gf, gu oai.Granularity = -1, -1
		for _, a := range []struct {
			v string
			g *oai.Granularity
		}{{tk.from, &gf}, {tk.until, &gu}} {
			if a.v == "" {
				continue
			}
			_, g, err := oai.ParseDatestamp(a.v)
			if err != nil || (g == oai.Second && s.opts.Granularity == oai.Day) {
				return &oaiErr{oai.BadArgument, "bad datestamp " + a.v}
			}
			*a.g = g
		}
		if gf >= 0 && gu >= 0 && gf != gu {
			return &oaiErr{oai.BadArgument, "from and until differ in granularity"}
		}
		if tk.from != "" && tk.until != "" && tk.from > tk.until {
			return &oaiErr{oai.BadArgument, "from after until"}
		}
		if !s.hasFormat(tk.prefix) {
			return &oaiErr{oai.CannotDisseminateFormat, tk.prefix}
		}
		if tk.set != "" && len(s.sets) == 0 {
			return &oaiErr{oai.NoSetHierarchy, "no sets"}
		}
	}
	if tk.size < 0 {
		tk.size = 0
		for i := range s.slots {
			if s.match(&s.slots[i], &tk) {
				tk.size++
			}
		}
		if tk.size == 0 {
			return &oaiErr{oai.NoRecordsMatch, "no records match"}
		}
	}
	s.request(bw, verb, args)
	bw.WriteString("<" + verb + ">\n")
	n, pos := 0, tk.pos
	for ; pos < len(s.slots) && n < s.opts.PageSize; pos++ {
		if s.match(&s.slots[pos], &tk) {
			r := s.viewLocked(&s.slots[pos])
			s.writeRecord(bw, &r, tk.prefix, verb == oai.ListRecords)
			n++
		}
	}
	// More to come? (Records added or restamped after the list started
	// are listed too when they match, as in many real repositories.)
	more := false
	for p := pos; p < len(s.slots); p++ {
		if s.match(&s.slots[p], &tk) {
			more = true
			break
		}
	}
	if more || tk.pos > 0 {
		next := ""
		exp := ""
		if more {
			s.tokenSeq++
			next = "tk" + strconv.Itoa(s.tokenSeq)
			nt := tk
			nt.pos, nt.cursor = pos, tk.cursor+n
			if s.opts.TokenTTL > 0 {
				nt.expires = s.now.Add(s.opts.TokenTTL)
				exp = ` expirationDate="` + nt.expires.UTC().Format("2006-01-02T15:04:05Z") + `"`
			}
			s.tokens[next] = &nt
		}
		fmt.Fprintf(bw, `<resumptionToken%s completeListSize="%d" cursor="%d">%s</resumptionToken>`+"\n", exp, tk.size, tk.cursor, next)
	}
	bw.WriteString("</" + verb + ">\n")
	return nil
}

// match reports whether a slot belongs to the list.
func (s *Server) match(sl *slot, tk *token) bool {
	if sl.stamp < 0 || (sl.deleted && s.opts.DeletedRecord == "no") {
		return false
	}
	d := s.opts.Granularity.Format(time.Unix(sl.stamp, 0))
	if tk.from != "" && d[:min(len(d), len(tk.from))] < tk.from {
		return false
	}
	if tk.until != "" && d[:min(len(d), len(tk.until))] > tk.until {
		return false
	}
	if sl.ex == nil {
		if tk.prefix != oai.DCPrefix {
			return false
		}
		if tk.set != "" && !inSet(genSets(int(sl.gen)), tk.set) {
			return false
		}
		return true
	}
	if _, ok := sl.ex.meta[tk.prefix]; !ok {
		return false
	}
	if tk.set != "" && !inSet(sl.ex.sets, tk.set) {
		return false
	}
	return true
}

func inSet(sets []string, spec string) bool {
	for _, sp := range sets {
		if sp == spec || strings.HasPrefix(sp, spec+":") {
			return true
		}
	}
	return false
}

func (s *Server) writeRecord(bw *bufio.Writer, r *Record, prefix string, withMeta bool) {
	if withMeta {
		bw.WriteString("<record>")
	}
	if r.Deleted {
		bw.WriteString(`<header status="deleted">`)
	} else {
		bw.WriteString("<header>")
	}
	if r.Malformed != NoIdentifier {
		bw.WriteString("<identifier>" + esc(r.Identifier) + "</identifier>")
	}
	bw.WriteString("<datestamp>" + s.opts.Granularity.Format(r.Datestamp) + "</datestamp>")
	for _, sp := range r.Sets {
		bw.WriteString("<setSpec>" + esc(sp) + "</setSpec>")
	}
	bw.WriteString("</header>")
	if withMeta {
		if !r.Deleted {
			bw.WriteString("<metadata>")
			switch r.Malformed {
			case BadXML:
				bw.WriteString("<broken><unclosed></broken>")
			case BadUTF8:
				bw.WriteString("<broken>\xff\xfe</broken>")
			default:
				bw.WriteString(r.Metadata[prefix])
			}
			bw.WriteString("</metadata>")
		}
		bw.WriteString("</record>\n")
	} else {
		bw.WriteString("\n")
	}
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
