package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// StoreSet is one set of a Source: its state and where its files are.
type StoreSet struct {
	Name  string      // the ResourceSync set's name (the OAI setSpec)
	Dir   string      // the directory whose files the store lists
	Store store.Store // its state (inventory and journal)
	Base  string      // URL prefix of its resources (Source.ResourceBase)
}

// StoreCollection serves the state of a ResourceSync Source: the
// inventory's resources and the journal's deletions.
//
// A listing without from (or with a from not later than the baseline)
// walks the inventory in path order, then the journal's deletions; a
// listing with a later from walks only the journal from that datetime.
// Each deletion (and, from the journal, each change) is checked to be the
// path's last record by one pass over the rest of the journal per chunk
// of candidates: O(journal after from) per chunk, in bounded memory.
type StoreCollection struct {
	sets     []StoreSet
	multi    bool
	mu       sync.Mutex
	earliest time.Time
}

// NewStoreCollection returns the collection of sets. With several sets,
// each is an OAI set (its setSpec is its name) and item IDs begin with the
// set's name; with one, there is no set hierarchy.
func NewStoreCollection(sets []StoreSet) (*StoreCollection, error) {
	if len(sets) == 0 {
		return nil, errors.New("oai provider: no set")
	}
	for _, s := range sets {
		if len(sets) > 1 && !ValidSetSpec(s.Name) {
			return nil, fmt.Errorf("oai provider: set name %q is not a valid setSpec", s.Name)
		}
	}
	return &StoreCollection{sets: sets, multi: len(sets) > 1}, nil
}

// Earliest implements Collection: the least datestamp of the inventory
// and the journal, found once (later changes are never earlier).
func (c *StoreCollection) Earliest(ctx context.Context) (time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.earliest.IsZero() {
		return c.earliest, nil
	}
	var min time.Time
	upd := func(t time.Time) {
		if !t.IsZero() && (min.IsZero() || t.Before(min)) {
			min = t
		}
	}
	for _, s := range c.sets {
		for r, err := range s.Store.ResourcesIn(ctx, "", "") {
			if err != nil {
				return time.Time{}, err
			}
			upd(r.Changed)
		}
		for ch, err := range s.Store.Journal(ctx, 0) {
			if err != nil {
				return time.Time{}, err
			}
			upd(ch.Time)
			break // the journal's datetimes never decrease
		}
	}
	c.earliest = min
	return min, nil
}

// Sets implements Collection.
func (c *StoreCollection) Sets(context.Context) ([]Set, error) {
	if !c.multi {
		return nil, nil
	}
	var out []Set
	for _, s := range c.sets {
		out = append(out, Set{Spec: s.Name, Name: s.Name})
	}
	return out, nil
}

func (c *StoreCollection) item(si int, r store.Resource, ds time.Time, deleted bool, cursor string) Item {
	s := c.sets[si]
	id := scan.EscapePath(r.Path)
	it := Item{ID: id, URL: scan.ResourceURL(s.Base, r.Path), Datestamp: ds, Deleted: deleted,
		Type: r.Type, Length: r.Size, LastMod: r.LastMod, Cursor: strconv.Itoa(si) + "|" + cursor}
	if c.multi {
		it.ID = s.Name + "/" + id
		it.Sets = []string{s.Name}
	}
	return it
}

// Get implements Collection. A path that is not in the inventory is
// looked for among the journal's deletions (O(journal)).
func (c *StoreCollection) Get(ctx context.Context, id string) (Item, error) {
	si, esc := 0, id
	if c.multi {
		name, rest, ok := strings.Cut(id, "/")
		if !ok {
			return Item{}, ErrNotFound
		}
		si = -1
		for i, s := range c.sets {
			if s.Name == name {
				si = i
			}
		}
		if si < 0 {
			return Item{}, ErrNotFound
		}
		esc = rest
	}
	path, err := scan.UnescapePath(esc)
	if err != nil || path == "" || scan.EscapePath(path) != esc {
		return Item{}, ErrNotFound // only the canonical spelling
	}
	st := c.sets[si].Store
	r, err := st.Get(ctx, path)
	if err == nil {
		return c.item(si, r, r.Changed, false, ""), nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return Item{}, err
	}
	var last *store.Change
	for ch, err := range st.Journal(ctx, 0) {
		if err != nil {
			return Item{}, err
		}
		if ch.Resource.Path == path {
			last = &ch
		}
	}
	if last == nil || last.Kind != rs.Deleted {
		return Item{}, ErrNotFound
	}
	return c.item(si, last.Resource, last.Time, true, ""), nil
}

// Open implements Collection.
func (c *StoreCollection) Open(ctx context.Context, it Item) (io.ReadCloser, error) {
	si, _, _, err := c.parseCursor(it.Cursor)
	if err != nil {
		return nil, err
	}
	esc := it.ID
	if c.multi {
		_, esc, _ = strings.Cut(esc, "/")
	}
	path, err := scan.UnescapePath(esc)
	if err != nil {
		return nil, err
	}
	// The path comes from the state, which holds only paths the scan
	// found under Dir; OpenInRoot refuses any that would leave it.
	return os.OpenInRoot(c.sets[si].Dir, path)
}

// cursor: SET|i|PATH (inventory), SET|d|SEQ (deletions after the
// inventory), SET|j|SEQ (journal from a datetime).
func (c *StoreCollection) parseCursor(s string) (si int, phase byte, key string, err error) {
	if s == "" {
		return 0, 0, "", nil
	}
	f := strings.SplitN(s, "|", 3)
	if len(f) < 2 {
		return 0, 0, "", ErrBadCursor
	}
	si, err = strconv.Atoi(f[0])
	if err != nil || si < 0 || si >= len(c.sets) {
		return 0, 0, "", ErrBadCursor
	}
	if len(f) == 3 && len(f[1]) == 1 {
		return si, f[1][0], f[2], nil
	}
	return si, 0, "", nil
}

// journalFrom reports whether a listing from t may read the journal
// alone: every inventory record changed at or after t then has a journal
// record at or after t (t is after the baseline and not before the
// journal's first record).
func journalFrom(ctx context.Context, st store.Store, t time.Time) (bool, error) {
	if t.IsZero() {
		return false, nil
	}
	bt, ok, err := store.BaselineTime(ctx, st)
	if err != nil || !ok || !t.After(bt) {
		return false, err
	}
	stats, err := st.Stats(ctx)
	if err != nil {
		return false, err
	}
	if stats.FirstSeq > 1 {
		for ch, err := range st.Journal(ctx, stats.FirstSeq) {
			if err != nil {
				return false, err
			}
			return !t.Before(ch.Time), nil
		}
	}
	return true, nil
}

// List implements Collection.
func (c *StoreCollection) List(ctx context.Context, q Query, yield func(Item) bool) error {
	si, phase, key, err := c.parseCursor(q.After)
	if err != nil {
		return err
	}
	for ; si < len(c.sets); si, phase, key = si+1, 0, "" {
		if q.Set != "" && (!c.multi || c.sets[si].Name != q.Set) {
			continue
		}
		st := c.sets[si].Store
		jr, err := journalFrom(ctx, st, q.From)
		if err != nil {
			return err
		}
		if jr {
			var after uint64
			if phase == 'j' {
				after, _ = strconv.ParseUint(key, 10, 64)
			}
			if cont, err := c.journal(ctx, si, q, after, false, yield); err != nil || !cont {
				return err
			}
			continue
		}
		if phase != 'd' {
			from := ""
			if phase == 'i' {
				from = key + "\x00"
			}
			for r, err := range st.ResourcesIn(ctx, from, "") {
				if err != nil {
					return err
				}
				if !inRange(r.Changed, q) {
					continue
				}
				if !yield(c.item(si, r, r.Changed, false, "i|"+r.Path)) {
					return nil
				}
			}
			key = ""
		}
		var after uint64
		if key != "" {
			after, _ = strconv.ParseUint(key, 10, 64)
		}
		if cont, err := c.journal(ctx, si, q, after, true, yield); err != nil || !cont {
			return err
		}
	}
	return nil
}

func inRange(t time.Time, q Query) bool {
	t = t.Truncate(time.Second)
	return !t.Before(q.From) && (q.Until.IsZero() || t.Before(q.Until))
}

const chunk = 256

// journal yields the journal records of set si in q's range after seq
// after (only deletions if deletesOnly) that are their path's last
// record. It returns false when yield stopped.
func (c *StoreCollection) journal(ctx context.Context, si int, q Query, after uint64, deletesOnly bool, yield func(Item) bool) (bool, error) {
	st := c.sets[si].Store
	phase := "j|"
	if deletesOnly {
		phase = "d|"
	}
	var cands []store.Change
	flush := func() (bool, error) {
		if len(cands) == 0 {
			return true, nil
		}
		// Drop the candidates a later record of their path supersedes.
		idx := make(map[string][]int, len(cands))
		for i, ch := range cands {
			idx[ch.Resource.Path] = append(idx[ch.Resource.Path], i)
		}
		dead := make([]bool, len(cands))
		for ch, err := range st.Journal(ctx, cands[0].Seq+1) {
			if err != nil {
				return false, err
			}
			for _, i := range idx[ch.Resource.Path] {
				if ch.Seq > cands[i].Seq {
					dead[i] = true
				}
			}
		}
		for i, ch := range cands {
			if dead[i] {
				continue
			}
			del := ch.Kind == rs.Deleted
			if !yield(c.item(si, ch.Resource, ch.Time, del, phase+strconv.FormatUint(ch.Seq, 10))) {
				return false, nil
			}
		}
		cands = cands[:0]
		return true, nil
	}
	// Candidates are collected by one iteration and checked by another,
	// never nested: a Store may allow one reader at a time (oai serve
	// opens the embedded state per call).
	for {
		full := false
		for ch, err := range st.JournalBetween(ctx, q.From, q.Until) {
			if err != nil {
				return false, err
			}
			if ch.Seq <= after || (deletesOnly && ch.Kind != rs.Deleted) || !inRange(ch.Time, q) {
				continue
			}
			cands = append(cands, ch)
			if len(cands) == chunk {
				full = true
				break
			}
		}
		if len(cands) > 0 {
			after = cands[len(cands)-1].Seq
		}
		if cont, err := flush(); err != nil || !cont || !full {
			return cont, err
		}
	}
}
