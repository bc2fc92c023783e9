package aggstatus

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/resourcesync-go/resourcesync/aggregate"
	"github.com/resourcesync-go/resourcesync/internal/testing/browsertest"
)

// crowded is an aggregator with many Sources, long identifiers and URLs,
// error chains of many lines and long unbroken words, and more runs going
// on than worker slots in use (runs set off by notifications take none).
func crowded() aggregate.Snapshot {
	s := fixture()
	s.Busy = 0
	chain := strings.Join([]string{
		"sync https://very-long-host-name.repository.example.org/.well-known/resourcesync",
		"discovery: GET https://very-long-host-name.repository.example.org/rs/capabilitylist.xml?session=0123456789abcdef0123456789abcdef",
		"resource list: part 17 of 40: " + strings.Repeat("x", 300),
		"read tcp 127.0.0.1:54321->10.0.0.1:443: read: connection reset by peer",
		"after 5 attempts over 2m30s (retry budget spent)",
		"line 6", "line 7", "line 8", "line 9", "line 10",
	}, ": \n")
	for i := range 40 {
		st := aggregate.SourceStatus{
			ID:   fmt.Sprintf("institutions/faculty-of-humanities-and-social-sciences/collection-%02d", i),
			URL:  fmt.Sprintf("https://repository-%02d.some-long-university-name.example.edu/oai-pmh/resourcesync/.well-known/resourcesync?set=%s", i, strings.Repeat("z", 60)),
			Dest: fmt.Sprintf("/srv/mirrors/institutions/faculty-of-humanities-and-social-sciences/collection-%02d", i),
			Kind: "resourcesync", State: aggregate.StateBackoff, Failures: i%4 + 1, Reason: aggregate.ReasonUnreachable,
			LastError: chain, LastSuccess: now.Add(-time.Duration(i) * 37 * time.Hour), Next: now.Add(time.Duration(i) * time.Minute),
			Lag: time.Duration(i) * 1000 * time.Hour, LagKnown: true, Runs: 123456, Succeeded: 123000,
			Fetched: 9876543, Deleted: 123456, Failed: 7654, Bytes: 5 << 40, Node: "node-with-a-rather-long-name-17", Follow: true,
		}
		if i < 3 {
			st.State = aggregate.StateRunning
		}
		s.Sources = append(s.Sources, st)
	}
	return s
}

// TestBrowserFits: the aggregator's page in Chromium at 1280 and 800 px
// wide: the page does not scroll sideways, the table fits its box (no
// column cut off), no cell's content overflows it, every time is one line
// and relative with the absolute time on hover, an error is one line whose
// chain opens on click, and the running figure agrees with the workers'.
// The screenshots are saved as test artifacts ($BROWSERTEST_SCREENSHOTS).
func TestBrowserFits(t *testing.T) {
	b := browsertest.New(t)
	srv := server(t, crowded, nil)
	for _, width := range []int64{1280, 800} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			b.Do(t, chromedp.EmulateViewport(width, 900))
			b.Navigate(t, srv.URL+"/")
			b.Screenshot(t, fmt.Sprintf("aggregate-status-%d", width))
			if sw, iw := browsertest.Eval[int](t, b, "document.documentElement.scrollWidth"), browsertest.Eval[int](t, b, "window.innerWidth"); sw > iw {
				t.Errorf("the page is %d px wide in a %d px window: it scrolls sideways", sw, iw)
			}
			if over := browsertest.Eval[[]string](t, b, `(() => {
				const t = document.querySelector("#sources-table");
				const out = [];
				if (t.scrollWidth > t.parentElement.clientWidth + 1) out.push("table " + t.scrollWidth + " > box " + t.parentElement.clientWidth);
				for (const c of document.querySelectorAll("#sources-table th, #sources-table td, .card")) {
					if (c.scrollWidth > c.clientWidth + 1) out.push((c.className || c.tagName) + ": " + c.scrollWidth + " > " + c.clientWidth + ": " + c.textContent.slice(0, 60));
				}
				return out.slice(0, 10);
			})()`); len(over) > 0 {
				t.Errorf("overflowing: %q", over)
			}
			if bad := browsertest.Eval[[]string](t, b, `(() => {
				const out = [];
				for (const e of document.querySelectorAll("#sources-table time")) {
					if (!e.title || !e.getAttribute("datetime")) out.push("no absolute time: " + e.outerHTML);
					if (e.getClientRects().length != 1 || e.getBoundingClientRect().height > 1.8 * parseFloat(getComputedStyle(e).lineHeight)) out.push("more than a line: " + e.textContent);
					if (!/ago$|^in |^now$/.test(e.textContent.trim())) out.push("not relative: " + e.textContent);
				}
				return out.slice(0, 10);
			})()`); len(bad) > 0 {
				t.Errorf("times: %q", bad)
			}
			if bad := browsertest.Eval[[]string](t, b, `(() => {
				const out = [];
				for (const c of document.querySelectorAll("#sources-table td.error")) {
					if (!c.textContent.trim()) continue;
					const s = c.querySelector("details > summary");
					if (!s) { out.push("no <details>: " + c.textContent.slice(0, 60)); continue; }
					if (s.getBoundingClientRect().height > 1.8 * parseFloat(getComputedStyle(s).lineHeight)) out.push("summary on more than a line: " + s.textContent.slice(0, 60));
					if (c.querySelector("details").open) out.push("open before a click");
				}
				return out.slice(0, 10);
			})()`); len(bad) > 0 {
				t.Errorf("errors: %q", bad)
			}
			// A click opens the chain, whole.
			b.Do(t, chromedp.Click(chromedp.CSS("#sources-table tbody tr:first-child td.error summary"))) // no page load: not b.Click
			if open := browsertest.Eval[bool](t, b, `document.querySelector("#sources-table tbody tr:first-child td.error details").open`); !open {
				t.Error("a click does not open the error's chain")
			}
			if txt := b.Text(t, "#sources-table tbody tr:first-child td.error details"); !strings.Contains(txt, "after 5 attempts over 2m30s") || !strings.Contains(txt, "line 10") {
				t.Errorf("the chain shown on click lacks its lines: %.200q", txt)
			}
			running, busy := b.Text(t, "#n-running"), b.Text(t, "#n-busy")
			if !strings.HasPrefix(running, "4") || !strings.Contains(b.Text(t, "#summary"), "0 in worker slots, 4 set off by notifications") {
				t.Errorf("Running %q beside Workers busy %q: not explained (%q)", running, busy, b.Text(t, "#summary"))
			}
		})
	}
}
