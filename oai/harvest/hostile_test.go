package harvest

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// hostile is a repository answering each request with page(query); it
// cancels the harvest after too many requests, so that a harvester that
// does not stop by itself fails the test instead of hanging it.
type hostile struct {
	t        *testing.T
	srv      *httptest.Server
	requests atomic.Int64
	cancel   context.CancelFunc
	h        *Harvester
	cfg      Config
}

const hEnvelope = `<?xml version="1.0" encoding="UTF-8"?><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>%s</responseDate><request>x</request>%s</OAI-PMH>`

const identifyBody = `<Identify><repositoryName>r</repositoryName><baseURL>http://x/</baseURL><protocolVersion>2.0</protocolVersion><adminEmail>a@b</adminEmail><earliestDatestamp>2000-01-01</earliestDatestamp><deletedRecord>%s</deletedRecord><granularity>YYYY-MM-DDThh:mm:ssZ</granularity></Identify>`

func newHostile(t *testing.T, page func(q map[string][]string) (date, body string)) *hostile {
	x := &hostile{t: t}
	x.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if x.requests.Add(1) > 500 && x.cancel != nil {
			x.cancel()
		}
		date, body := page(r.URL.Query())
		if date == "" {
			date = time.Now().UTC().Format(time.RFC3339)
		}
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprintf(w, hEnvelope, date, body)
	}))
	t.Cleanup(x.srv.Close)
	c, _ := testnet.Client(t)
	base := t.TempDir()
	x.cfg = Config{Endpoint: x.srv.URL, Dir: filepath.Join(base, "records"), State: filepath.Join(base, "state"), Client: c,
		Log: slog.New(slog.DiscardHandler)}
	h, err := New(x.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	x.h = h
	return x
}

func (x *hostile) harvest() (Stats, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	x.cancel = cancel
	return x.h.Harvest(ctx)
}

func hrec(id, date, md string) string {
	return `<record><header><identifier>` + id + `</identifier><datestamp>` + date + `</datestamp></header><metadata>` + md + `</metadata></record>`
}

// A repository whose resumption tokens go round in a cycle, or that
// sends page after page of nothing, makes the harvest fail with a clear
// error instead of asking forever.
func TestTokenCycleAndEmptyPages(t *testing.T) {
	for _, tc := range []struct {
		name string
		next func(tok string, n int64) string
		want string
	}{
		{"cycle", func(tok string, _ int64) string {
			return map[string]string{"": "A", "A": "B", "B": "C", "C": "A"}[tok]
		}, "cycle"},
		{"empty", func(_ string, n int64) string { return fmt.Sprint("t", n) }, "without records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var x *hostile
			x = newHostile(t, func(q map[string][]string) (string, string) {
				if q["verb"][0] == "Identify" {
					return "", fmt.Sprintf(identifyBody, "persistent")
				}
				tok := ""
				if v := q["resumptionToken"]; len(v) > 0 {
					tok = v[0]
				}
				recs := ""
				if tc.name == "cycle" {
					recs = hrec("oai:x:"+tok, "2024-01-01T00:00:00Z", `<r xmlns="urn:r">`+tok+`</r>`)
				}
				return "", "<ListRecords>" + recs + "<resumptionToken>" + tc.next(tok, x.requests.Load()) + "</resumptionToken></ListRecords>"
			})
			_, err := x.harvest()
			if err == nil || !strings.Contains(err.Error(), tc.want) || x.requests.Load() > 500 {
				t.Fatalf("after %d requests: %v; want an error naming the %s", x.requests.Load(), err, tc.want)
			}
		})
	}
}

// Identifiers too long for a file name (or for the state's keys) skip
// their record, deleted or listed by a full pass, and never fail the
// harvest.
func TestLongIdentifiers(t *testing.T) {
	long := "oai:x:" + strings.Repeat("a", 300)
	huge := "oai:x:" + strings.Repeat("%", 40000) // escaped three times over
	pass, n := false, 0
	x := newHostile(t, func(q map[string][]string) (string, string) {
		switch q["verb"][0] {
		case "Identify":
			n++
			return fmt.Sprintf("2024-02-0%dT00:00:00Z", n), fmt.Sprintf(identifyBody, "no")
		case "ListRecords":
			if _, ok := q["from"]; !ok && n > 1 {
				pass = true
				return "", `<ListRecords>` + hrec("oai:x:ok", "2024-01-01T00:00:00Z", `<r xmlns="urn:r"/>`) +
					hrec(huge, "2024-01-01T00:00:00Z", `<r xmlns="urn:r"/>`) +
					`<record><header><identifier>` + huge + `x</identifier><datestamp>2024-01-01T00:00:00Z</datestamp><setSpec>&bad;</setSpec></header><metadata><r xmlns="urn:r"/></metadata></record></ListRecords>`
			}
		}
		return "", `<ListRecords>` + hrec("oai:x:ok", "2024-01-01T00:00:00Z", `<r xmlns="urn:r"/>`) +
			`<record><header status="deleted"><identifier>` + long + `</identifier><datestamp>2024-01-01T00:00:00Z</datestamp></header></record>` +
			`<record><header status="deleted"><identifier>` + huge + `</identifier><datestamp>2024-01-01T00:00:00Z</datestamp></header></record>` +
			`</ListRecords>`
	})
	x.h.cfg.FullEvery = time.Nanosecond
	for i := range 2 {
		st, err := x.harvest()
		if err != nil {
			t.Fatalf("harvest %d: %v", i, err)
		}
		if i == 0 && st.Written != 1 {
			t.Fatalf("harvest %d: %+v", i, st)
		}
	}
	if !pass {
		t.Fatal("no full pass")
	}
	if x.h.Status().Records != 1 {
		t.Fatalf("records: %+v", x.h.Status())
	}
}

// A record larger than the cap, or declaring namespaces by the thousand
// (whose resolution costs grow with their product), is skipped with a
// warning, and the records around it are harvested; a field of the
// envelope larger than its cap fails the response with a clear error.
// Memory stays bounded by the caps, not by what the repository sends.
func TestHugeRecords(t *testing.T) {
	old := maxRecordBytes
	maxRecordBytes = 1 << 20
	t.Cleanup(func() { maxRecordBytes = old })
	big := strings.Repeat("x", 3<<20)
	var decls strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&decls, ` xmlns:p%d="urn:%d"`, i, i)
	}
	bigToken := false
	x := newHostile(t, func(q map[string][]string) (string, string) {
		if q["verb"][0] == "Identify" {
			return "", fmt.Sprintf(identifyBody, "persistent")
		}
		if bigToken {
			return "", "<ListRecords>" + hrec("oai:x:a", "2024-01-01T00:00:00Z", `<r xmlns="urn:r"/>`) + "<resumptionToken>" + big + "</resumptionToken></ListRecords>"
		}
		return "", "<ListRecords>" + hrec("oai:x:a", "2024-01-01T00:00:00Z", `<r xmlns="urn:r"/>`) +
			hrec("oai:x:text", "2024-01-01T00:00:00Z", `<r xmlns="urn:r">`+big+`</r>`) +
			hrec("oai:x:attr", "2024-01-01T00:00:00Z", `<r xmlns="urn:r" a="`+big+`"/>`) +
			hrec("oai:x:"+big, "2024-01-01T00:00:00Z", `<r xmlns="urn:r"/>`) +
			hrec("oai:x:ns", "2024-01-01T00:00:00Z", `<r xmlns="urn:r"`+decls.String()+`><p0:x/></r>`) +
			hrec("oai:x:b", "2024-01-01T00:00:00Z", `<r xmlns="urn:r"/>`) + "</ListRecords>"
	})
	st, err := x.harvest()
	if err != nil {
		t.Fatal(err)
	}
	if st.Written != 2 || st.Malformed != 4 {
		t.Fatalf("%+v; want 2 written, 4 malformed", st)
	}
	bigToken = true
	x.h.cfg.FullEvery = time.Hour
	_, err = x.harvest()
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("a 3 MB resumption token: %v", err)
	}
}

// Elements nested without end, in a record or around records, hit a
// depth cap instead of growing the parser's stack with the response.
func TestDeepNesting(t *testing.T) {
	deep := strings.Repeat("<x>", 20000) + strings.Repeat("</x>", 20000)
	outside := false
	x := newHostile(t, func(q map[string][]string) (string, string) {
		if q["verb"][0] == "Identify" {
			return "", fmt.Sprintf(identifyBody, "persistent")
		}
		if outside {
			return "", "<ListRecords>" + deep + "</ListRecords>"
		}
		return "", "<ListRecords>" + hrec("oai:x:deep", "2024-01-01T00:00:00Z", `<r xmlns="urn:r">`+deep+`</r>`) +
			hrec("oai:x:b", "2024-01-01T00:00:00Z", `<r xmlns="urn:r"/>`) + "</ListRecords>"
	})
	st, err := x.harvest()
	if err != nil || st.Written != 1 || st.Malformed != 1 {
		t.Fatalf("%+v, %v; want 1 written, 1 malformed", st, err)
	}
	outside = true
	x.h.cfg.FullEvery = time.Hour
	if _, err = x.harvest(); err == nil || !strings.Contains(err.Error(), "nested") {
		t.Fatalf("deep envelope: %v", err)
	}
}

// A repository clock far ahead (responseDate in 2100) must not push the
// next harvest's from past the records changed meanwhile.
func TestFutureResponseDate(t *testing.T) {
	n, from := 0, ""
	x := newHostile(t, func(q map[string][]string) (string, string) {
		if q["verb"][0] == "Identify" {
			n++
			if n == 1 {
				return "2100-01-01T00:00:00Z", fmt.Sprintf(identifyBody, "persistent")
			}
			return "", fmt.Sprintf(identifyBody, "persistent")
		}
		if v := q["from"]; len(v) > 0 {
			from = v[0]
		}
		return "", "<ListRecords>" + hrec("oai:x:a", "2024-01-01T00:00:00Z", `<r xmlns="urn:r"/>`) + "</ListRecords>"
	})
	for range 2 {
		if _, err := x.harvest(); err != nil {
			t.Fatal(err)
		}
	}
	f, err := time.Parse(time.RFC3339, from)
	if err != nil || f.After(time.Now()) {
		t.Fatalf("second harvest from %q (%v): after now", from, err)
	}
}

// A repository that sends half a page and then nothing holds the
// harvest only until the stall timeout, also with a client without a
// timeout of its own (what serve passes), and the failure names the
// stall.
func TestStalledBody(t *testing.T) {
	x := newHostile(t, func(q map[string][]string) (string, string) {
		return "", fmt.Sprintf(identifyBody, "persistent")
	})
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("verb") == "Identify" {
			fmt.Fprintf(w, hEnvelope, "2024-01-01T00:00:00Z", fmt.Sprintf(identifyBody, "persistent"))
			return
		}
		fmt.Fprint(w, `<?xml version="1.0"?><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2024-01-01T00:00:00Z</responseDate><ListRecords>`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(stall.Close)
	x.h.cfg.Endpoint = stall.URL
	x.h.stallTimeout = 100 * time.Millisecond
	x.h.policy.Retries, x.h.policy.BaseDelay = 1, time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only so that a hang fails
	defer cancel()
	_, err := x.h.Harvest(ctx)
	if err == nil || !strings.Contains(err.Error(), "stalled") {
		t.Fatalf("%v; want a stall", err)
	}
}

// A repository that redirects to another host (an internal address, say)
// is not followed there: the harvest fails with a clear error and the
// other host sees no request.
func TestRedirectOffOrigin(t *testing.T) {
	var hits atomic.Int64
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skip("no 127.0.0.2:", err)
	}
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, hEnvelope, "2024-01-01T00:00:00Z", fmt.Sprintf(identifyBody, "persistent"))
	}))
	other.Listener.Close()
	other.Listener = l
	other.Start()
	t.Cleanup(other.Close)
	x := newHostile(t, func(q map[string][]string) (string, string) { return "", "" })
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/?"+r.URL.RawQuery, http.StatusFound)
	}))
	t.Cleanup(redir.Close)
	x.cfg.Endpoint = redir.URL
	x.h.Close()
	h, err := New(x.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	h.policy.Retries = 1
	_, err = h.Harvest(context.Background())
	if err == nil || !strings.Contains(err.Error(), "another host") || hits.Load() != 0 {
		t.Fatalf("%v, %d requests to the other host; want a refused redirect", err, hits.Load())
	}
}

// A symbolic link planted in Dir in place of a record directory is not
// written through: the harvest fails naming it, and nothing appears
// outside Dir.
func TestSymlinkInDir(t *testing.T) {
	x := newHostile(t, func(q map[string][]string) (string, string) {
		if q["verb"][0] == "Identify" {
			return "", fmt.Sprintf(identifyBody, "persistent")
		}
		return "", "<ListRecords>" + hrec("oai:x:a", "2024-01-01T00:00:00Z", `<r xmlns="urn:r"/>`) + "</ListRecords>"
	})
	outside := t.TempDir()
	rel := RecordPath("oai:x:a", "oai_dc")
	link := filepath.Join(x.cfg.Dir, filepath.FromSlash(path.Dir(rel)))
	if err := os.MkdirAll(filepath.Dir(link), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, link); err != nil {
		t.Skip(err)
	}
	_, err := x.harvest()
	if ents, _ := os.ReadDir(outside); len(ents) > 0 || err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("%v; %d files written outside Dir", err, len(ents))
	}
}

// Nor is a deletion carried out through such a link.
func TestSymlinkInDirDelete(t *testing.T) {
	x := newHostile(t, func(q map[string][]string) (string, string) {
		if q["verb"][0] == "Identify" {
			return "", fmt.Sprintf(identifyBody, "persistent")
		}
		return "", `<ListRecords><record><header status="deleted"><identifier>oai:x:a</identifier><datestamp>2024-01-01T00:00:00Z</datestamp></header></record></ListRecords>`
	})
	outside := t.TempDir()
	rel := RecordPath("oai:x:a", "oai_dc")
	victim := filepath.Join(outside, path.Base(rel))
	os.WriteFile(victim, []byte("keep"), 0o666)
	link := filepath.Join(x.cfg.Dir, filepath.FromSlash(path.Dir(rel)))
	os.MkdirAll(filepath.Dir(link), 0o777)
	if err := os.Symlink(outside, link); err != nil {
		t.Skip(err)
	}
	_, err := x.harvest()
	if _, serr := os.Stat(victim); serr != nil || err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("%v; the file outside Dir: %v", err, serr)
	}
}

// Between records the decoder would keep any one token whole: a comment
// or run of white space of gigabytes there fails the response with a
// clear error instead.
func TestHugeTokenBetweenRecords(t *testing.T) {
	old := maxRecordBytes
	maxRecordBytes = 1 << 20
	t.Cleanup(func() { maxRecordBytes = old })
	for _, filler := range []string{"<!--" + strings.Repeat("x", 3<<20) + "-->", strings.Repeat(" ", 3<<20)} {
		x := newHostile(t, func(q map[string][]string) (string, string) {
			if q["verb"][0] == "Identify" {
				return "", fmt.Sprintf(identifyBody, "persistent")
			}
			return "", "<ListRecords>" + filler + hrec("oai:x:a", "2024-01-01T00:00:00Z", `<r xmlns="urn:r"/>`) + "</ListRecords>"
		})
		x.h.policy.Retries = -1
		if _, err := x.harvest(); err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("%.10q…: %v", filler, err)
		}
	}
}
