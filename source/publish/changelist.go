package publish

import (
	"context"
	"fmt"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
)

const metaChangeLists = "publish.changelists"

// clList is one Change List: the journal records First..Next-1, with
// datetimes within [From, Until]. The open list has a zero Until and Next.
type clList struct {
	From  time.Time
	Until time.Time `json:",omitzero"`
	First uint64
	Next  uint64 `json:",omitempty"`
}

// clState is what Publish remembers of the Change Lists: the boundaries of
// every closed list (never changed once recorded) and the open list.
type clState struct {
	Closed []clList
	Open   clList
	// Final is how many of Closed are known to be written in their closed
	// form; lists from Final on are (re)written by the next run.
	Final int
	// OpenLast is the seq of the open list's last record as published
	// (Config.Replicas only; 0 otherwise): a replica renders the open
	// list with the records Open.First..OpenLast, as published.
	OpenLast uint64 `json:",omitempty"`
}

// name returns the list's file name: its from and first seq, both fixed
// when the list opens, so an open list keeps its URL when it closes.
func (l *clList) name() string { return fmt.Sprintf("%s-%d", compact(l.From), l.First) }

func (p *publisher) clRel(set string, l *clList) string {
	return setDoc(set, "changelists/"+l.name()+".xml")
}

// boundary returns the first multiple of period since the Unix epoch that
// is after t.
func boundary(t time.Time, period time.Duration) time.Time {
	n, d := t.UnixNano(), int64(period)
	q := n / d
	if n%d < 0 {
		q--
	}
	return time.Unix(0, (q+1)*d).UTC()
}

// closeGrace is how long after its boundary an open list with no later
// record is closed: a tenth of the period, at most a minute.
func closeGrace(period time.Duration) time.Duration { return min(period/10, time.Minute) }

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// changeLists rotates the set's Change Lists and writes the closed lists
// not yet written, the open list, the Change List Index and, with Archives,
// the Change List Archive. It returns the closed lists.
//
// Rotation: the open list closes at the first period boundary after the
// datetime of its first record (or its from, if later), once a record at or
// after the boundary is in the journal or Now is past the boundary by a
// grace period (closeGrace);
// it also closes early when it holds MaxEntries records, at the datetime of
// the next record (so consecutive lists may share a datetime: intervals are
// inclusive at both ends, RS-AMB-5). The new open list starts where the
// closed one ends.
func (p *publisher) changeLists(ctx context.Context, s *Set, sr *SetReport) ([]clList, error) {
	var st clState
	raw, err := getMetaRaw(ctx, s.Store, metaChangeLists, &st)
	if err != nil {
		return nil, err
	}
	had := raw != nil
	bt, hasBaseline, err := store.BaselineTime(ctx, s.Store)
	if err != nil {
		return nil, fmt.Errorf("change lists: %w", err)
	}
	switch {
	case had:
	case hasBaseline:
		// The Change Lists describe the changes after the baseline (the
		// first scan, which the Resource List describes), so the first
		// one starts at the baseline: the journal holds nothing earlier.
		st.Open = clList{From: bt, First: 1}
	default:
		st.Open = clList{From: p.now, First: 1}
		empty := true
		for c, err := range s.Store.Journal(ctx, 0) {
			if err != nil {
				return nil, fmt.Errorf("change lists: %w", err)
			}
			st.Open = clList{From: c.Time.UTC(), First: c.Seq}
			empty = false
			break
		}
		if empty {
			// No journal and no baseline (a state filled by other means,
			// or a first scan not completed): the baseline is what is
			// published now, so that a later first scan journals what it
			// adds instead of changing the inventory behind the lists.
			if err := s.Store.PutMeta(ctx, store.MetaBaseline, store.FormatBaseline(p.now)); err != nil {
				return nil, fmt.Errorf("change lists: %w", err)
			}
		}
	}
	before := len(st.Closed)
	period, maxN := p.cfg.ChangeListPeriod, p.cfg.MaxEntries
	count, last := 0, st.Open.First-1
	var end time.Time // closing boundary of the open list, once it has a record
	closeAt := func(until time.Time, next uint64) {
		l := st.Open
		l.Until, l.Next = until, next
		st.Closed = append(st.Closed, l)
		st.Open = clList{From: until, First: next}
		count = 0
	}
	for c, err := range s.Store.Journal(ctx, st.Open.First) {
		if err != nil {
			return nil, fmt.Errorf("change lists: %w", err)
		}
		t := c.Time.UTC()
		switch {
		case count > 0 && !t.Before(end) && !end.After(p.now):
			closeAt(end, c.Seq)
		case count >= maxN:
			closeAt(t, c.Seq)
		}
		if count == 0 {
			end = boundary(later(st.Open.From, t), period)
		}
		count++
		last = c.Seq
	}
	// Closing on the clock alone (no later record seen) waits a grace
	// period, so that a record stamped just before the boundary but
	// committed a moment later still lands in the list it belongs to. (Once
	// a record at or after the boundary is in the journal, the store
	// refuses any earlier datetime: no grace is needed then.)
	if count > 0 && !end.Add(closeGrace(period)).After(p.now) {
		closeAt(end, last+1)
	}
	sr.NewlyClosed = len(st.Closed) - before
	sr.OpenEntries = count
	sr.ChangeLists = len(st.Closed) + 1
	openMoved := false
	if p.cfg.Replicas && st.OpenLast != last {
		st.OpenLast, openMoved = last, true
	}
	if !had || sr.NewlyClosed > 0 || openMoved {
		// The decision is recorded before any file is written, so that a
		// rerun after a crash writes the same lists.
		if raw, err = putMetaRaw(ctx, s.Store, metaChangeLists, st); err != nil {
			return nil, err
		}
	}
	final := st.Final
	known := len(st.Closed) // closed lists known written closed in this Out
	if p.cfg.Replicas {
		// Final was recorded by whichever replica led then, about its own
		// Out: this one's files are known closed only as far as it wrote
		// or rendered them (or their heads say so).
		known = p.closedKnown(s)
	}
	for i := range st.Closed {
		l := &st.Closed[i]
		f := p.file(p.clRel(s.Name, l))
		if i < final && ((i < known && exists(f)) || (known < 0 && isClosedList(f))) {
			continue
		}
		if err := p.writeChangeList(ctx, s, l, l.Next-1); err != nil {
			return nil, err
		}
	}
	if err := p.writeChangeList(ctx, s, &st.Open, last); err != nil {
		return nil, err
	}
	if err := p.writeChangeListIndex(s, &st); err != nil {
		return nil, err
	}
	p.noteOpen(s, &st)
	if p.cfg.Archives {
		if err := p.writeChangeListArchive(s, &st); err != nil {
			return nil, err
		}
	}
	if st.Final != len(st.Closed) {
		st.Final = len(st.Closed)
		if raw, err = putMetaRaw(ctx, s.Store, metaChangeLists, st); err != nil {
			return nil, err
		}
	}
	p.hold(s, metaChangeLists, raw)
	if sr.NewlyClosed > 0 {
		p.log.Info("publish: change lists closed", "set", s.Name, "closed", sr.NewlyClosed, "open_from", st.Open.From)
	}
	return st.Closed, nil
}

// changeEntry returns the Change List entry of journal record c.
func changeEntry(s *Set, c *store.Change) rs.Entry {
	e := resourceEntry(s, &c.Resource)
	e.MD.Change = c.Kind
	e.MD.DateTime = rs.NewTime(c.Time.UTC())
	return e
}

// journalRange yields the records l.First..last.
func journalRange(ctx context.Context, st store.Store, first, last uint64, fn func(*store.Change) error) error {
	if last < first {
		return nil
	}
	for c, err := range st.Journal(ctx, first) {
		if err != nil {
			return err
		}
		if c.Seq > last {
			break
		}
		if err := fn(&c); err != nil {
			return err
		}
	}
	return nil
}

// writeChangeList writes list l with the records up to seq last.
func (p *publisher) writeChangeList(ctx context.Context, s *Set, l *clList, last uint64) error {
	h := rs.Head{MD: rs.Metadata{Capability: rs.CapChangeList, From: rs.NewTime(l.From)},
		Links: []rs.Link{
			{Rel: rs.RelUp, Href: p.capListURL(s.Name)},
			{Rel: rs.RelIndex, Href: p.url(setDoc(s.Name, "changelist.xml"))},
		}}
	if !l.Until.IsZero() {
		h.MD.Until = rs.NewTime(l.Until)
	}
	err := writeDocSeq(p.file(p.clRel(s.Name, l)), &h, func(emit func(*rs.Entry) error) error {
		return journalRange(ctx, s.Store, l.First, last, func(c *store.Change) error {
			e := changeEntry(s, c)
			return emit(&e)
		})
	})
	if err != nil {
		return fmt.Errorf("change list %s: %w", l.name(), err)
	}
	return nil
}

// noteOpen records the path of the set's open Change List, which the
// Capability List names with Config.OpenChangeList.
func (p *publisher) noteOpen(s *Set, st *clState) {
	if p.openCL == nil {
		p.openCL = map[string]string{}
	}
	p.openCL[s.Name] = p.clRel(s.Name, &st.Open)
}

// writeChangeListIndex writes the Change List Index: the most recent lists
// (at most rs.MaxEntries), closed ones with from and until, the open one
// with from only, in chronological order.
func (p *publisher) writeChangeListIndex(s *Set, st *clState) error {
	lists := append(st.Closed[:len(st.Closed):len(st.Closed)], st.Open)
	if len(lists) > rs.MaxEntries {
		lists = lists[len(lists)-rs.MaxEntries:]
	}
	h := rs.Head{Root: rs.SitemapIndex,
		MD:    rs.Metadata{Capability: rs.CapChangeList, From: rs.NewTime(lists[0].From)},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
	if p.cfg.Archives {
		h.Links = append(h.Links, rs.Link{Rel: rs.RelArchives, Href: p.url(setDoc(s.Name, "changelist-archive.xml"))})
	}
	return writeDocSeq(p.file(setDoc(s.Name, "changelist.xml")), &h, func(emit func(*rs.Entry) error) error {
		for i := range lists {
			e := rs.Entry{Loc: p.url(p.clRel(s.Name, &lists[i])), MD: rs.Metadata{From: rs.NewTime(lists[i].From)}}
			if !lists[i].Until.IsZero() {
				e.MD.Until = rs.NewTime(lists[i].Until)
			}
			if err := emit(&e); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeChangeListArchive writes the Change List Archive naming every
// closed list (at most rs.MaxEntries, the most recent).
func (p *publisher) writeChangeListArchive(s *Set, st *clState) error {
	lists := st.Closed
	if len(lists) > rs.MaxEntries {
		lists = lists[len(lists)-rs.MaxEntries:]
	}
	h := rs.Head{MD: rs.Metadata{Capability: rs.CapChangeListArchive},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
	return writeDocSeq(p.file(setDoc(s.Name, "changelist-archive.xml")), &h, func(emit func(*rs.Entry) error) error {
		for i := range lists {
			e := rs.Entry{Loc: p.url(p.clRel(s.Name, &lists[i])),
				MD: rs.Metadata{From: rs.NewTime(lists[i].From), Until: rs.NewTime(lists[i].Until)}}
			if err := emit(&e); err != nil {
				return err
			}
		}
		return nil
	})
}

// ChangeEntry returns the entry a Change List (or change notification)
// gives journal record c of a set whose resources are under base.
func ChangeEntry(base string, c *store.Change) rs.Entry {
	return changeEntry(&Set{ResourceBase: base}, c)
}

// SetChangeEntry is ChangeEntry for a resource of set s (its ResourceBase
// and Loc).
func SetChangeEntry(s *Set, c *store.Change) rs.Entry { return changeEntry(s, c) }
