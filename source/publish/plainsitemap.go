package publish

import (
	"bufio"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Plain sitemaps (Config.PlainSitemap): sitemaps.org documents without
// any ResourceSync element, for search engines that flag rs:md and rs:ln.
//
//	.resourcesync/sitemap.xml                  sitemap index naming every set's parts
//	.resourcesync/<set>/sitemap/part-N.xml     the set's resources, ≤ 50,000 URLs and < 50 MB each
//
// robots.txt names the index in a Sitemap line (a sitemap submitted
// through robots.txt may list any URL of its host, so the resources above
// .resourcesync/ are in scope).
const (
	plainIndexPath   = docRoot + "/sitemap.xml"
	metaPlainSitemap = "publish.plainsitemap"

	// plainMaxBytes keeps a part below the protocol's 50 MB (52,428,800
	// bytes) with room for the closing tag.
	plainMaxBytes = 50*1000*1000 - 4096
	sitemapNS     = "http://www.sitemaps.org/schemas/sitemap/0.9"
)

// plainMaxURLs is the protocol's limit of URLs per sitemap (a variable
// for the tests).
var plainMaxURLs = 50000

// PlainSitemapPath is the path of the plain sitemap index relative to Out.
const PlainSitemapPath = plainIndexPath

type plainState struct {
	Key   string    `json:"key"` // journal last seq and inventory count the parts were written from
	Parts int       `json:"parts"`
	At    time.Time `json:"at"`
}

func plainPart(set string, n int) string {
	return setDoc(set, "sitemap/part-"+strconv.Itoa(n)+".xml")
}

// plainSitemap writes the set's plain sitemap parts from the inventory
// (paged reads: memory does not grow with it) when the collection changed
// since they were written, and returns their state. Parts are written
// under their final names one by one (each atomically); the index names
// them only after all are written, and parts beyond the new count are
// removed after the index.
func (p *publisher) plainSitemap(ctx context.Context, s *Set) (plainState, error) {
	var ps plainState
	ok, err := getMeta(ctx, s.Store, metaPlainSitemap, &ps)
	if err != nil {
		return ps, err
	}
	ss, err := s.Store.Stats(ctx)
	if err != nil {
		return ps, fmt.Errorf("publish: %w", err)
	}
	key := strconv.FormatUint(ss.LastSeq, 10) + "/" + strconv.Itoa(ss.Resources)
	if ok && ps.Key == key && ps.Parts > 0 && exists(p.file(plainPart(s.Name, ps.Parts))) {
		return ps, nil
	}
	var (
		part  *atomicFile
		bw    *bufio.Writer
		n     int
		urls  int
		bytes int
	)
	closePart := func() error {
		io.WriteString(bw, "</urlset>\n")
		if err := bw.Flush(); err != nil {
			part.abort()
			return err
		}
		return part.commit()
	}
	var line strings.Builder
	for r, err := range s.Store.ResourcesIn(ctx, "", "") {
		if err != nil {
			if part != nil {
				part.abort()
			}
			return ps, fmt.Errorf("publish: %w", err)
		}
		line.Reset()
		line.WriteString("<url><loc>")
		xml.EscapeText(&line, []byte(s.loc(r.Path)))
		line.WriteString("</loc>")
		if !r.LastMod.IsZero() {
			line.WriteString("<lastmod>" + r.LastMod.UTC().Format(time.RFC3339) + "</lastmod>")
		}
		line.WriteString("</url>\n")
		if part != nil && (urls == plainMaxURLs || bytes+line.Len() > plainMaxBytes) {
			if err := closePart(); err != nil {
				return ps, err
			}
			part = nil
		}
		if part == nil {
			n++
			if part, err = createAtomic(p.file(plainPart(s.Name, n)), false); err != nil {
				return ps, err
			}
			bw = bufio.NewWriter(part)
			head := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="` + sitemapNS + `">` + "\n"
			bw.WriteString(head)
			urls, bytes = 0, len(head)+len("</urlset>\n")
		}
		bw.WriteString(line.String())
		urls++
		bytes += line.Len()
	}
	if part == nil { // an empty collection: one empty list
		n = 1
		err := writeAtomic(p.file(plainPart(s.Name, 1)), func(w io.Writer) error {
			_, err := io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<urlset xmlns="`+sitemapNS+`">`+"\n</urlset>\n")
			return err
		})
		if err != nil {
			return ps, err
		}
	} else if err := closePart(); err != nil {
		return ps, err
	}
	ps = plainState{Key: key, Parts: n, At: p.now.UTC()}
	return ps, putMeta(ctx, s.Store, metaPlainSitemap, ps)
}

// writePlainIndex writes the plain sitemap index naming the parts of
// every set, then removes parts no index names any more.
func (p *publisher) writePlainIndex(states map[string]plainState) error {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<sitemapindex xmlns="` + sitemapNS + `">` + "\n")
	for _, s := range p.cfg.Sets {
		ps := states[s.Name]
		for i := 1; i <= ps.Parts; i++ {
			b.WriteString("<sitemap><loc>")
			xml.EscapeText(&b, []byte(p.url(plainPart(s.Name, i))))
			b.WriteString("</loc><lastmod>" + ps.At.Format(time.RFC3339) + "</lastmod></sitemap>\n")
		}
	}
	b.WriteString("</sitemapindex>\n")
	if err := writeAtomic(p.file(plainIndexPath), func(w io.Writer) error { _, err := io.WriteString(w, b.String()); return err }); err != nil {
		return err
	}
	for _, s := range p.cfg.Sets {
		ps := states[s.Name]
		for i := ps.Parts + 1; ; i++ {
			if err := os.Remove(p.file(plainPart(s.Name, i))); err != nil {
				break
			}
		}
	}
	return nil
}
