package oaireal

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Replay serves recorded responses of real repositories as a repository.
// Its methods are safe for concurrent use, also while a harvest runs.
type Replay struct {
	// URL is the replayed repository's base URL.
	URL string

	mu            sync.Mutex
	name          string
	identify      []byte // recorded Identify content ("" until loaded)
	formats       []byte
	sets          []byte
	granularity   Granularity
	deletedRecord string // overrides the recorded one when set
	pageSize      int
	records       map[string]*entry // prefix "\x00" identifier
	seq           int
	tokens        map[string]*listState
	fail          int
	retryAfter    string
	expireNext    bool
	requests      []url.Values
	hook          func(w http.ResponseWriter, r *http.Request) bool
	clock         time.Time // the repository's time at clockSet; zero: the real time
	clockSet      time.Time // when clock was set (wall clock)
}

type entry struct {
	Record
	t   time.Time // parsed datestamp (zero when unparsable)
	seq int       // order of the last change, the tie-break of datestamps
}

type listState struct {
	verb, prefix string
	list         []*entry
	cursor       int
}

// Recorded returns the directory of one recorded repository in this
// package's testdata: "dspace-eur-2003", "dspace-eur-2004" (the same DSpace
// repository ten months later, with deletions), "archivesspace-2025",
// "arxiv-2013".
func Recorded(name string) string { return Testdata("recorded", name) }

// StartReplay starts a replay server on 127.0.0.1 of the recorded
// repositories in dirs (later ones change the records of earlier ones, as
// a later harvest of the same repository would), 10 records a page.
func StartReplay(t testing.TB, dirs ...string) *Replay {
	t.Helper()
	r := &Replay{pageSize: 10, records: map[string]*entry{}, tokens: map[string]*listState{}}
	for _, dir := range dirs {
		if err := r.Load(dir); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/oai"
	return r
}

// Load reads a recorded repository's directory: Identify.xml,
// ListMetadataFormats.xml and ListSets.xml replace those answers; the
// records of every ListRecords*.xml and GetRecord*.xml are added or replace
// the records of the same prefix and identifier (ListIdentifiers*.xml,
// headers without metadata, are not loaded).
func (r *Replay) Load(dir string) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.xml"))
	if err != nil {
		return err
	}
	sort.Strings(names)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.name == "" {
		r.name = filepath.Base(dir)
	}
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasPrefix(base, "ListIdentifiers") {
			continue
		}
		doc, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		resp, err := ParseResponse(doc)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if resp.ResponseDate.After(r.clock) {
			r.clock, r.clockSet = resp.ResponseDate, time.Now()
		}
		switch resp.Verb {
		case verbIdentify:
			r.identify = resp.Inner
			if m := reGranularity.FindSubmatch(resp.Inner); m != nil {
				if g, err := parseGranularity(string(m[1])); err == nil {
					r.granularity = g
				}
			}
		case verbListMetadataFormats:
			r.formats = resp.Inner
		case verbListSets:
			r.sets = resp.Inner
		case verbListRecords, verbGetRecord:
			for _, rec := range resp.Records {
				if rec.Prefix == "" {
					rec.Prefix = dcPrefix
				}
				r.putLocked(rec)
			}
		default:
			return fmt.Errorf("%s: a %s response is not replayed", name, resp.Verb)
		}
	}
	return nil
}

var (
	reGranularity = regexp.MustCompile(`<granularity>\s*([^<]*?)\s*</granularity>`)
	reBaseURL     = regexp.MustCompile(`<baseURL>[^<]*</baseURL>`)
	reDeleted     = regexp.MustCompile(`<deletedRecord>[^<]*</deletedRecord>`)
	rePrefix      = regexp.MustCompile(`<metadataPrefix>\s*([^<]*?)\s*</metadataPrefix>`)
)

func (r *Replay) putLocked(rec Record) {
	r.seq++
	e := &entry{Record: rec, seq: r.seq}
	if t, _, err := parseDatestamp(rec.Datestamp); err == nil {
		e.t = t
	}
	r.records[rec.Prefix+"\x00"+rec.Identifier] = e
}

// SetClock sets the repository's clock to t, from where it runs on with
// the real time: the responseDate of its answers (and the time a harvester
// that trusts the repository's clock harvests from next time); the zero
// time means the real time. Load sets it to the latest responseDate
// recorded, so a recording is replayed at the time it was recorded and a
// later recording loaded after a harvest is a change since that harvest.
func (r *Replay) SetClock(t time.Time) {
	r.mu.Lock()
	r.clock, r.clockSet = t, time.Now()
	r.mu.Unlock()
}

func (r *Replay) nowLocked() time.Time {
	if r.clock.IsZero() {
		return time.Now()
	}
	return r.clock.Add(time.Since(r.clockSet))
}

// SetPageSize sets the records (or headers) per page; a smaller page makes
// more resumption tokens.
func (r *Replay) SetPageSize(n int) {
	r.mu.Lock()
	r.pageSize = max(n, 1)
	r.mu.Unlock()
}

// SetDeletedRecord makes Identify announce policy (no, transient,
// persistent) instead of the recorded one.
func (r *Replay) SetDeletedRecord(policy string) {
	r.mu.Lock()
	r.deletedRecord = policy
	r.mu.Unlock()
}

// Granularity is the repository's datestamp granularity (from the recorded
// Identify; day when none was recorded).
func (r *Replay) Granularity() Granularity {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.granularity
}

// Records returns the records of prefix the repository holds now, deleted
// ones included, in the order ListRecords lists them.
func (r *Replay) Records(prefix string) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Record
	for _, e := range r.sortedLocked(prefix) {
		out = append(out, e.Record)
	}
	return out
}

// Put adds or changes a record: metadata is the <metadata> element's
// content; the record's datestamp becomes at (at the repository's
// granularity).
func (r *Replay) Put(prefix, identifier string, at time.Time, sets []string, metadata string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ds := r.granularity.Format(at)
	header := buildHeader(identifier, ds, sets, false)
	raw := "<record>" + header + "<metadata>" + metadata + "</metadata></record>"
	r.putLocked(Record{Prefix: prefix, Identifier: identifier, Datestamp: ds, Sets: sets, Raw: []byte(raw), Header: []byte(header)})
}

// Delete turns a record into a deleted record (status="deleted", datestamp
// at), as a repository with deletedRecord persistent or transient reports
// it; it returns false when there was no such record.
func (r *Replay) Delete(prefix, identifier string, at time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.records[prefix+"\x00"+identifier]
	if !ok {
		return false
	}
	ds := r.granularity.Format(at)
	header := buildHeader(identifier, ds, e.Sets, true)
	r.putLocked(Record{Prefix: prefix, Identifier: identifier, Datestamp: ds, Sets: e.Sets, Deleted: true,
		Raw: []byte("<record>" + header + "</record>"), Header: []byte(header)})
	return true
}

// Remove drops a record without a trace, as a repository with
// deletedRecord no does; it returns false when there was no such record.
func (r *Replay) Remove(prefix, identifier string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := prefix + "\x00" + identifier
	_, ok := r.records[k]
	delete(r.records, k)
	return ok
}

// PutRaw adds raw as a record's bytes, verbatim (bad XML, invalid UTF-8, a
// header without identifier: whatever a broken repository sends); key and
// at only place it in the lists.
func (r *Replay) PutRaw(prefix, key string, at time.Time, raw []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ds := r.granularity.Format(at)
	r.putLocked(Record{Prefix: prefix, Identifier: key, Datestamp: ds, Raw: raw,
		Header: []byte(buildHeader(key, ds, nil, false))})
}

// Fail answers the next n requests with 503 Service Unavailable and a
// Retry-After header of retryAfter (seconds or an HTTP date; "" for none).
func (r *Replay) Fail(n int, retryAfter string) {
	r.mu.Lock()
	r.fail, r.retryAfter = n, retryAfter
	r.mu.Unlock()
}

// ExpireTokens makes every resumption token issued so far expire: a
// request with one is answered badResumptionToken, as a repository that
// restarted or whose token outlived its expirationDate answers.
func (r *Replay) ExpireTokens() {
	r.mu.Lock()
	clear(r.tokens)
	r.mu.Unlock()
}

// ExpireNextToken makes the next request that carries a resumption token
// find it expired (and every token issued until then).
func (r *Replay) ExpireNextToken() {
	r.mu.Lock()
	r.expireNext = true
	r.mu.Unlock()
}

// Handle installs h in front of the replay: when it returns true it has
// answered the request (the request is still logged).
func (r *Replay) Handle(h func(w http.ResponseWriter, req *http.Request) bool) {
	r.mu.Lock()
	r.hook = h
	r.mu.Unlock()
}

// Requests returns the arguments of every request so far.
func (r *Replay) Requests() []url.Values {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]url.Values(nil), r.requests...)
}

func buildHeader(identifier, datestamp string, sets []string, deleted bool) string {
	var b strings.Builder
	if deleted {
		b.WriteString(`<header status="deleted">`)
	} else {
		b.WriteString("<header>")
	}
	fmt.Fprintf(&b, "<identifier>%s</identifier><datestamp>%s</datestamp>", escape(identifier), escape(datestamp))
	for _, s := range sets {
		fmt.Fprintf(&b, "<setSpec>%s</setSpec>", escape(s))
	}
	b.WriteString("</header>")
	return b.String()
}

// sortedLocked lists prefix's records by datestamp, then by order of
// change, as repositories list by their datestamp index.
func (r *Replay) sortedLocked(prefix string) []*entry {
	var list []*entry
	for _, e := range r.records {
		if e.Prefix == prefix {
			list = append(list, e)
		}
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].t.Equal(list[j].t) {
			return list[i].t.Before(list[j].t)
		}
		return list[i].seq < list[j].seq
	})
	return list
}

func (r *Replay) prefixesLocked() map[string]bool {
	ps := map[string]bool{}
	for _, m := range rePrefix.FindAllSubmatch(r.formats, -1) {
		ps[string(m[1])] = true
	}
	for _, e := range r.records {
		ps[e.Prefix] = true
	}
	return ps
}

func (r *Replay) serve(w http.ResponseWriter, req *http.Request) {
	if err := req.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.requests = append(r.requests, req.Form)
	hook := r.hook
	if r.fail > 0 {
		r.fail--
		if r.retryAfter != "" {
			w.Header().Set("Retry-After", r.retryAfter)
		}
		r.mu.Unlock()
		http.Error(w, "503 Service Unavailable (oaireal replay)", http.StatusServiceUnavailable)
		return
	}
	r.mu.Unlock()
	if hook != nil && hook(w, req) {
		return
	}
	r.mu.Lock()
	body, args := r.answerLocked(req.Form)
	now := r.nowLocked()
	r.mu.Unlock()
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/ http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd">
`)
	fmt.Fprintf(&b, "<responseDate>%s</responseDate>\n<request", now.UTC().Format("2006-01-02T15:04:05Z"))
	for _, k := range sortedKeys(args) {
		fmt.Fprintf(&b, ` %s="%s"`, k, escape(args.Get(k)))
	}
	fmt.Fprintf(&b, ">%s</request>\n", escape(r.URL))
	b.Write(body)
	b.WriteString("\n</OAI-PMH>\n")
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.Write(b.Bytes())
}

func sortedKeys(v url.Values) []string {
	var ks []string
	for k := range v {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func oaiError(code, msg string) []byte {
	return []byte(fmt.Sprintf(`<error code="%s">%s</error>`, code, escape(msg)))
}

// answerLocked returns the response's content after <request> and the
// request's arguments to echo (none after an error, as the protocol asks).
func (r *Replay) answerLocked(form url.Values) ([]byte, url.Values) {
	args := url.Values{}
	for k, v := range form {
		if len(v) > 0 {
			args.Set(k, v[0])
		}
	}
	for k, v := range form {
		if len(v) > 1 {
			return oaiError(errBadArgument, "argument "+k+" repeated"), nil
		}
	}
	verb := args.Get("verb")
	allowed := map[string][]string{
		verbIdentify:            {},
		verbListMetadataFormats: {"identifier"},
		verbListSets:            {"resumptionToken"},
		verbGetRecord:           {"identifier", "metadataPrefix"},
		verbListIdentifiers:     {"metadataPrefix", "from", "until", "set", "resumptionToken"},
		verbListRecords:         {"metadataPrefix", "from", "until", "set", "resumptionToken"},
	}
	ok, known := allowed[verb]
	if !known {
		return oaiError(errBadVerb, fmt.Sprintf("illegal verb %q", verb)), nil
	}
	for k := range args {
		if k != "verb" && !contains(ok, k) {
			return oaiError(errBadArgument, "illegal argument "+k), nil
		}
	}
	switch verb {
	case verbIdentify:
		return r.identifyLocked(), args
	case verbListMetadataFormats:
		return r.formatsLocked(), args
	case verbListSets:
		return r.setsLocked(), args
	case verbGetRecord:
		prefix, id := args.Get("metadataPrefix"), args.Get("identifier")
		if prefix == "" || id == "" {
			return oaiError(errBadArgument, "identifier and metadataPrefix are required"), nil
		}
		if !r.prefixesLocked()[prefix] {
			return oaiError(errCannotDisseminateFormat, prefix), nil
		}
		e, ok := r.records[prefix+"\x00"+id]
		if !ok {
			return oaiError(errIDDoesNotExist, id), nil
		}
		return append(append([]byte("<GetRecord>"), e.Raw...), "</GetRecord>"...), args
	}
	return r.listLocked(verb, args)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r *Replay) identifyLocked() []byte {
	inner := r.identify
	if len(inner) == 0 {
		earliest := "2000-01-01"
		var first time.Time
		for _, e := range r.records {
			if !e.t.IsZero() && (first.IsZero() || e.t.Before(first)) {
				first = e.t
			}
		}
		if !first.IsZero() {
			earliest = r.granularity.Format(first)
		}
		inner = []byte(fmt.Sprintf(`<repositoryName>%s (replayed)</repositoryName><baseURL>x</baseURL><protocolVersion>2.0</protocolVersion><adminEmail>nobody@example.org</adminEmail><earliestDatestamp>%s</earliestDatestamp><deletedRecord>persistent</deletedRecord><granularity>%s</granularity>`,
			escape(r.name), earliest, r.granularity))
	}
	inner = reBaseURL.ReplaceAll(inner, []byte("<baseURL>"+escape(r.URL)+"</baseURL>"))
	if r.deletedRecord != "" {
		inner = reDeleted.ReplaceAll(inner, []byte("<deletedRecord>"+r.deletedRecord+"</deletedRecord>"))
	}
	return append(append([]byte("<Identify>"), inner...), "</Identify>"...)
}

func (r *Replay) formatsLocked() []byte {
	inner := r.formats
	if len(inner) == 0 {
		var b bytes.Buffer
		for p := range r.prefixesLocked() {
			ns, schema := "http://example.org/"+p+"/", "http://example.org/"+p+".xsd"
			if p == dcPrefix {
				ns, schema = "http://www.openarchives.org/OAI/2.0/oai_dc/", "http://www.openarchives.org/OAI/2.0/oai_dc.xsd"
			}
			fmt.Fprintf(&b, "<metadataFormat><metadataPrefix>%s</metadataPrefix><schema>%s</schema><metadataNamespace>%s</metadataNamespace></metadataFormat>", escape(p), schema, ns)
		}
		inner = b.Bytes()
	}
	return append(append([]byte("<ListMetadataFormats>"), inner...), "</ListMetadataFormats>"...)
}

func (r *Replay) setsLocked() []byte {
	inner := r.sets
	if len(inner) == 0 {
		seen := map[string]bool{}
		var b bytes.Buffer
		for _, e := range r.sortedLocked(dcPrefix) {
			for _, s := range e.Sets {
				if !seen[s] {
					seen[s] = true
					fmt.Fprintf(&b, "<set><setSpec>%s</setSpec><setName>%s</setName></set>", escape(s), escape(s))
				}
			}
		}
		if b.Len() == 0 {
			return oaiError(errNoSetHierarchy, "no sets")
		}
		inner = b.Bytes()
	}
	return append(append([]byte("<ListSets>"), inner...), "</ListSets>"...)
}

func (r *Replay) listLocked(verb string, args url.Values) ([]byte, url.Values) {
	var st *listState
	if tok := args.Get("resumptionToken"); tok != "" {
		if len(args) != 2 {
			return oaiError(errBadArgument, "resumptionToken is exclusive"), nil
		}
		if r.expireNext {
			r.expireNext = false
			clear(r.tokens)
		}
		st = r.tokens[tok]
		delete(r.tokens, tok)
		if st == nil || st.verb != verb {
			return oaiError(errBadResumptionToken, "expired or unknown resumptionToken "+tok), nil
		}
	} else {
		prefix := args.Get("metadataPrefix")
		if prefix == "" {
			return oaiError(errBadArgument, "metadataPrefix is required"), nil
		}
		if !r.prefixesLocked()[prefix] {
			return oaiError(errCannotDisseminateFormat, prefix), nil
		}
		var from, until time.Time
		var untilGran Granularity
		var err error
		var fromGran Granularity
		if s := args.Get("from"); s != "" {
			if from, fromGran, err = parseDatestamp(s); err != nil || fromGran > r.granularity {
				return oaiError(errBadArgument, "bad from "+s), nil
			}
		}
		if s := args.Get("until"); s != "" {
			if until, untilGran, err = parseDatestamp(s); err != nil || untilGran > r.granularity {
				return oaiError(errBadArgument, "bad until "+s), nil
			}
			if args.Get("from") != "" && fromGran != untilGran {
				return oaiError(errBadArgument, "from and until differ in granularity"), nil
			}
		}
		set := args.Get("set")
		st = &listState{verb: verb, prefix: prefix}
		for _, e := range r.sortedLocked(prefix) {
			if !from.IsZero() && e.t.Before(from) {
				continue
			}
			if !until.IsZero() && !e.t.Before(until.Add(untilGran.unit())) {
				continue
			}
			if set != "" && !inSet(e.Sets, set) {
				continue
			}
			st.list = append(st.list, e)
		}
		if len(st.list) == 0 {
			return oaiError(errNoRecordsMatch, "no records match"), nil
		}
	}
	end := min(st.cursor+r.pageSize, len(st.list))
	var b bytes.Buffer
	b.WriteString("<" + verb + ">\n")
	for _, e := range st.list[st.cursor:end] {
		if verb == verbListIdentifiers {
			b.Write(e.Header)
		} else {
			b.Write(e.Raw)
		}
		b.WriteByte('\n')
	}
	if st.cursor > 0 || end < len(st.list) {
		fmt.Fprintf(&b, `<resumptionToken completeListSize="%d" cursor="%d"`, len(st.list), st.cursor)
		if end < len(st.list) {
			tok := newToken()
			r.tokens[tok] = &listState{verb: st.verb, prefix: st.prefix, list: st.list, cursor: end}
			fmt.Fprintf(&b, ` expirationDate="%s">%s</resumptionToken>`, r.nowLocked().Add(time.Hour).UTC().Format("2006-01-02T15:04:05Z"), tok)
		} else {
			b.WriteString("/>")
		}
	}
	b.WriteString("</" + verb + ">")
	return b.Bytes(), args
}

// inSet reports membership of set or of one of its subsets ("a" holds
// "a:b"), as the protocol's set hierarchy has it.
func inSet(sets []string, set string) bool {
	for _, s := range sets {
		if s == set || strings.HasPrefix(s, set+":") {
			return true
		}
	}
	return false
}

func newToken() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
