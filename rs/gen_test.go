package rs

import (
	"fmt"
	"io"
)

// genReader streams a generated Resource List of n entries without ever
// holding it whole, so tests can decode millions of entries in bounded
// memory.
type genReader struct {
	n, i int
	buf  []byte
	off  int
	done bool
}

const genHead = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcelist" at="2024-05-01T10:00:00Z" completed="2024-05-01T10:05:00.123Z"/>
<rs:ln rel="up" href="http://example.com/dataset1/capabilitylist.xml"/>
`

func newGenReader(n int) *genReader {
	return &genReader{n: n, buf: []byte(genHead)}
}

func genEntry(b []byte, i int) []byte {
	return fmt.Appendf(b, "<url><loc>http://example.com/res/%08d.html</loc><lastmod>2024-04-%02dT%02d:%02d:%02dZ</lastmod>"+
		"<rs:md hash=\"md5:%032x sha-256:%064x\" length=\"%d\" type=\"text/html\"/></url>\n",
		i, 1+i%28, i%24, i%60, (i/60)%60, i*7919, i*104729, 1000+i%5000)
}

func (g *genReader) Read(p []byte) (int, error) {
	for g.off >= len(g.buf) {
		if g.done {
			return 0, io.EOF
		}
		g.buf, g.off = g.buf[:0], 0
		for k := 0; k < 64 && g.i < g.n; k++ {
			g.buf = genEntry(g.buf, g.i)
			g.i++
		}
		if g.i >= g.n {
			g.buf = append(g.buf, "</urlset>\n"...)
			g.done = true
		}
	}
	n := copy(p, g.buf[g.off:])
	g.off += n
	return n, nil
}
