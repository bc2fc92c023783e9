package harvest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/oaitest"
)

var tokenRE = regexp.MustCompile(`(?s)<resumptionToken[^>]*>.*?</resumptionToken>|<resumptionToken[^>]*/>`)

const noRecordsMatch = `<?xml version="1.0" encoding="UTF-8"?><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2026-11-29T00:00:00Z</responseDate><request verb="ListRecords">x</request><error code="noRecordsMatch">no records</error></OAI-PMH>`

// TestFullPassTruncatedListing: a repository that reports its deletions
// (deletedRecord=persistent) ends one full ListRecords after its first
// page: the resumptionToken lost (a proxy, a rebuilding index), or the
// token's page answered noRecordsMatch (taken for the list's end). The
// full pass, run now for every repository, takes that one record for the
// whole collection and removes the other 19 files.
func TestFullPassTruncatedListing(t *testing.T) {
	for _, mode := range []string{"token lost", "noRecordsMatch for a token"} {
		t.Run(mode, func(t *testing.T) { fullPassTruncated(t, mode) })
	}
}

func fullPassTruncated(t *testing.T, mode string) {
	var truncate atomic.Bool
	r := newRig(t, oaitest.Options{PageSize: 1}, func(c *Config) {
		target := c.Endpoint
		c.FullEvery = 24 * time.Hour
		p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			q := req.URL.Query()
			full := q.Get("verb") == "ListRecords" && !q.Has("from")
			if truncate.Load() && mode != "token lost" && q.Get("verb") == "ListRecords" && q.Has("resumptionToken") {
				w.Header().Set("Content-Type", "text/xml")
				io.WriteString(w, noRecordsMatch)
				return
			}
			resp, err := http.Get(target + "?" + req.URL.RawQuery)
			if err != nil {
				http.Error(w, err.Error(), 502)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if truncate.Load() && mode == "token lost" && full && !q.Has("resumptionToken") {
				b = tokenRE.ReplaceAll(b, nil)
			}
			w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
			w.WriteHeader(resp.StatusCode)
			w.Write(b)
		}))
		t.Cleanup(p.Close)
		c.Endpoint = p.URL
	})
	r.s.Generate(20)
	if st := r.harvest(); st.Written != 20 {
		t.Fatalf("first harvest: %+v", st)
	}
	r.s.Advance(25 * time.Hour)
	truncate.Store(true)
	st := r.harvest()
	if n := len(r.files()); n != 20 || st.Deleted != 0 {
		t.Errorf("a full pass whose listing ended after 1 record: %+v, %d of 20 record files left (the repository deleted none)", st, n)
	}
}
