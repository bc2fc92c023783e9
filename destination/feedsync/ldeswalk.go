package feedsync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/feedsync/ldes"
	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/rs"
)

// AcceptLDES is the Accept header an LDES is read with: the syntaxes
// package ldes parses, Turtle first.
const AcceptLDES = "text/turtle, application/n-triples;q=0.9, application/rdf+xml;q=0.5"

// maxFrontier bounds the nodes a walk hands to the next: beyond it the
// next walk starts from the stream.
const maxFrontier = 1000

// WalkLDES reads the Linked Data Event Stream at start (its
// ldes:EventStream, or a node of it) and gives sink every member after
// opt.Since, as the change of the object it is a version of. It follows
// every tree:relation but those that say their node holds only members
// before opt.Since (a LessThan or LessThanOrEqualTo relation on the
// stream's timestamp path), each node once; with opt.Resume it starts
// from those nodes instead of the stream, so that the immutable nodes a
// previous walk read are not read again. Members are given in the order
// read; the sink keeps the newest per object.
func WalkLDES(ctx context.Context, get Getter, start string, opt Options, sink func(Change) error) (Result, error) {
	res, err := walkLDES(ctx, get, start, opt, opt.Resume, sink)
	var se *httperr.StatusError
	if err != nil && len(opt.Resume) > 0 && errors.As(err, &se) && (se.Code == 404 || se.Code == 410) {
		// A node of the frontier is gone (the stream was rebuilt or
		// pruned by its retention policy): from the stream again.
		return walkLDES(ctx, get, start, opt, nil, sink)
	}
	return res, err
}

func walkLDES(ctx context.Context, get Getter, start string, opt Options, resume []string, sink func(Change) error) (Result, error) {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.MaxPages <= 0 {
		opt.MaxPages = DefaultMaxPages
	}
	if opt.Skew == 0 {
		opt.Skew = DefaultSkew
	}
	res := Result{Until: opt.Since}
	now := opt.Now()
	latest := now.Add(opt.Skew)
	queue := []string{start}
	if len(resume) > 0 {
		queue = append([]string(nil), resume...)
	}
	seen := map[string]bool{}
	for _, u := range queue {
		seen[u] = true
	}
	var frontier []string
	anyImmutable := false
	tsPath := ""
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		u := queue[0]
		queue = queue[1:]
		if res.Pages >= opt.MaxPages {
			return res, fmt.Errorf("%s: %w (%d)", u, ErrTooManyPages, opt.MaxPages)
		}
		fd, err := get(ctx, u)
		if err != nil {
			return res, err
		}
		final := fd.URL
		if final == "" {
			final = u
		}
		seen[final] = true
		f, ok := rdf.FormatFor(fd.Header.Get("Content-Type"))
		if !ok {
			f = rdf.Turtle
		}
		d, err := ldes.Decode(fd, f, final, final)
		fd.Close()
		if err != nil {
			return res, err
		}
		res.Pages++
		if d.TimestampPath != "" {
			tsPath = d.TimestampPath
		}
		if strings.Contains(strings.ToLower(fd.Header.Get("Cache-Control")), "immutable") {
			anyImmutable = true
		} else if len(d.Members) > 0 || len(d.Relations) > 0 || len(d.Views) == 0 {
			frontier = append(frontier, final)
		}
		next := func(ref string) {
			if n := resolve(final, ref); n != "" && !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
		if u == start && len(resume) == 0 {
			for _, v := range d.Views {
				next(v)
			}
		}
		for _, r := range d.Relations {
			if before(r, tsPath, opt.Since) {
				continue
			}
			next(r.Node)
		}
		for i := range d.Members {
			m := &d.Members[i]
			t := m.Time
			if t.After(latest) {
				res.Clamped++
				if res.Clamped == 1 && opt.Warn != nil {
					opt.Warn(fmt.Sprintf("%s: member %s is dated %s, in the future: taken as now (further ones not reported)", final, m.ID, t.UTC().Format(time.RFC3339)))
				}
				t = now
			}
			if !t.IsZero() && !opt.Since.IsZero() && t.Before(opt.Since) {
				continue // one dated Since itself is read again, as in Walk
			}
			obj := resolve(final, m.Object)
			if obj == "" {
				continue // a version of something not on the web: nothing to mirror
			}
			res.Items++
			if t.After(res.Until) {
				res.Until = t
			}
			c := Change{URI: obj, Change: rs.Updated, Time: t, Length: m.Length, Type: m.Format, Triples: m.Triples, Member: m.ID}
			if m.Deleted {
				c.Change, c.Length, c.Type = rs.Deleted, -1, ""
			} else if m.SHA256 != "" {
				if h, err := rs.ParseHashes(rs.SHA256 + ":" + m.SHA256); err == nil {
					c.Hashes = h
				}
			}
			if err := sink(c); err != nil {
				return res, err
			}
		}
	}
	if anyImmutable && len(frontier) <= maxFrontier {
		res.Frontier = frontier
	}
	return res, nil
}

// before reports whether r's node holds only members before since: a
// LessThan relation on the timestamp path whose value is not after it,
// or a LessThanOrEqualTo one whose value is before it.
func before(r ldes.Relation, tsPath string, since time.Time) bool {
	if since.IsZero() || tsPath == "" || r.Path != tsPath {
		return false
	}
	v, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(r.Value))
	if err != nil {
		return false
	}
	switch r.Type {
	case ldes.TreeNS + "LessThanRelation":
		return !v.After(since)
	case ldes.TreeNS + "LessThanOrEqualToRelation":
		return v.Before(since) // its node may hold members dated since
	}
	return false
}
