//go:build unix

package main

// TestOAIModel is the seeded, model-based test of `serve --oai-pmh` (issue
// 21): random histories of an OAI-PMH repository (internal/testing/oaitest:
// adds, updates, deletes, set changes, datestamp ties at the granule
// boundary, expired resumptionTokens, 503 with Retry-After, malformed
// records, transient tombstones purged) flow through the harvester, the
// journal, the Change Lists and the change notifications of a real `serve`
// into a `sync --follow` mirror, while serve is stopped (SIGTERM) and
// killed (SIGKILL, often in the middle of a harvest) and restarted on its
// state. After every step, once settled, the mirror equals the
// repository's current records: exactly one file per live record and
// metadata prefix, at harvest.RecordPath, holding the record's metadata
// in canonical form (harvest.Canonical, and compared as XML independently
// of it: names by namespace URI, attributes, text); a record
// whose update is malformed keeps its last good version, and a record
// that was never well-formed is absent.
//
// serve and sync run as children of the test binary (TestModelChild of
// model_test.go), dialing loopback only.
//
//	go test ./cmd/resourcesync -run '^TestOAIModel$' -count=1 -v                            # 3 histories (1 under -short)
//	go test ./cmd/resourcesync -run '^TestOAIModel$' -count=1 -oaimodel.n=50 -timeout=0     # more
//	go test ./cmd/resourcesync -run '^TestOAIModel$' -count=1 -oaimodel.seed=S -oaimodel.steps=N -v

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/testing/oaitest"
	"github.com/resourcesync-go/resourcesync/oai"
	"github.com/resourcesync-go/resourcesync/oai/harvest"
)

var (
	oaiModelSeed  = flag.Uint64("oaimodel.seed", 0, "TestOAIModel: run only the history with this seed")
	oaiModelN     = flag.Int("oaimodel.n", 0, "TestOAIModel: number of histories (default 3, 1 under -short)")
	oaiModelSteps = flag.Int("oaimodel.steps", 0, "TestOAIModel: steps per history (default 10, 5 under -short)")
)

func TestOAIModel(t *testing.T) {
	n, steps := 3, 10
	if testing.Short() {
		n, steps = 1, 5
	}
	if *oaiModelN > 0 {
		n = *oaiModelN
	}
	if *oaiModelSteps > 0 {
		steps = *oaiModelSteps
	}
	seeds := []uint64{*oaiModelSeed}
	if *oaiModelSeed == 0 {
		seeds = nil
		for i := range uint64(n) {
			seeds = append(seeds, 1+i)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			h := newOAIHistory(t, seed, steps)
			h.run()
		})
	}
}

// oaiRecord is the model of one record.
type oaiRecord struct {
	meta    map[string]string // prefix → the repository's current metadata
	good    map[string]string // what the mirror must hold (nil: absent)
	deleted bool
	noID    bool // served with a header without identifier
	// settled: the mirror was seen equal to the model since the last
	// change of the record (a tombstone purged before that would leave
	// the deletion unseen, as in any transient repository).
	settled bool
}

type oaiHistory struct {
	t         *testing.T
	seed      uint64
	steps     int
	rng       *rand.Rand
	repo      *oaitest.Server
	gran      oai.Granularity
	transient bool
	prefixes  []string
	records   map[string]*oaiRecord
	ids       []string // in creation order, for picking
	counter   int

	dir, state, dest, addr, base string
	serveArgs                    []string
	serve, follow                *proc

	// expireAt, when > 0, expires every token when the ListRecords
	// request counter reaches it.
	listRecords atomic.Int64
	expireAt    atomic.Int64

	trace []string
	stats map[string]int
}

func newOAIHistory(t *testing.T, seed uint64, steps int) *oaiHistory {
	root := t.TempDir()
	h := &oaiHistory{t: t, seed: seed, steps: steps, rng: rand.New(rand.NewPCG(seed, 0x0a1)),
		records: map[string]*oaiRecord{}, stats: map[string]int{},
		dir: filepath.Join(root, "records"), state: filepath.Join(root, "state"), dest: filepath.Join(root, "dest")}
	h.gran = oai.Second
	if h.rng.IntN(3) == 0 {
		h.gran = oai.Day
	}
	h.transient = h.rng.IntN(2) == 0
	deleted := "persistent"
	if h.transient {
		deleted = "transient"
	}
	h.repo = oaitest.New(t, oaitest.Options{Granularity: h.gran, DeletedRecord: deleted, PageSize: 2 + h.rng.IntN(6)})
	h.prefixes = []string{oai.DCPrefix}
	if h.rng.IntN(2) == 0 {
		h.repo.AddFormat("mods", "http://www.loc.gov/standards/mods/v3/mods-3-7.xsd", "http://www.loc.gov/mods/v3")
		h.prefixes = append(h.prefixes, "mods")
	}
	h.repo.OnRequest(func(verb string, args url.Values) {
		if verb != oai.ListRecords {
			return
		}
		n := h.listRecords.Add(1)
		if at := h.expireAt.Load(); at > 0 && n >= at && args.Has("resumptionToken") {
			h.expireAt.Store(0)
			h.repo.ExpireTokens()
		}
	})
	h.addr = freeAddr(t)
	h.base = "http://" + h.addr + "/"
	h.serveArgs = []string{"serve", "--addr", h.addr, "--oai-pmh", h.repo.URL, "--oai-interval", "150ms",
		"--changelist-period", []string{"1h", "2s"}[h.rng.IntN(2)], "--dump-interval", []string{"1ms", "1h"}[h.rng.IntN(2)],
		"--allow-private-callbacks", "--allow-empty", "--state", h.state}
	for _, p := range h.prefixes {
		h.serveArgs = append(h.serveArgs, "--metadata-prefix", p)
	}
	h.serveArgs = append(h.serveArgs, h.dir)
	h.logf("history %d: granularity %v, deletedRecord %s, prefixes %v", seed, h.gran, deleted, h.prefixes)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("history (seed %d):\n  %s", h.seed, strings.Join(h.trace, "\n  "))
			t.Logf("reproduce: go test ./cmd/resourcesync -run '^TestOAIModel$' -count=1 -v -oaimodel.seed=%d -oaimodel.steps=%d", h.seed, h.steps)
		}
	})
	return h
}

func (h *oaiHistory) logf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	h.trace = append(h.trace, s)
	if testing.Verbose() {
		h.t.Logf("%s", s)
	}
}

func (h *oaiHistory) run() {
	start := time.Now()
	for range 3 + h.rng.IntN(10) {
		h.add()
	}
	h.startServe()
	h.startFollow()
	h.settle("initial harvest")
	for i := range h.steps {
		h.logf("step %d:", i)
		h.step()
		h.settle(fmt.Sprint("step ", i))
	}
	if code, ok := h.follow.interrupt(20 * time.Second); !ok || code != 0 {
		h.t.Fatalf("sync --follow: exit %d (in time: %v) after SIGINT:\n%s", code, ok, h.follow.tail())
	}
	if code, ok := h.serve.interrupt(20 * time.Second); !ok || code != 0 {
		h.t.Fatalf("serve: exit %d (in time: %v) after SIGTERM:\n%s", code, ok, h.serve.tail())
	}
	var ks []string
	for k, v := range h.stats {
		ks = append(ks, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(ks)
	h.t.Logf("seed %d: %d steps, %d records, in %s; %s", h.seed, h.steps, len(h.records), time.Since(start).Round(time.Millisecond), strings.Join(ks, " "))
}

// --- the repository ---

func (h *oaiHistory) metadata(id string, version int) map[string]string {
	m := map[string]string{oai.DCPrefix: fmt.Sprintf(`<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/">`+
		`<dc:title>Record %s, version %d &amp; more</dc:title><dc:identifier>%s</dc:identifier>  <dc:description lang="en">%s</dc:description></oai_dc:dc>`,
		xmlText(id), version, xmlText(id), strings.Repeat("text ", h.rng.IntN(20)))}
	if len(h.prefixes) > 1 {
		m["mods"] = fmt.Sprintf(`<mods xmlns="http://www.loc.gov/mods/v3" version="3.7"><titleInfo><title>%s v%d</title></titleInfo></mods>`, xmlText(id), version)
	}
	return m
}

func xmlText(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// newID is an identifier; some need escaping in a file name or URL.
func (h *oaiHistory) newID() string {
	h.counter++
	switch h.rng.IntN(6) {
	case 0:
		return fmt.Sprintf("oai:example.org:a/b %d?x=%%20&y", h.counter)
	case 1:
		return fmt.Sprintf("oai:example.org:ünï-%d", h.counter)
	case 2:
		return fmt.Sprintf(".hidden:%d", h.counter)
	default:
		return fmt.Sprintf("oai:example.org:%d", h.counter)
	}
}

func (h *oaiHistory) sets() []string {
	all := []string{"a", "b", "a:x", "c"}
	var out []string
	for _, s := range all {
		if h.rng.IntN(3) == 0 {
			out = append(out, s)
		}
	}
	return out
}

func (h *oaiHistory) add() {
	id := h.newID()
	m := h.metadata(id, 0)
	h.repo.Put(id, h.sets(), m)
	h.records[id] = &oaiRecord{meta: m, good: m}
	h.ids = append(h.ids, id)
	h.logf("  add %q", id)
	h.stats["add"]++
}

// pick returns a record that is live (not deleted) when live.
func (h *oaiHistory) pick(live bool) (string, *oaiRecord, bool) {
	var c []string
	for _, id := range h.ids {
		if r := h.records[id]; !live || !r.deleted {
			c = append(c, id)
		}
	}
	if len(c) == 0 {
		return "", nil, false
	}
	id := c[h.rng.IntN(len(c))]
	return id, h.records[id], true
}

// advance moves the repository's clock: often not at all (changes in the
// granule of the last harvest: the tie at the boundary), or by one
// granule, or more.
func (h *oaiHistory) advance() {
	g := time.Second
	if h.gran == oai.Day {
		g = 24 * time.Hour
	}
	switch h.rng.IntN(4) {
	case 0, 1:
		h.stats["tie"]++
	case 2:
		h.repo.Advance(g)
	default:
		h.repo.Advance(time.Duration(1+h.rng.IntN(100)) * time.Second)
	}
}

func (h *oaiHistory) step() {
	h.advance()
	for range 1 + h.rng.IntN(4) {
		h.change()
	}
	switch h.rng.IntN(8) {
	case 0:
		h.expireAt.Store(h.listRecords.Load() + 1 + int64(h.rng.IntN(3)))
		h.logf("  expire the tokens at a coming ListRecords page")
		h.stats["token expiry"]++
	case 1:
		n, wait := 1+h.rng.IntN(2), time.Duration(h.rng.IntN(2))*time.Second
		h.repo.Fail(n, 503, wait)
		h.logf("  the next %d requests: 503 Retry-After %s", n, wait)
		h.stats["503"]++
	}
	switch h.rng.IntN(6) {
	case 0:
		h.restartServe(false, 0)
	case 1, 2:
		h.restartServe(true, time.Duration(h.rng.IntN(400))*time.Millisecond)
	}
}

func (h *oaiHistory) change() {
	id, r, ok := h.pick(true)
	n := h.rng.IntN(100)
	if ok && !r.settled && n >= 67 && n < 88 {
		// A malformed change right after a good one: whether a harvest
		// saw the good one in between is up to the scheduler, so the
		// model would not know the last good version.
		n = 0
	}
	if ok {
		r.settled = false
	}
	switch {
	case !ok || n < 25:
		h.add()
	case n < 45: // update
		m := h.metadata(id, h.rng.IntN(1000)+1)
		h.repo.Put(id, h.sets(), m)
		r.meta = m
		if !r.noID {
			r.good = m
		}
		h.logf("  update %q", id)
		h.stats["update"]++
	case n < 57: // delete (a record without identifier cannot be)
		if r.noID {
			h.repair(id, r)
		}
		h.repo.Delete(id)
		r.deleted, r.good = true, nil
		h.logf("  delete %q", id)
		h.stats["delete"]++
	case n < 67:
		h.repo.SetSets(id, h.sets())
		h.logf("  set change %q (bytes unchanged)", id)
		h.stats["set change"]++
	case n < 77: // an update with malformed metadata: the last good one stays
		bad := map[string]string{}
		for p := range r.meta {
			bad[p] = []string{"<broken><unclosed></broken>", "<broken>\xff\xfe</broken>"}[h.rng.IntN(2)]
		}
		h.repo.Put(id, h.sets(), bad)
		r.meta = bad
		h.logf("  malformed update %q", id)
		h.stats["malformed update"]++
	case n < 82: // a new record that is malformed from the start: absent
		h.malformedNew()
	case n < 88: // the header loses its identifier, then the record changes
		if r.noID {
			h.repair(id, r)
			return
		}
		h.repo.SetMalformed(id, oaitest.NoIdentifier)
		r.noID = true
		m := h.metadata(id, h.rng.IntN(1000)+1)
		h.repo.Put(id, h.sets(), m)
		r.meta = m
		h.logf("  header without identifier, then updated: %q keeps its last good version", id)
		h.stats["no identifier"]++
	case n < 94 && h.transient: // purge a tombstone the mirror applied
		did, dr, ok := h.pick(false)
		if ok && dr.deleted && dr.settled {
			h.repo.Forget(did)
			h.logf("  forget the tombstone of %q", did)
			h.stats["forget"]++
		}
	default:
		h.add()
	}
}

// malformedNew adds a record whose metadata is not XML.
func (h *oaiHistory) malformedNew() {
	id := h.newID()
	m := map[string]string{}
	for _, p := range h.prefixes {
		m[p] = []string{"<broken><unclosed></broken>", "<broken>\xff\xfe</broken>"}[h.rng.IntN(2)]
	}
	h.repo.Put(id, h.sets(), m)
	h.records[id] = &oaiRecord{meta: m}
	h.ids = append(h.ids, id)
	h.logf("  add malformed %q (absent)", id)
	h.stats["malformed add"]++
}

// repair gives a record without identifier its identifier back with new
// metadata.
func (h *oaiHistory) repair(id string, r *oaiRecord) {
	h.repo.SetMalformed(id, oaitest.WellFormed)
	m := h.metadata(id, h.rng.IntN(1000)+1)
	h.repo.Put(id, h.sets(), m)
	r.meta, r.good, r.noID = m, m, false
	h.logf("  repair %q", id)
	h.stats["repair"]++
}

// --- the processes ---

func (h *oaiHistory) startServe() {
	h.serve = startProc(h.t, h.serveArgs...)
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(h.serve.out.String(), "change notifications:") {
		if h.serve.exited() || time.Now().After(deadline) {
			h.t.Fatalf("serve did not start (exit %d):\n%s", h.serve.code, h.serve.tail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// restartServe stops serve (SIGTERM) or kills it (SIGKILL) after delay,
// which often falls in the middle of a harvest, and starts it again.
func (h *oaiHistory) restartServe(hard bool, delay time.Duration) {
	time.Sleep(delay)
	if hard {
		h.logf("  kill -9 serve after %s", delay)
		h.stats["kill -9 serve"]++
		h.serve.kill()
	} else {
		h.logf("  restart serve (SIGTERM)")
		h.stats["restart serve"]++
		if code, ok := h.serve.interrupt(20 * time.Second); !ok || code != 0 {
			h.t.Fatalf("serve did not stop on SIGTERM (exit %d, in time %v):\n%s", code, ok, h.serve.tail())
		}
	}
	h.serve.stdin.Close()
	h.startServe()
}

func (h *oaiHistory) startFollow() {
	listen := freeAddr(h.t)
	h.follow = startProc(h.t, "sync", "--follow", "--max-delete", "-1", "--listen", listen, "--poll-interval", "1s", h.base, h.dest)
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(h.follow.out.String(), "subscribed to") {
		if h.follow.exited() || time.Now().After(deadline) {
			h.t.Fatalf("%s did not subscribe (exit %d):\n%s\nserve:\n%s", h.follow, h.follow.code, h.follow.tail(), h.serve.tail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// --- the check ---

// want is the mirror the model expects: RecordPath → metadata.
func (h *oaiHistory) want() map[string]string {
	w := map[string]string{}
	for id, r := range h.records {
		for p, m := range r.good {
			w[harvest.RecordPath(id, p)] = m
		}
	}
	return w
}

// files reads root (without DEST's state) as path → bytes.
func (h *oaiHistory) files(root string) map[string][]byte {
	m := map[string][]byte{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == destination.StateDirName {
				return filepath.SkipDir
			}
			return nil
		}
		if b, err := os.ReadFile(p); err == nil {
			m[rel] = b
		}
		return nil
	})
	return m
}

// diff says how the mirror differs from the model ("" when equal).
func (h *oaiHistory) diff() string { return h.diffTree(h.dest) }

// diffTree says how the files under root (the mirror, or the Source's
// DIR for a diagnosis) differ from the model.
func (h *oaiHistory) diffTree(root string) string {
	want, got := h.want(), h.files(root)
	var d []string
	for p, m := range want {
		b, ok := got[p]
		if !ok {
			d = append(d, "missing "+p)
			continue
		}
		// The bytes: the metadata's canonical form (harvest.Canonical,
		// so that an unchanged record is the same file every harvest);
		// and, independently of that function, the same XML.
		c, err := harvest.Canonical([]byte(m))
		if err != nil {
			h.t.Fatalf("the model's metadata of %s: %v", p, err)
		}
		if !bytes.Equal(b, c) {
			d = append(d, fmt.Sprintf("%s: %q, want the canonical %q", p, b, c))
		} else if eq, why := sameXML(b, []byte(m)); !eq {
			d = append(d, fmt.Sprintf("%s differs (%s): %q, want %q", p, why, b, m))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			d = append(d, "extra "+p)
		}
	}
	slices.Sort(d)
	if len(d) > 8 {
		d = append(d[:8], fmt.Sprintf("and %d more", len(d)-8))
	}
	return strings.Join(d, "; ")
}

// settle waits until the mirror equals the model.
func (h *oaiHistory) settle(what string) {
	h.t.Helper()
	start := time.Now()
	for {
		why := h.diff()
		if why == "" {
			for _, r := range h.records {
				r.settled = true
			}
			h.logf("  %s: the mirror equals the repository (%d files) after %s", what, len(h.want()), time.Since(start).Round(time.Millisecond))
			return
		}
		if h.serve.exited() {
			h.t.Fatalf("%s: serve exited (%d):\n%s", what, h.serve.code, h.serve.tail())
		}
		if h.follow.exited() {
			h.t.Fatalf("%s: %s exited (%d):\n%s", what, h.follow, h.follow.code, h.follow.tail())
		}
		if time.Since(start) > 60*time.Second {
			src := h.diffTree(h.dir)
			if src == "" {
				src = "equal to the model (the records were harvested)"
			}
			h.t.Fatalf("%s: the mirror does not equal the repository after 60s: %s\nthe Source's DIR: %s\nserve:\n%s\nsync --follow:\n%s", what, why, src, h.serve.tail(), h.follow.tail())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// sameXML compares two XML fragments as the harvester may serialise them:
// element and attribute names by namespace URI (prefixes and namespace
// declarations aside), attribute values, and text; comments and
// processing instructions aside.
func sameXML(a, b []byte) (bool, string) {
	ta, err := xmlTokens(a)
	if err != nil {
		return false, "mirror: " + err.Error()
	}
	tb, err := xmlTokens(b)
	if err != nil {
		return false, "model: " + err.Error()
	}
	if !slices.Equal(ta, tb) {
		return false, "XML differs"
	}
	return true, ""
}

func xmlTokens(b []byte) ([]string, error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	var out []string
	text := ""
	flush := func() {
		if text != "" {
			out = append(out, "T"+text)
			text = ""
		}
	}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			flush()
			var attrs []string
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") {
					continue
				}
				attrs = append(attrs, a.Name.Space+" "+a.Name.Local+"="+a.Value)
			}
			slices.Sort(attrs)
			out = append(out, "S"+t.Name.Space+" "+t.Name.Local+" "+strings.Join(attrs, " "))
		case xml.EndElement:
			flush()
			out = append(out, "E"+t.Name.Space+" "+t.Name.Local)
		case xml.CharData:
			text += string(t)
		}
	}
	flush()
	// Whitespace outside the root element is not part of the record.
	for len(out) > 0 && strings.HasPrefix(out[0], "T") && strings.TrimSpace(out[0][1:]) == "" {
		out = out[1:]
	}
	for len(out) > 0 && strings.HasPrefix(out[len(out)-1], "T") && strings.TrimSpace(out[len(out)-1][1:]) == "" {
		out = out[:len(out)-1]
	}
	return out, nil
}
