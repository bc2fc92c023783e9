package harvest

import (
	"slices"
	"time"
)

// batchLimits bound a batch of pages committed together: its records
// (what Committed receives at once and a kill -9 makes the harvest read
// again), its staged bytes (the disk the staged files hold before they
// replace the records), and its age (how late the journal learns of the
// first page's changes, and how long a slow repository's pages wait).
// Each batch costs two syncfs (or an fsync per file) and one state
// transaction, whatever its size: per page, those were most of a
// harvest's time. A test lowers them.
var batchLimits = struct {
	records int
	bytes   int64
	age     time.Duration
	pages   int // 0: any number
}{records: 10_000, bytes: 64 << 20, age: 5 * time.Second}

// batch is pages read and staged, not yet committed.
type batch struct {
	pages []*page
	start time.Time
	items int
	bytes int64
	// creations counts the record files the pages create (an upper
	// bound: a record created by two pages counts twice).
	creations int
	// rels holds the paths the pages change; only added to between
	// pages (no stager runs then), read by the stagers of the next ones.
	rels map[string]bool
}

func (b *batch) add(p *page) {
	if len(b.pages) == 0 {
		b.start = time.Now()
	}
	b.pages = append(b.pages, p)
	b.items += p.resp.Items
	b.bytes += p.w.staged()
	b.creations += p.w.creations()
	if b.rels == nil {
		b.rels = map[string]bool{}
	}
	for _, s := range p.w.shards {
		for _, c := range s.changes {
			if c.rel != "" {
				b.rels[c.rel] = true
			}
		}
	}
}

// full reports whether the batch is to be committed now.
func (b *batch) full() bool {
	return b.items >= batchLimits.records || b.bytes >= batchLimits.bytes || time.Since(b.start) >= batchLimits.age ||
		(batchLimits.pages > 0 && len(b.pages) >= batchLimits.pages)
}

// pending returns the pageWriter.pending of a page read into b while
// committing (nil when none) is being committed.
func (b *batch) pending(committing *batch) func(string) bool {
	var prev map[string]bool
	if committing != nil {
		prev = committing.rels
	}
	return func(rel string) bool { return b.rels[rel] || prev[rel] }
}

// planned returns the paths the batch will change.
func (b *batch) planned() []string {
	var out []string
	for _, p := range b.pages {
		out = append(out, p.w.planned()...)
	}
	return dedupe(out)
}

// abort removes the batch's staged files.
func (b *batch) abort() {
	for _, p := range b.pages {
		p.w.abort()
	}
	b.pages = nil
}

// dedupe sorts paths and drops repeats (a record changed by two pages of
// a batch is reported once).
func dedupe(paths []string) []string {
	slices.Sort(paths)
	return slices.Compact(paths)
}
