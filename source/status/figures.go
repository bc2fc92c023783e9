package status

import (
	"context"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// NewestRecords is how many of the journal's newest records the page
// lists per set.
const NewestRecords = 20

// newestDocs is how many documents of each kind are listed (the newest).
const newestDocs = 10

// snapshot is the figures of one refresh.
type snapshot struct {
	Now  time.Time
	Sets []*setFigures
	Hub  *hubFigures
}

type setFigures struct {
	Set
	Err     string // the state could not be read
	Stats   store.Stats
	Records int64 // journal records held
	Newest  []record
	Hourly  []bucket // 24, oldest first; the last is the current hour
	Daily   []bucket // 30 UTC days, oldest first; the last is today
	Last24h int64
	Last30d int64
	Docs    []docGroup
}

type record struct {
	Seq  uint64
	Time time.Time
	Kind string
	Path string // for display: invalid UTF-8 replaced
	URL  string
	Size int64
}

type bucket struct {
	Start time.Time
	Count int64
}

type docGroup struct {
	Kind  string
	Index *doc // the document naming the others, nil when absent
	Files []doc
	Count int   // files of the kind (Files are the newest of them)
	Bytes int64 // their total size
}

type doc struct {
	Name string
	URL  string
	Size int64
	Mod  time.Time
}

type hubFigures struct {
	URL       string
	Embedded  bool
	Subs      int
	Pending   int
	Node      string
	Backlog   uint64 // summed over the subscriptions read
	Partial   bool   // a channel has more subscriptions than were read
	Topics    []topicFigures
	DeadCount int
	Dead      []deadLetter
	Err       string
}

type topicFigures struct {
	Set         string
	Topic       string
	Subscribers int
	Hosts       []hostFigures
	More        bool // more subscriptions than Config.SubscriptionLimit
}

// hostFigures groups a topic's subscriptions by the host of their
// callback. The page is public: a callback URL's path and query can be a
// capability of its subscriber (anyone who knows it can post to it), so
// only the host is shown, with a count.
type hostFigures struct {
	Host       string
	Count      int
	Backlog    uint64 // summed
	MaxBacklog uint64
	Failing    int       // subscriptions whose last attempt failed
	LastError  string    // of one of them, redacted
	Expires    time.Time // the earliest
}

type deadLetter struct {
	At       time.Time
	Set      string
	Host     string
	Seq      uint64
	Attempts int
	Error    string
}

// compute makes the figures of every set and of the hub.
func (h *Handler) compute(ctx context.Context) *snapshot {
	now := h.cfg.Now().UTC()
	snap := &snapshot{Now: now}
	for _, s := range h.cfg.Sets {
		f := &setFigures{Set: s}
		if err := h.setFigures(ctx, f, now); err != nil {
			h.cfg.Logger.Warn("status page: reading the state", "set", s.Name, "err", err)
			f.Err = "the state could not be read"
		}
		f.Docs = h.docs(s.Name)
		snap.Sets = append(snap.Sets, f)
	}
	snap.Hub = h.hubFigures(ctx)
	return snap
}

func (h *Handler) setFigures(ctx context.Context, f *setFigures, now time.Time) error {
	st := f.Store
	stats, err := st.Stats(ctx)
	if err != nil {
		return err
	}
	f.Stats = stats
	if stats.FirstSeq > 0 {
		f.Records = int64(stats.LastSeq - stats.FirstSeq + 1)
	}
	h.startBytes(f.Set, stats)

	// The newest records.
	if stats.LastSeq > 0 {
		from := uint64(1)
		if stats.LastSeq > NewestRecords {
			from = stats.LastSeq - NewestRecords + 1
		}
		for c, err := range st.Journal(ctx, from) {
			if err != nil {
				return err
			}
			if c.Seq > stats.LastSeq {
				break
			}
			p := c.Path()
			f.Newest = append(f.Newest, record{Seq: c.Seq, Time: c.Time, Kind: string(c.Kind), Path: strings.ToValidUTF8(p, "\uFFFD"),
				URL: f.ResourceBase + scan.EscapePath(p), Size: c.Resource.Size})
		}
		for i, j := 0, len(f.Newest)-1; i < j; i, j = i+1, j-1 {
			f.Newest[i], f.Newest[j] = f.Newest[j], f.Newest[i]
		}
	}

	// The charts: the seq of the first record at or after each bucket
	// boundary.
	hour := now.Truncate(time.Hour)
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	var hb, db []time.Time
	for i := -23; i <= 1; i++ {
		hb = append(hb, hour.Add(time.Duration(i)*time.Hour))
	}
	for i := -29; i <= 1; i++ {
		db = append(db, day.AddDate(0, 0, i))
	}
	seq, err := h.seqs[f.Name].seqsAt(ctx, st, append(append([]time.Time(nil), hb...), db...), stats)
	if err != nil {
		return err
	}
	counts := func(bounds []time.Time) []bucket {
		out := make([]bucket, len(bounds)-1)
		for i := range out {
			out[i] = bucket{Start: bounds[i], Count: int64(seq[bounds[i+1]] - seq[bounds[i]])}
		}
		return out
	}
	f.Hourly, f.Daily = counts(hb), counts(db)
	for _, b := range f.Hourly {
		f.Last24h += b.Count
	}
	for _, b := range f.Daily {
		f.Last30d += b.Count
	}
	return nil
}

// seqCache keeps the seq found for each bucket boundary: the first
// record at or after a time t no older than the journal's last datetime
// never changes (records are appended with datetimes at or after it), so
// each boundary is looked up once, while a boundary after the last
// datetime costs nothing (LastSeq+1). Only the refresh goroutine uses it.
type seqCache struct {
	first, last uint64 // the journal's FirstSeq and LastSeq when filled
	at          map[time.Time]uint64
}

// seqsAt returns, for each time t, the seq of the first journal record
// whose datetime is at or after t (LastSeq+1 when there is none).
func (c *seqCache) seqsAt(ctx context.Context, st store.Store, times []time.Time, stats store.Stats) (map[time.Time]uint64, error) {
	if c.at == nil || stats.FirstSeq != c.first || stats.LastSeq < c.last {
		// A first use, a pruned journal or another journal: forget.
		c.at = map[time.Time]uint64{}
	}
	c.first, c.last = stats.FirstSeq, stats.LastSeq
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	uniq := times[:0]
	for i, t := range times {
		if i == 0 || !t.Equal(times[i-1]) {
			uniq = append(uniq, t)
		}
	}
	out := make(map[time.Time]uint64, len(uniq))
	next := stats.LastSeq + 1
	for i := len(uniq) - 1; i >= 0; i-- {
		t := uniq[i]
		if stats.LastSeq == 0 || t.After(stats.LastTime) {
			out[t] = next
			continue
		}
		if s, ok := c.at[t]; ok {
			next = s
			out[t] = s
			continue
		}
		var until time.Time
		if i < len(uniq)-1 {
			until = uniq[i+1]
		}
		s, found, err := firstSeq(ctx, st, t, until)
		if err != nil {
			return nil, err
		}
		if found && s < next { // records appended after Stats are not counted
			next = s
		}
		out[t] = next
		c.at[t] = next
	}
	// Forget the boundaries no longer shown.
	if len(uniq) > 0 {
		for t := range c.at {
			if t.Before(uniq[0]) {
				delete(c.at, t)
			}
		}
	}
	return out, nil
}

// firstSeq returns the seq of the first journal record in [t, until)
// (until zero: no bound). Stores read the journal in pages (bolt 1024
// records, pgstore 1000) however few records the loop takes, so it looks
// in growing windows first: a page holds at most the records of the
// first window that has any.
func firstSeq(ctx context.Context, st store.Store, t, until time.Time) (uint64, bool, error) {
	for _, d := range []time.Duration{time.Millisecond, time.Second, time.Minute, 0} {
		u := until
		if d > 0 && (until.IsZero() || t.Add(d).Before(until)) {
			u = t.Add(d)
		}
		for c, err := range st.JournalBetween(ctx, t, u) {
			if err != nil {
				return 0, false, err
			}
			return c.Seq, true, nil
		}
		if u.Equal(until) {
			break // the whole range was searched
		}
	}
	return 0, false, nil
}

// docs lists the set's published Change Lists, dumps and Resource List
// parts.
func (h *Handler) docs(set string) []docGroup {
	if h.cfg.Docs == "" {
		return nil
	}
	dir := filepath.Join(h.cfg.Docs, ".resourcesync", set)
	base := h.cfg.BaseURL + ".resourcesync/" + set + "/"
	one := func(name string) *doc {
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil && strings.HasSuffix(name, ".xml") {
			fi, err = os.Stat(filepath.Join(dir, filepath.FromSlash(name)) + ".gz") // stored compressed
		}
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		return &doc{Name: name, URL: base + name, Size: fi.Size(), Mod: fi.ModTime()}
	}
	list := func(sub string, match func(string) bool) []doc {
		ents, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(sub)))
		if err != nil {
			return nil
		}
		var out []doc
		for _, e := range ents {
			if !e.Type().IsRegular() || !match(e.Name()) {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue
			}
			// A part stored compressed (NAME.xml.gz) is served at
			// NAME.xml; its size is what it takes on disk.
			n := path.Join(sub, strings.TrimSuffix(e.Name(), ".gz"))
			out = append(out, doc{Name: n, URL: base + n, Size: fi.Size(), Mod: fi.ModTime()})
		}
		return out
	}
	xml := func(n string) bool { return strings.HasSuffix(n, ".xml") || strings.HasSuffix(n, ".xml.gz") }
	zip := func(n string) bool { return strings.HasSuffix(n, ".zip") }
	group := func(kind, index string, files []doc) docGroup {
		g := docGroup{Kind: kind, Index: one(index), Count: len(files)}
		for _, f := range files {
			g.Bytes += f.Size
		}
		// Names start with a fixed-width UTC time: newest last.
		sort.Slice(files, func(i, j int) bool { return files[i].Name > files[j].Name })
		g.Files = files[:min(len(files), newestDocs)]
		return g
	}
	var dumps []doc
	if ents, err := os.ReadDir(filepath.Join(dir, "resourcedumps")); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				dumps = append(dumps, list("resourcedumps/"+e.Name(), zip)...)
			}
		}
	}
	rl := group("Resource List", "resourcelist.xml", list("resourcelists/parts", xml))
	if rl.Count == 0 && rl.Index != nil { // one document, not an index of parts
		rl.Count, rl.Bytes, rl.Files = 1, rl.Index.Size, []doc{*rl.Index}
	}
	out := []docGroup{
		rl,
		group("Change Lists", "changelist.xml", list("changelists", xml)),
		group("Resource Dumps", "resourcedump.xml", dumps),
		group("Change Dumps", "changedump.xml", list("changedumps", zip)),
	}
	kept := out[:0]
	for _, g := range out {
		if g.Index != nil || g.Count > 0 {
			kept = append(kept, g)
		}
	}
	return kept
}

func (h *Handler) hubFigures(ctx context.Context) *hubFigures {
	if h.cfg.HubURL == "" && h.cfg.Hub == nil {
		return nil
	}
	hf := &hubFigures{URL: h.cfg.HubURL, Embedded: h.cfg.Hub != nil}
	if h.cfg.Hub == nil {
		return hf
	}
	hb := h.cfg.Hub
	st := hb.Stats()
	hf.Subs, hf.Pending, hf.DeadCount, hf.Node = st.Subscriptions, st.PendingVerifications, st.DeadLetters, st.Node
	fail := func(what string, err error) {
		h.cfg.Logger.Warn("status page: reading the hub", "what", what, "err", err)
		hf.Err = "the hub's state could not be read"
	}
	setOf := map[string]string{}
	for _, s := range h.cfg.Sets {
		if s.Topic == "" {
			continue
		}
		setOf[s.Topic] = s.Name
		tf := topicFigures{Set: s.Name, Topic: s.Topic}
		n, err := hb.CountSubscriptions(ctx, s.Topic)
		if err != nil {
			fail("count", err)
		}
		tf.Subscribers = n
		subs, more, err := hb.SubscriptionStates(ctx, s.Topic, 0, h.cfg.SubscriptionLimit)
		if err != nil {
			fail("subscriptions", err)
		}
		tf.More = more
		hf.Partial = hf.Partial || more
		hosts := map[string]*hostFigures{}
		for _, sub := range subs {
			host := callbackHost(sub.Callback)
			g := hosts[host]
			if g == nil {
				g = &hostFigures{Host: host, Expires: sub.Expires}
				hosts[host] = g
			}
			g.Count++
			g.Backlog += sub.Backlog
			g.MaxBacklog = max(g.MaxBacklog, sub.Backlog)
			hf.Backlog += sub.Backlog
			if sub.Expires.Before(g.Expires) {
				g.Expires = sub.Expires
			}
			if sub.Failures > 0 {
				g.Failing++
				if g.LastError == "" {
					g.LastError = redact(sub.LastError, sub.Callback, host)
				}
			}
		}
		for _, g := range hosts {
			tf.Hosts = append(tf.Hosts, *g)
		}
		sort.Slice(tf.Hosts, func(i, j int) bool { return tf.Hosts[i].Host < tf.Hosts[j].Host })
		hf.Topics = append(hf.Topics, tf)
	}
	// The newest dead letters (the hub pages them in ID order, bodies
	// omitted).
	if hf.DeadCount > 0 && hf.DeadCount <= h.cfg.DeadLetterLimit {
		dls, _, err := hb.DeadLetterPage(ctx, max(0, hf.DeadCount-NewestRecords), NewestRecords)
		if err != nil {
			fail("dead letters", err)
		}
		for _, d := range dls {
			host := callbackHost(d.Callback)
			set := setOf[d.Topic]
			if set == "" {
				set = "(other topic)"
			}
			hf.Dead = append(hf.Dead, deadLetter{At: d.At, Set: set, Host: host, Seq: d.Seq, Attempts: d.Attempts, Error: redact(d.LastError, d.Callback, host)})
		}
		sort.SliceStable(hf.Dead, func(i, j int) bool { return hf.Dead[i].At.After(hf.Dead[j].At) })
	}
	return hf
}

// callbackHost is the host (and port) of a callback URL.
func callbackHost(cb string) string {
	u, err := url.Parse(cb)
	if err != nil || u.Host == "" {
		return "(invalid callback)"
	}
	return u.Host
}

// redact removes the callback URL from a delivery error (Go's HTTP client
// quotes it whole) leaving its host, and shortens the message.
func redact(msg, callback, host string) string {
	if callback != "" {
		msg = strings.ReplaceAll(msg, callback, host)
		if u, err := url.Parse(callback); err == nil {
			if p := u.EscapedPath(); len(p) > 1 {
				msg = strings.ReplaceAll(msg, p, "/…")
			}
			if u.RawQuery != "" {
				msg = strings.ReplaceAll(msg, u.RawQuery, "…")
			}
		}
	}
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	if r := []rune(msg); len(r) > 200 {
		msg = string(r[:200]) + "…"
	}
	return msg
}
