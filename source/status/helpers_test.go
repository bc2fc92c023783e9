package status

import (
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// page is the status page as a test reads it.
type page struct {
	body string
	sets map[string]*setPage
}

type setPage struct {
	figures map[string]string // data-figure → data-value ("" when absent)
	newest  []newestRow
	hourly  []int64
	daily   []int64
	docs    []string // hrefs in the documents table
	caplist string
}

type newestRow struct {
	seq        uint64
	time, kind string
	path, url  string
	size       int64
}

var (
	reSection = regexp.MustCompile(`(?s)<section id="set-([^"]+)".*?</section>`)
	reFigure  = regexp.MustCompile(`data-figure="([a-z0-9]+)"(?: data-value="(-?[0-9]+)")?`)
	reRow     = regexp.MustCompile(`<tr data-seq="(\d+)"><td class="num">\d+</td><td>([^<]*)</td><td><span class="tag [a-z]+">([a-z]+)</span></td><td class="url"><a href="([^"]*)">([^<]*)</a></td><td class="num" data-value="(\d+)"`)
	reFigureH = regexp.MustCompile(`(?s)<figure class="hourly">(.*?)</figure>`)
	reFigureD = regexp.MustCompile(`(?s)<figure class="daily">(.*?)</figure>`)
	reBar     = regexp.MustCompile(`<rect class="bar"[^>]*><title>[^<]*: (\d+) changes</title></rect>`)
	reDocs    = regexp.MustCompile(`(?s)<table class="docs">.*?</table>`)
	reHref    = regexp.MustCompile(`href="([^"]*)"`)
	reCaplist = regexp.MustCompile(`<a class="caplist" href="([^"]*)"`)
)

func parsePage(t testing.TB, body string) *page {
	t.Helper()
	p := &page{body: body, sets: map[string]*setPage{}}
	for _, m := range reSection.FindAllStringSubmatch(body, -1) {
		sp := &setPage{figures: map[string]string{}}
		sec := m[0]
		for _, f := range reFigure.FindAllStringSubmatch(sec, -1) {
			sp.figures[f[1]] = f[2]
		}
		for _, r := range reRow.FindAllStringSubmatch(sec, -1) {
			seq, _ := strconv.ParseUint(r[1], 10, 64)
			size, _ := strconv.ParseInt(r[6], 10, 64)
			sp.newest = append(sp.newest, newestRow{seq: seq, time: r[2], kind: r[3], url: html.UnescapeString(r[4]), path: html.UnescapeString(r[5]), size: size})
		}
		bars := func(re *regexp.Regexp) []int64 {
			fm := re.FindStringSubmatch(sec)
			if fm == nil {
				t.Fatalf("set %s: no chart %v", m[1], re)
			}
			var out []int64
			for _, b := range reBar.FindAllStringSubmatch(fm[1], -1) {
				n, _ := strconv.ParseInt(b[1], 10, 64)
				out = append(out, n)
			}
			return out
		}
		sp.hourly, sp.daily = bars(reFigureH), bars(reFigureD)
		if d := reDocs.FindString(sec); d != "" {
			for _, h := range reHref.FindAllStringSubmatch(d, -1) {
				sp.docs = append(sp.docs, html.UnescapeString(h[1]))
			}
		}
		if c := reCaplist.FindStringSubmatch(sec); c != nil {
			sp.caplist = html.UnescapeString(c[1])
		}
		p.sets[m[1]] = sp
	}
	return p
}

func get(t testing.TB, h http.Handler) *page {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://src.test/.resourcesync/", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("Content-Type %q", ct)
	}
	return parsePage(t, rec.Body.String())
}

func (sp *setPage) figure(t testing.TB, name string) int64 {
	t.Helper()
	v, ok := sp.figures[name]
	if !ok || v == "" {
		t.Fatalf("figure %s: no value (%v)", name, sp.figures)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
