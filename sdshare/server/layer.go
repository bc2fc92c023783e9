package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"strings"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// A small change of a large collection used to cost as much as its open
// (issue 33: 5.9 s for one resource at a million triples): every load
// merged every file's run into a new graph file. Now a change of a few
// resources in a directory collection writes an overlay instead: a small
// graph file of the new statement groups of the subjects the changed
// files touch (their IRI subjects, and every blank node of theirs, whose
// labels are scoped to their file), read before the base graph file,
// which versions share. Overlays chain (the next small change rewrites
// the overlay, not the base) until it holds more than overlayMax of the
// collection, when the load merges everything into one graph file
// again. Whatever the layers, every lookup and every walk gives the
// groups a full merge would have written (TestOverlayEqualsFullMerge),
// so fragments, snapshots and the inventory are the same bytes.
//
// Nothing here needs crash safety of its own: the graph directory is
// rebuilt at every start, and a version is swapped in memory after the
// state store committed its changes.

// graph is one version's graph: a graph file (base), and, after small
// changes, an overlay holding the groups of the keys it masks.
type graph struct {
	base *graphFile
	over *graphFile          // nil: the base alone
	mask map[string]struct{} // IRI subject keys whose group is over's (absent there: gone)
	// prefixes are the blank subject key prefixes ("2f3_": one changed
	// file's blank nodes) whose groups are over's.
	prefixes []string
	// triples, subjects and resources (IRI subjects) it holds.
	triples, subjects, resources int
	hash                         [32]byte // the version hash (see Load)
}

// wholeGraph is a graph of a graph file alone.
func wholeGraph(gf *graphFile, hash [32]byte) *graph {
	return &graph{base: gf, triples: gf.triples, subjects: gf.subjects, resources: gf.resources, hash: hash}
}

// release drops g's hold on its files.
func (g *graph) release() {
	if g == nil {
		return
	}
	g.base.unref()
	g.over.unref()
}

// inOver reports whether key's group is the overlay's.
func (g *graph) inOver(key string) bool {
	if g.over == nil {
		return false
	}
	if _, ok := g.mask[key]; ok {
		return true
	}
	for _, p := range g.prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// lines returns the lines of the subject whose record key is key.
func (g *graph) lines(key string) ([]string, error) {
	if g.inOver(key) {
		return g.over.lines(key)
	}
	return g.base.lines(key)
}

// bySubject returns s's statements.
func (g *graph) bySubject(s rdf.Term) ([]rdf.Triple, error) {
	ls, err := g.lines(termKey(s))
	if err != nil || len(ls) == 0 {
		return nil, err
	}
	return parseLines(ls)
}

// fragment returns r's fragment (SD-SRV-26): its statements and those of
// the blank nodes they reach (rdf.Closure).
func (g *graph) fragment(r rdf.Term) ([]rdf.Triple, error) {
	return rdf.Closure(r, g.bySubject)
}

// closureLines returns the lines of a fragment, as rdf.Closure collects
// its statements, from its subject's lines: those and the lines of every
// blank node they reach, each once.
func (g *graph) closureLines(lines []string) ([]string, error) {
	out := slices.Clone(lines)
	var seen map[string]bool
	for i := 0; i < len(out); i++ {
		b, ok := blankObject(out[i])
		if !ok || seen[b] {
			continue
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[b] = true
		more, err := g.lines(string(kindBlank) + b)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// groups yields the graph's subjects in key order: all of them, or from
// the first blank node subject on.
func (g *graph) groups(blank bool, yield func(group) error) error {
	var off int64
	if blank {
		var err error
		if off, err = g.base.blankStart(); err != nil {
			return err
		}
	}
	if g.over == nil {
		return g.base.groups(off, yield)
	}
	var overOff int64
	if blank {
		var err error
		if overOff, err = g.over.blankStart(); err != nil {
			return err
		}
	}
	next, stop := iter.Pull2(groupSeq(g.over, overOff))
	defer stop()
	pending, perr, more := next()
	// flush yields the overlay's groups before key ("": all).
	flush := func(key string) error {
		for more && (key == "" || pending.key < key) {
			if perr != nil {
				return perr
			}
			if err := yield(pending); err != nil {
				return err
			}
			pending, perr, more = next()
		}
		return nil
	}
	err := g.base.groups(off, func(bg group) error {
		if err := flush(bg.key); err != nil {
			return err
		}
		if g.inOver(bg.key) {
			return nil
		}
		return yield(bg)
	})
	if err != nil {
		return err
	}
	return flush("")
}

// groupSeq is gf.groups from off as an iterator.
func groupSeq(gf *graphFile, off int64) iter.Seq2[group, error] {
	return func(yield func(group, error) bool) {
		errStop := errors.New("stop")
		err := gf.groups(off, func(g group) error {
			if !yield(g, nil) {
				return errStop
			}
			return nil
		})
		if err != nil && err != errStop {
			yield(group{}, err)
		}
	}
}

// An overlay masks at most 1/overlayMax of a collection's subjects (at
// least overlayMin, at most overlayCap: its keys are held in memory)
// before a load merges everything into one graph file again: the
// overlay is rewritten at every small change, so its size is what each
// costs. The changed files' runs may hold up to changedMax bytes (their
// new groups are sorted in memory), and the affected subjects are
// looked up in the unchanged runs at most lookupMax times.
const (
	overlayMax = 16
	overlayMin = 4096
	overlayCap = 65536
	changedMax = 8 << 20
	lookupMax  = 65536
)

// layer builds the graph of this load as the current graph plus an
// overlay, when the change allows (see the top of this file): the same
// files as the last load (so the same blank node prefixes), at least two
// of them, the changed ones small. It returns nil, and no error, when it
// does not apply: the load then merges every run.
func (c *Collection) layer(ctx context.Context, runs map[string]fileRun, names []string, affected []string, name string) (*graph, error) {
	cur := c.cur
	if cur == nil || c.noLayer || affected == nil || len(names) < 2 || len(runs) != len(c.runs) {
		return nil, nil
	}
	var changed, same []string // run names (new) of the changed files, of the others
	var oldChanged []string    // the changed files' last runs
	var prefixes []string
	var changedBytes int64
	for i, p := range names {
		old, ok := c.runs[p]
		r := runs[p]
		if !ok || old.prefix != r.prefix || r.prefix != fmt.Sprintf("f%d_", i) {
			return nil, nil
		}
		if old == r {
			same = append(same, r.name)
			continue
		}
		fi, err := os.Stat(r.name)
		if err != nil {
			return nil, nil
		}
		changedBytes += fi.Size()
		changed = append(changed, r.name)
		oldChanged = append(oldChanged, old.name)
		prefixes = append(prefixes, string(kindBlank)+r.prefix)
	}
	g := cur.gf
	if len(changed) == 0 {
		// Nothing changed (a forced reload): the same graph, the same
		// version hash, so the snapshot is not written again.
		ng := *g
		g.base.ref()
		if g.over != nil {
			g.over.ref()
		}
		return &ng, nil
	}
	masked := len(g.mask) + len(affected)
	limit := min(max(overlayMin, g.subjects/overlayMax), overlayCap)
	if masked > limit || changedBytes > min(max(g.base.size/overlayMax, 1<<20), changedMax) || len(affected)*len(same) > lookupMax {
		return nil, nil
	}

	// The new groups: each affected IRI subject's lines from every run
	// (a statement may be in several files), and the changed files'
	// blank nodes.
	ng := &graph{base: g.base, mask: make(map[string]struct{}, masked),
		triples: g.triples, subjects: g.subjects, resources: g.resources}
	for k := range g.mask {
		ng.mask[k] = struct{}{}
	}
	ng.prefixes = slices.Clone(g.prefixes)
	for _, p := range prefixes {
		if !slices.Contains(ng.prefixes, p) {
			ng.prefixes = append(ng.prefixes, p)
		}
	}
	var recs []string // the new groups' records, sorted
	all := append(slices.Clone(changed), same...)
	for i, iri := range affected {
		if i%1024 == 1023 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		key := string(kindIRI) + iri
		old, err := g.lines(key)
		if err != nil {
			return nil, err
		}
		var ls []string
		for _, run := range all {
			more, err := runLines(run, key)
			if err != nil {
				return nil, err
			}
			ls = append(ls, more...)
		}
		slices.Sort(ls)
		ls = slices.Compact(ls)
		ng.triples += len(ls) - len(old)
		switch {
		case len(old) == 0 && len(ls) > 0:
			ng.subjects++
			ng.resources++
		case len(old) > 0 && len(ls) == 0:
			ng.subjects--
			ng.resources--
		}
		ng.mask[key] = struct{}{}
		for _, l := range ls {
			recs = append(recs, key+"\x00"+l)
		}
	}
	// The changed files' blank nodes: the old ones go, the new ones come.
	for i := range changed {
		n, s, err := blankRecords(oldChanged[i], nil)
		if err != nil {
			return nil, err
		}
		ng.triples -= n
		ng.subjects -= s
		if n, s, err = blankRecords(changed[i], func(rec string) { recs = append(recs, rec) }); err != nil {
			return nil, err
		}
		ng.triples += n
		ng.subjects += s
	}
	slices.Sort(recs)

	// The overlay: the last overlay's groups not masked anew, and the new
	// ones, in key order.
	h := sha256.New()
	h.Write(g.hash[:])
	gw, err := newGraphWriter(name, h)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			gw.gf.f.Close()
			os.Remove(name)
		}
	}()
	fresh := func(key string) bool {
		if _, ok := slices.BinarySearchFunc(affected, key, func(a, k string) int { return strings.Compare(string(kindIRI)+a, k) }); ok {
			return true
		}
		return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(key, p) })
	}
	emit := func(upTo string) error {
		for len(recs) > 0 && (upTo == "" || recs[0] < upTo) {
			if err := gw.add(recs[0]); err != nil {
				return err
			}
			recs = recs[1:]
		}
		return nil
	}
	if g.over != nil {
		err := g.over.groups(0, func(og group) error {
			if fresh(og.key) {
				return nil
			}
			if err := emit(og.key + "\x00"); err != nil {
				return err
			}
			for _, l := range og.lines {
				if err := gw.add(og.key + "\x00" + l); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if err := emit(""); err != nil {
		return nil, err
	}
	over, err := gw.finish()
	if err != nil {
		return nil, err
	}
	over.name = name
	ok = true
	ng.over = over
	ng.hash = [32]byte(h.Sum(nil))
	g.base.ref()
	return ng, nil
}

// runLines returns the lines of key in the sorted run file name, found
// by bisection: records are "KEY\x00LINE\n", sorted, so a key's records
// are together.
func runLines(name, key string) ([]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// lo is a record start whose key is below key (or 0).
	lo, hi := int64(0), fi.Size()
	buf := make([]byte, 4<<10)
	for hi-lo > int64(len(buf)) {
		mid := lo + (hi-lo)/2
		n, err := f.ReadAt(buf, mid)
		if err != nil && err != io.EOF {
			return nil, err
		}
		nl := bytes.IndexByte(buf[:n], '\n')
		if nl < 0 || mid+int64(nl)+1 >= hi {
			break // a record longer than the buffer: scan from lo
		}
		start := mid + int64(nl) + 1
		rest := buf[nl+1 : n]
		k, _, found := bytes.Cut(rest, []byte{0})
		if !found {
			break
		}
		if string(k) < key {
			lo = start
		} else {
			hi = start
		}
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, lo, fi.Size()-lo), 16<<10)
	var out []string
	for {
		rec, err := r.ReadString('\n')
		if rec == "" && err == io.EOF {
			return out, nil
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		k, line := splitRecord(rec)
		switch {
		case k < key:
		case k == key:
			out = append(out, line)
		default:
			return out, nil
		}
	}
}

// blankRecords counts the blank node records of the run file name (their
// lines and subjects), passing each to each when not nil.
func blankRecords(name string, each func(rec string)) (lines, subjects int, err error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	last := ""
	for {
		rec, err := r.ReadString('\n')
		if rec == "" && err == io.EOF {
			return lines, subjects, nil
		}
		if err != nil && err != io.EOF {
			return 0, 0, err
		}
		if rec[0] != kindBlank {
			continue
		}
		k, _ := splitRecord(rec)
		if k != last {
			subjects++
			last = k
		}
		lines++
		if each != nil {
			each(rec)
		}
	}
}

// graph file references: versions share a base graph file.
func (gf *graphFile) ref() { gf.refs.Add(1) }

// unref closes and removes gf when its last holder lets go.
func (gf *graphFile) unref() {
	if gf == nil {
		return
	}
	if gf.refs.Add(-1) == 0 {
		gf.close()
		if gf.name != "" {
			os.Remove(gf.name)
		}
	}
}
