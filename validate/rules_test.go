package validate

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/rs"
)

const (
	capUp = `<rs:ln rel="up" href="http://example.com/capabilitylist.xml"/>`
	sdUp  = `<rs:ln rel="up" href="http://example.com/.well-known/resourcesync"/>`
)

// doc builds a document: line 1 the XML declaration, line 2 the root start
// tag, then one line per head element, then one line per item (column 1).
func doc(root string, head []string, items ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&b, `<%s xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">`+"\n", root)
	for _, h := range head {
		b.WriteString(h + "\n")
	}
	for _, it := range items {
		b.WriteString(it + "\n")
	}
	fmt.Fprintf(&b, "</%s>\n", root)
	return b.String()
}

func urlset(head []string, items ...string) string { return doc("urlset", head, items...) }
func index(head []string, items ...string) string  { return doc("sitemapindex", head, items...) }
func md(attrs string) string                       { return `<rs:md ` + attrs + `/>` }
func item(loc, inner string) string                { return `<url><loc>` + loc + `</loc>` + inner + `</url>` }
func sm(loc, inner string) string                  { return `<sitemap><loc>` + loc + `</loc>` + inner + `</sitemap>` }

var (
	rlHead  = []string{capUp, md(`capability="resourcelist" at="2013-01-03T09:00:00Z"`)}
	clHead  = []string{capUp, md(`capability="changelist" from="2013-01-02T00:00:00Z" until="2013-01-03T00:00:00Z"`)}
	rdmHead = []string{capUp, md(`capability="resourcedump-manifest" at="2013-01-03T09:00:00Z"`)}
	cdmHead = []string{capUp, md(`capability="changedump-manifest" from="2013-01-02T00:00:00Z"`)}
	capHead = []string{sdUp, md(`capability="capabilitylist"`)}
)

// want is a problem that must be reported: rule, severity and line (0: any).
type want struct {
	rule string
	sev  rs.Severity
	line int
}

func E(rule string, line int) want { return want{rule, rs.SevError, line} }
func W(rule string, line int) want { return want{rule, rs.SevWarning, line} }

func TestRules(t *testing.T) {
	const r1 = "http://example.com/res1"
	tests := []struct {
		name string
		doc  string
		want []want // every error must be listed; listed warnings must appear
	}{
		{"clean resource list", urlset(rlHead, item(r1, `<lastmod>2013-01-02T13:00:00Z</lastmod>`+md(`hash="md5:1584abdf8ebdc9802ac0c6a7402c03b6 sha-1:da39a3ee5e6b4b0d3255bfef95601890afd80709" length="8876"`))), nil},
		{"relative loc", urlset(rlHead, item("res1", "")), []want{E("RS-GEN-7", 5)}},
		{"empty loc", urlset(rlHead, item(r1, ""), item("", "")), []want{E("RS-GEN-7", 6)}},
		{"long loc", urlset(rlHead, item("http://example.com/"+strings.Repeat("a", 2048), "")), []want{E("RS-GEN-7", 5)}},
		{"changefreq", urlset(rlHead, item(r1, `<changefreq>sometimes</changefreq>`)), []want{E("RS-GEN-9", 5)}},
		{"unknown capability", urlset([]string{capUp, md(`capability="inventory"`)}, item(r1, "")), []want{W("RS-GEN-1", 4)}},
		{"capability list as index", index(capHead, sm(r1, md(`capability="resourcelist"`))), []want{W("RS-CAP-1", 4)}},
		{"completed before at", urlset([]string{capUp, md(`capability="resourcelist" at="2013-01-03T09:00:00Z" completed="2013-01-03T08:00:00Z"`)}), []want{E("RS-ROOT-2", 4)}},
		{"until before from", urlset([]string{capUp, md(`capability="changelist" from="2013-01-03T00:00:00Z" until="2013-01-02T00:00:00Z"`)}), []want{E("RS-ROOT-4", 4)}},
		{"at on a change list", urlset([]string{capUp, md(`capability="changelist" from="2013-01-02T00:00:00Z" at="2013-01-02T00:00:00Z"`)}), []want{E("RS-ROOT-5", 4)}},
		{"resource dump missing at", urlset([]string{capUp, md(`capability="resourcedump"`)}), []want{E("RS-RD-1", 4)}},
		{"change notification missing from and until", urlset([]string{md(`capability="change-notification"`)}), []want{E("RS-CN-1", 3), E("RS-CN-1", 3)}},
		{"item from in a change list", urlset(clHead, item(r1, md(`change="created" from="2013-01-02T00:00:00Z"`))), []want{E("RS-ROOT-6", 5)}},
		{"item at in a resource list", urlset(rlHead, item(r1, md(`at="2013-01-02T00:00:00Z"`))), []want{E("RS-ROOT-6", 5)}},
		{"item at in a change list index", index([]string{capUp, md(`capability="changelist" from="2013-01-02T00:00:00Z"`)}, sm(r1, md(`from="2013-01-02T00:00:00Z" at="2013-01-02T00:00:00Z"`))), []want{E("RS-ROOT-6", 5)}},
		{"datetime before from", urlset(clHead, item(r1, md(`change="created" datetime="2013-01-01T23:59:59Z"`))), []want{E("RS-URL-4", 5)}},
		{"not chronological", urlset(clHead,
			item(r1, md(`change="created" datetime="2013-01-02T10:00:00Z"`)),
			item(r1, md(`change="updated"`)),
			item(r1, md(`change="updated" datetime="2013-01-02T09:00:00Z"`))), []want{E("RS-CHL-3", 7)}},
		{"1.0-style order by lastmod", urlset(clHead,
			item(r1, `<lastmod>2013-01-02T10:00:00Z</lastmod>`+md(`change="created"`)),
			item(r1, `<lastmod>2013-01-02T09:00:00Z</lastmod>`+md(`change="updated"`))), []want{W("RS-LEG-10", 5), E("RS-CHL-3", 6)}},
		{"change missing and bad", urlset(clHead, item(r1, md(`datetime="2013-01-02T10:00:00Z"`)), item(r1, md(`change="moved"`))), []want{E("RS-CHL-2", 5), E("RS-URL-3", 6)}},
		{"hash hex of wrong length", urlset(rlHead, item(r1, md(`hash="md5:1584abdf"`))), []want{E("RS-URL-5", 5)}},
		{"hash algorithm twice", urlset(rlHead, item(r1, md(`hash="md5:1584abdf8ebdc9802ac0c6a7402c03b6 md5:1584abdf8ebdc9802ac0c6a7402c03b6"`))), []want{E("RS-URL-5", 5)}},
		{"hash base64 sha-1", urlset(rlHead, item(r1, md(`hash="sha-1:2jmj7l5rSw0yVb/vlWAYkK/YBwk="`))), []want{E("RS-URL-5", 5)}},
		{"hash unverifiable", urlset(rlHead, item(r1, md(`hash="sha-256:f4OxZX_x_DFGFDgghgdfb6rtSx-iosjf6735432nklj"`))), []want{W("RS-AMB-1", 5)}},
		{"hash unknown algorithm", urlset(rlHead, item(r1, md(`hash="crc32:deadbeef"`))), []want{W("RS-URL-5", 5)}},
		{"negative length", urlset(rlHead, item(r1, md(`length="-1"`))), []want{E("RS-URL-6", 5)}},
		{"manifest path missing", urlset(rdmHead, item(r1, md(`path="/r1"`)), item(r1, md(`type="text/html"`))), []want{E("RS-RDM-2", 6)}},
		{"manifest path ends with slash", urlset(rdmHead, item(r1, md(`path="/resources/"`))), []want{E("RS-URL-9", 5)}},
		{"change dump manifest deleted needs no path", urlset(cdmHead, item(r1, md(`change="deleted" datetime="2013-01-02T10:00:00Z"`)), item(r1, md(`change="created" datetime="2013-01-02T11:00:00Z"`))), []want{E("RS-CDM-3", 6)}},
		{"link without href, bad rel", urlset(rlHead, item(r1, `<rs:ln rel="duplicate"/><rs:ln rel="_mirror" href="http://m.example.com/r1"/>`)), []want{E("RS-LN-1", 5), E("RS-LN-3", 5)}},
		{"patch link without type", urlset(clHead, item(r1, md(`change="updated" datetime="2013-01-02T10:00:00Z"`)+`<rs:ln rel="http://www.openarchives.org/rs/terms/patch" href="http://example.com/p"/>`)), []want{E("RS-REL-9", 5)}},
		{"patch link in a change dump manifest needs path", urlset(cdmHead, item(r1, md(`change="updated" path="/r1"`)+`<rs:ln rel="http://www.openarchives.org/rs/terms/patch" href="http://example.com/p" type="application/json-patch"/>`)), []want{E("RS-REL-9", 5)}},
		{"capability list entries", urlset(capHead,
			item("http://example.com/rl.xml", md(`capability="resourcelist"`)),
			item("http://example.com/x.xml", ""),
			item("http://example.com/topic", md(`capability="change-notification"`))), []want{E("RS-CAP-2", 6), E("RS-CAP-6", 7)}},
		{"capability list missing up", urlset([]string{md(`capability="capabilitylist"`)}), []want{E("RS-CAP-1", 3)}},
		{"resource list missing up", urlset([]string{md(`capability="resourcelist" at="2013-01-03T09:00:00Z"`)}), []want{W("RS-RL-2", 3)}},
		{"source description item capability", urlset([]string{md(`capability="description"`)}, item("http://example.com/rl.xml", md(`capability="resourcelist"`))), []want{E("RS-SD-3", 4)}},
		{"framework notification item needs capability", urlset([]string{md(`capability="framework-notification"`)}, item("http://example.com/rl.xml", md(`change="created"`))), []want{E("RS-FN-1", 4)}},
		{"change list index: closed lists need until", index([]string{capUp, md(`capability="changelist" from="2013-01-01T00:00:00Z" until="2013-01-03T00:00:00Z"`)},
			sm("http://example.com/cl1.xml", md(`from="2013-01-01T00:00:00Z"`)),
			sm("http://example.com/cl2.xml", md(`from="2013-01-01T00:00:00Z" until="2013-01-02T00:00:00Z"`)),
			sm("http://example.com/cl3.xml", md(`from="2013-01-02T00:00:00Z"`))), []want{E("RS-CHLI-3", 5), E("RS-CHLI-3", 7)}},
		{"change list index: gap and order", index([]string{capUp, md(`capability="changelist" from="2013-01-01T00:00:00Z"`)},
			sm("http://example.com/cl1.xml", md(`from="2013-01-01T00:00:00Z" until="2013-01-02T00:00:00Z"`)),
			sm("http://example.com/cl2.xml", md(`from="2013-01-02T06:00:00Z" until="2013-01-03T00:00:00Z"`)),
			sm("http://example.com/cl3.xml", md(`from="2013-01-01T00:00:00Z"`))), []want{E("RS-DEST-3", 6), E("RS-CHLI-1", 7)}},
		{"change list archive out of order", urlset([]string{capUp, md(`capability="changelist-archive"`)},
			item("http://example.com/cl2.xml", md(`from="2013-01-02T00:00:00Z" until="2013-01-03T00:00:00Z"`)),
			item("http://example.com/cl1.xml", md(`from="2013-01-01T00:00:00Z" until="2013-01-02T00:00:00Z"`))), []want{E("RS-ARC-4", 6)}},
		{"change notification as index", index([]string{md(`capability="change-notification" from="2013-01-01T00:00:00Z" until="2013-01-02T00:00:00Z"`)}), []want{E("RS-CN-4", 3)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []Problem
			if _, err := Document("t.xml", strings.NewReader(tc.doc), Options{}, func(p Problem) { got = append(got, p) }); err != nil {
				t.Fatalf("Document: %v\n%s", err, tc.doc)
			}
			match := func(w want, p Problem) bool {
				return p.Rule == w.rule && p.Severity == w.sev && (w.line == 0 || p.Line == w.line)
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(got, func(p Problem) bool { return match(w, p) }) {
					t.Errorf("missing %s %s at line %d; got %v", w.sev, w.rule, w.line, got)
				}
			}
			for _, p := range got {
				if p.Severity == rs.SevError && !slices.ContainsFunc(tc.want, func(w want) bool { return match(w, p) }) {
					t.Errorf("unexpected %v", p)
				}
			}
		})
	}
}

func TestLegacyLenient(t *testing.T) {
	// A v0.9 Resource List (rel="resourcesync", from): accepted, its
	// errors reported as warnings next to the decoder's RS-LEG-9.
	d := urlset([]string{`<rs:ln rel="resourcesync" href="http://example.com/capabilitylist.xml"/>`, md(`capability="resourcelist" from="2013-01-03T09:00:00Z"`)},
		item("res1", ""))
	var got []Problem
	info, err := Document("l.xml", strings.NewReader(d), Options{}, func(p Problem) { got = append(got, p) })
	if err != nil {
		t.Fatal(err)
	}
	if info.Legacy == "" {
		t.Fatalf("not recognised as legacy: %v", got)
	}
	var leg, loc bool
	for _, p := range got {
		if p.Severity == rs.SevError {
			t.Errorf("error in a legacy document: %v", p)
		}
		leg = leg || strings.HasPrefix(p.Rule, "RS-LEG")
		loc = loc || p.Rule == "RS-GEN-7" && p.Line == 5
	}
	if !leg || !loc {
		t.Errorf("want RS-LEG-* and RS-GEN-7 warnings, got %v", got)
	}
}

func TestTooManyEntries(t *testing.T) {
	items := make([]string, rs.MaxEntries+1)
	for i := range items {
		items[i] = `<url><loc>http://example.com/r</loc></url>`
	}
	var got []Problem
	info, err := Document("big.xml", strings.NewReader(urlset(rlHead, items...)), Options{}, func(p Problem) { got = append(got, p) })
	if err != nil {
		t.Fatal(err)
	}
	if info.Entries != rs.MaxEntries+1 || len(got) != 1 || got[0].Rule != "RS-GEN-8" || got[0].Line != 5+rs.MaxEntries {
		t.Fatalf("entries %d, problems %v", info.Entries, got)
	}
}

func TestInfoChildren(t *testing.T) {
	info, err := Document("cap.xml", strings.NewReader(urlset(capHead,
		item("http://example.com/rl.xml", md(`capability="resourcelist"`)),
		item("http://example.com/topic", md(`capability="change-notification"`)+`<rs:ln rel="hub" href="http://hub.example.com/"/>`))), Options{}, func(Problem) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Children) != 2 || info.Children[1].Hub != "http://hub.example.com/" || info.Children[0].Capability != rs.CapResourceList || info.Children[0].Pos.Line != 5 {
		t.Fatalf("children = %+v", info.Children)
	}
	// Items of a Resource List are resources, not documents: not kept.
	info, err = Document("rl.xml", strings.NewReader(urlset(rlHead, item("http://example.com/r", ""))), Options{}, func(Problem) {})
	if err != nil || info.Children != nil {
		t.Fatalf("resource list children = %v, %v", info.Children, err)
	}
}

func TestPaddedBase64(t *testing.T) {
	for _, tc := range []struct {
		v    string
		n    int
		want bool
	}{
		{"Q2hlY2sgSW50ZWdyaXR5IQ==", 16, true},
		{"2jmj7l5rSw0yVb/vlWAYkK/YBwk=", 20, true},
		{"f4OxZX_x_DFGFDgghgdfb6rtSx-iosjf6735432nklj", 32, false},
		{"1584abdf8ebdc9802ac0c6a7402c03b6", 16, false},
	} {
		if got := paddedBase64(tc.v, tc.n); got != tc.want {
			t.Errorf("paddedBase64(%q, %d) = %v", tc.v, tc.n, got)
		}
	}
}
