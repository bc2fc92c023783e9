package oaisource

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/internal/testing/oaitest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/oai"
	"github.com/resourcesync-go/resourcesync/oai/harvest"
)

// oaiFromShifted forwards to the repository at target with from moved a
// month forward: the bug of a real PHP provider.
func oaiFromShifted(t *testing.T, target string, g oai.Granularity) string {
	c, _ := testnet.Client(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if f := q.Get("from"); f != "" {
			if d, _, err := oai.ParseDatestamp(f); err == nil {
				q.Set("from", g.Format(d.AddDate(0, 1, 0)))
			}
		}
		resp, err := c.Get(target + "?" + q.Encode())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/oai"
}

// TestSectionFromMissed: the status section (on serve --oai-pmh's status
// page) says how many changes the full pass found that the repository's
// from had hidden from the incremental harvests, and keeps saying it
// after them.
func TestSectionFromMissed(t *testing.T) {
	repo := oaitest.New(t, oaitest.Options{Granularity: oai.Day, PageSize: 4})
	repo.Generate(10)
	c, _ := testnet.Client(t)
	root := t.TempDir()
	o, err := New(Config{Harvest: harvest.Config{Endpoint: oaiFromShifted(t, repo.URL, oai.Day), Client: c,
		Dir: filepath.Join(root, "records"), State: filepath.Join(root, "state"), FullEvery: 24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	fact := func(figure string) string {
		for _, f := range o.Section().Facts {
			if f.Figure == figure {
				return f.Value
			}
		}
		return ""
	}
	ctx := t.Context()
	if _, err := o.Harvest(ctx, nil); err != nil {
		t.Fatal(err)
	}
	repo.Advance(time.Hour)
	repo.Touch(oaitest.GenID(1))
	repo.Touch(oaitest.GenID(4))
	repo.Touch(oaitest.GenID(8))
	if st, err := o.Harvest(ctx, nil); err != nil || st.Written != 0 {
		t.Fatalf("incremental harvest through the bug: %+v, %v", st, err)
	}
	repo.Advance(24 * time.Hour)
	if st, err := o.Harvest(ctx, nil); err != nil || st.Missed != 3 || st.Written != 3 {
		t.Fatalf("harvest with the full pass: %+v, %v", st, err)
	}
	repo.Advance(time.Hour)
	if _, err := o.Harvest(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := fact("oai-from-missed"); got != "3" {
		t.Errorf("oai-from-missed = %q, want 3", got)
	}
	if got := fact("oai-full"); !strings.Contains(got, "the repository's from missed 3 changes") {
		t.Errorf("oai-full = %q", got)
	}
}

// TestCleanError: what the status page and the log show of a harvest
// error keeps no user information or secret, also in the request URLs of
// net/http's errors ("user:***@").
func TestCleanError(t *testing.T) {
	ep := "https://harvesterUser:pw1234@repo.example/oai?apikey=k3y"
	o := &Repository{endpoint: ep, shown: redact.String(publicURL(ep))}
	got := o.Clean(`oai-pmh harvest ` + ep + `: Identify: Get "https://harvesterUser:***@repo.example/oai?apikey=k3y&verb=Identify": dial tcp: refused`)
	for _, bad := range []string{"harvesterUser", "pw1234", "k3y", "***"} {
		if strings.Contains(got, bad) {
			t.Errorf("clean left %q: %s", bad, got)
		}
	}
	if !strings.Contains(got, "https://repo.example/oai?apikey=") || !strings.Contains(got, "dial tcp: refused") {
		t.Errorf("clean lost the error: %s", got)
	}
}
