package server

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare"
)

const atomNS = "http://www.w3.org/2005/Atom"

type xLink struct {
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr"`
	Href string `xml:"href,attr"`
}

type xAuthor struct {
	Name string `xml:"http://www.w3.org/2005/Atom name"`
}

type xEntry struct {
	IDs       []string  `xml:"http://www.w3.org/2005/Atom id"`
	Titles    []string  `xml:"http://www.w3.org/2005/Atom title"`
	Updateds  []string  `xml:"http://www.w3.org/2005/Atom updated"`
	Authors   []xAuthor `xml:"http://www.w3.org/2005/Atom author"`
	Links     []xLink   `xml:"http://www.w3.org/2005/Atom link"`
	Resources []string  `xml:"http://www.sdshare.org/2012/core/ resource"`
}

type xFeed struct {
	XMLName  xml.Name  `xml:"http://www.w3.org/2005/Atom feed"`
	IDs      []string  `xml:"http://www.w3.org/2005/Atom id"`
	Titles   []string  `xml:"http://www.w3.org/2005/Atom title"`
	Updateds []string  `xml:"http://www.w3.org/2005/Atom updated"`
	Authors  []xAuthor `xml:"http://www.w3.org/2005/Atom author"`
	Links    []xLink   `xml:"http://www.w3.org/2005/Atom link"`
	Entries  []xEntry  `xml:"http://www.w3.org/2005/Atom entry"`
}

func rel(l xLink) string {
	if l.Rel == "" {
		return "alternate"
	}
	return l.Rel
}

func linksRel(ls []xLink, r string) []xLink {
	var out []xLink
	for _, l := range ls {
		if rel(l) == r {
			out = append(out, l)
		}
	}
	return out
}

func (f *xFeed) next() string {
	if l := linksRel(f.Links, "next"); len(l) > 0 {
		return l[0].Href
	}
	return ""
}

func (e *xEntry) updated(t *testing.T) time.Time {
	t.Helper()
	u, err := time.Parse(time.RFC3339Nano, e.Updateds[0])
	if err != nil {
		t.Fatalf("entry updated %q: %v", e.Updateds[0], err)
	}
	return u
}

// env is a running server on 127.0.0.1 with its data directory.
type env struct {
	t       *testing.T
	dir     string // the collection's data directory
	state   string
	cfg     Config
	srv     *Server
	hs      *http.Server
	cancel  context.CancelFunc
	done    chan struct{}
	client  *http.Client
	base    string
	logs    *syncBuf
	running bool
	// beforeRun, if set, runs between Open and Run (to install hooks).
	beforeRun func(*Server)
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newEnv writes files into a fresh data directory and starts a server on
// it with collection "c" (mod adjusts the configuration).
func newEnv(t *testing.T, files map[string]string, mod func(*Config), beforeRun ...func(*Server)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), state: t.TempDir(), logs: &syncBuf{}}
	if len(beforeRun) > 0 {
		e.beforeRun = beforeRun[0]
	}
	for name, body := range files {
		e.write(name, body)
	}
	e.cfg = Config{
		StateDir: e.state, Collections: []CollectionConfig{{Name: "c", Path: e.dir}},
		Rescan: 50 * time.Millisecond, Debounce: 20 * time.Millisecond, NoSync: true,
		PushBaseDelay: time.Millisecond, PushMaxDelay: 20 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(e.logs, nil)),
	}
	if mod != nil {
		mod(&e.cfg)
	}
	e.client, _ = testnet.Client(t)
	e.cfg.PushClient = e.client
	e.start()
	t.Cleanup(e.stop)
	return e
}

func (e *env) write(name, body string) {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	// Write through a rename, as editors do, so a reload never sees half a file.
	tmp := filepath.Join(e.dir, ".tmp-"+filepath.Base(name))
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) start() {
	e.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	e.base = "http://" + ln.Addr().String() + "/sd/"
	e.cfg.BaseURL = e.base
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Open(ctx, e.cfg)
	if err != nil {
		cancel()
		ln.Close()
		e.t.Fatal(err)
	}
	e.srv, e.cancel, e.done, e.running = srv, cancel, make(chan struct{}), true
	e.hs = &http.Server{Handler: srv.Handler()}
	go e.hs.Serve(ln)
	if e.beforeRun != nil {
		e.beforeRun(srv)
	}
	go func() { srv.Run(ctx); close(e.done) }()
}

func (e *env) stop() {
	if !e.running {
		return
	}
	e.running = false
	e.cancel()
	<-e.done
	e.hs.Close()
	if err := e.srv.Close(); err != nil {
		e.t.Error(err)
	}
}

func (e *env) restart() {
	e.stop()
	e.start()
}

func (e *env) coll() *Collection { return e.srv.Collection("c") }

func (e *env) get(url string, hdr ...string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, b
}

var xmllintOnce struct {
	sync.Once
	path string
}

// checkRelaxNG validates a feed against the Atom RELAX NG grammar
// (SD-SRV-9).
func checkRelaxNG(t *testing.T, body []byte) {
	t.Helper()
	xmllintOnce.Do(func() { xmllintOnce.path, _ = exec.LookPath("xmllint") })
	if xmllintOnce.path == "" {
		t.Fatal("xmllint is needed to check feeds against the Atom RELAX NG grammar: apt-get install libxml2-utils")
	}
	p := filepath.Join(t.TempDir(), "feed.xml")
	os.WriteFile(p, body, 0o644)
	out, err := exec.Command(xmllintOnce.path, "--noout", "--relaxng", "../../testdata/sdshare/schema/atom.rng", p).CombinedOutput()
	if err != nil {
		t.Errorf("feed not valid against atom.rng: %v\n%s\n%s", err, out, body)
	}
}

// feed GETs an Atom feed and checks what every feed must satisfy:
// SD-SRV-4 (id, title, updated, once each), SD-SRV-5 (author), SD-SRV-6
// (an alternate link on every entry, at most one per type), SD-SRV-7 (RFC
// 3339 dates), SD-SRV-8 (self link), SD-SRV-9 (type and RELAX NG).
func (e *env) feed(url string) *xFeed {
	t := e.t
	t.Helper()
	resp, body := e.get(url)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, sdshare.AtomType) {
		t.Errorf("GET %s: Content-Type %q, want %s", url, ct, sdshare.AtomType)
	}
	checkRelaxNG(t, body)
	var f xFeed
	if err := xml.Unmarshal(body, &f); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	one := func(what string, v []string) {
		if len(v) != 1 || strings.TrimSpace(v[0]) == "" {
			t.Errorf("%s: %s appears %d times: %q", url, what, len(v), v)
		}
	}
	date := func(what string, v []string) {
		for _, s := range v {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil || !strings.HasSuffix(s, "Z") {
				t.Errorf("%s: %s %q is not an RFC 3339 UTC date-time", url, what, s)
			}
		}
	}
	one("feed id", f.IDs)
	one("feed title", f.Titles)
	one("feed updated", f.Updateds)
	date("feed updated", f.Updateds)
	if len(f.Authors) != 1 || f.Authors[0].Name == "" {
		t.Errorf("%s: feed author %v", url, f.Authors)
	}
	if self := linksRel(f.Links, "self"); len(self) != 1 || self[0].Href != url {
		t.Errorf("%s: self links %v", url, self)
	}
	ids := map[string]bool{}
	for i, en := range f.Entries {
		one(fmt.Sprintf("entry %d id", i), en.IDs)
		one(fmt.Sprintf("entry %d title", i), en.Titles)
		one(fmt.Sprintf("entry %d updated", i), en.Updateds)
		date("entry updated", en.Updateds)
		if len(en.IDs) == 1 {
			if ids[en.IDs[0]] {
				t.Errorf("%s: entry id %s twice", url, en.IDs[0])
			}
			ids[en.IDs[0]] = true
		}
		alts := linksRel(en.Links, "alternate")
		if len(alts) == 0 {
			t.Errorf("%s: entry %d has no alternate link", url, i)
		}
		types := map[string]bool{}
		for _, a := range alts {
			if types[a.Type] {
				t.Errorf("%s: entry %d: two alternate links of type %q", url, i, a.Type)
			}
			types[a.Type] = true
		}
		// Every SDShare link is duplicated as alternate with the same type
		// and href (SD-SRV-12, 13, 14, 17, 20).
		var sd, alt []string
		for _, l := range en.Links {
			if strings.HasPrefix(l.Rel, sdshare.NS) {
				sd = append(sd, l.Type+" "+l.Href)
				if l.Type == "" {
					t.Errorf("%s: entry %d: link rel %s has no type", url, i, l.Rel)
				}
			} else if rel(l) == "alternate" {
				alt = append(alt, l.Type+" "+l.Href)
			}
		}
		slices.Sort(sd)
		slices.Sort(alt)
		if !slices.Equal(sd, alt) {
			t.Errorf("%s: entry %d: SDShare links %q but alternates %q", url, i, sd, alt)
		}
	}
	return &f
}

// fragments follows a fragments feed through every next page.
func (e *env) fragments(url string) []xEntry {
	e.t.Helper()
	var out []xEntry
	for pages := 0; url != ""; pages++ {
		if pages > 10000 {
			e.t.Fatal("next links do not terminate")
		}
		f := e.feed(url)
		out = append(out, f.Entries...)
		url = f.next()
	}
	return out
}

// waitFor polls cond until it holds; the limit only ends a hung test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// resourcesOf returns v's resources (IRI subjects) in order.
func resourcesOf(t testing.TB, v *version) []rdf.Term {
	t.Helper()
	var out []rdf.Term
	if err := v.gf.groups(false, func(g group) error {
		if g.key[0] == kindIRI {
			out = append(out, rdf.IRI(g.key[1:]))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// fragmentOf returns r's fragment in v, as loaded.
func fragmentOf(t testing.TB, v *version, r rdf.Term) []rdf.Triple {
	t.Helper()
	ts, err := v.gf.fragment(r)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
