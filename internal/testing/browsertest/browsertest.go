package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// InstallCommand installs the browser the tests use.
const InstallCommand = "apt-get install chromium"

// Path returns the Chromium executable, or "" when there is none.
func Path() string {
	if p := os.Getenv("BROWSERTEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Skip skips t when there is no Chromium (it fails under CI=true, where
// scripts/test.sh installs it), and in -short mode: a browser test starts
// a browser, several seconds on two cores, and the race-detector pass of
// the checks runs with -short.
func Skip(t testing.TB) {
	t.Helper()
	if Path() == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("Chromium not installed (scripts/test.sh installs it): %s", InstallCommand)
		}
		t.Skipf("Chromium not installed: %s", InstallCommand)
	}
	if testing.Short() {
		t.Skip("browser test: not in -short mode (the plain pass of the checks runs it)")
	}
}

// Browser is one headless Chromium with one tab.
type Browser struct {
	ctx context.Context

	mu       sync.Mutex
	requests []string // every URL the pages asked for, in order
	refused  []string // those not sent: not on loopback
}

// New starts Chromium (skipping t as Skip does when it cannot) with a
// desktop-sized window; it is stopped when t ends.
func New(t testing.TB) *Browser {
	t.Helper()
	Skip(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Path()),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // root in CI containers
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &Browser{ctx: ctx}
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Run starts the browser: no deadline on it (a deadline
	// would stop the browser when it passes).
	paused := make(chan *fetch.EventRequestPaused, 1024)
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- e // fast: answered by the goroutine below
		}
	}); err != nil {
		t.Fatalf("starting Chromium (%s): %v", Path(), err)
	}
	go func() {
		for {
			var e *fetch.EventRequestPaused
			select {
			case <-ctx.Done():
				return
			case e = <-paused:
			}
			allowed := local(e.Request.URL)
			b.mu.Lock()
			b.requests = append(b.requests, e.Request.URL)
			if !allowed {
				b.refused = append(b.refused, e.Request.URL)
			}
			b.mu.Unlock()
			if allowed {
				_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
			} else {
				_, _ = chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: e.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
			}
		}
	}()
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{}); err != nil {
		t.Fatalf("starting Chromium (%s): %v", Path(), err)
	}
	return b
}

// local reports whether a URL may be fetched: only loopback, local files
// (a report written to disk) and the in-document schemes.
func local(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "data", "about", "blob", "file":
		return true
	case "http", "https", "ws", "wss":
		h := u.Hostname()
		return h == "127.0.0.1" || h == "localhost" || h == "::1"
	}
	return false
}

// Context is the tab's context, for chromedp.Run and chromedp.Do (derive
// a deadline from it with context.WithTimeout).
func (b *Browser) Context() context.Context { return b.ctx }

// Do runs steps in the tab, failing t on an error or after 60 s.
func (b *Browser) Do(t testing.TB, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// Run runs one action that returns a value, failing t as Do does.
func Run[T any](t testing.TB, b *Browser, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}

// Navigate loads url and waits for the page's load event.
func (b *Browser) Navigate(t testing.TB, url string) {
	t.Helper()
	b.Do(t, chromedp.Navigate(url))
}

// Click clicks the first element matching the CSS selector and waits for
// the page it leads to (the load event); use it on links and on buttons
// that submit a form.
func (b *Browser) Click(t testing.TB, css string) {
	t.Helper()
	b.Do(t, chromedp.WaitVisible(chromedp.CSS(css)))
	if _, err := chromedp.Run(b.timeout(), chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(css)))); err != nil {
		t.Fatalf("browser: clicking %s: %v", css, err)
	}
}

// Key focuses the element matching css and sends keys (e.g. "\r" for
// Enter, kb.Tab): keyboard use of a view.
func (b *Browser) Key(t testing.TB, css, keys string) {
	t.Helper()
	b.Do(t, chromedp.Focus(chromedp.CSS(css)), chromedp.KeyEvent(keys))
}

func (b *Browser) timeout() context.Context {
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	go func() { <-ctx.Done(); cancel() }()
	return ctx
}

// Location returns the URL of the page shown.
func (b *Browser) Location(t testing.TB) string {
	t.Helper()
	return Run(t, b, chromedp.Location())
}

// Text returns the visible text of the first element matching css.
func (b *Browser) Text(t testing.TB, css string) string {
	t.Helper()
	return Run(t, b, chromedp.Text(chromedp.CSS(css)))
}

// Texts returns the text of every element matching css, in document
// order (none: an empty slice).
func (b *Browser) Texts(t testing.TB, css string) []string {
	t.Helper()
	return Run(t, b, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(`+jsString(css)+`), e => e.textContent.trim())`))
}

// Attrs returns attribute attr of every element matching css (for links:
// "href" gives the resolved URL, as the DOM property does).
func (b *Browser) Attrs(t testing.TB, css, attr string) []string {
	t.Helper()
	return Run(t, b, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(`+jsString(css)+`), e => String(e[`+jsString(attr)+`] ?? e.getAttribute(`+jsString(attr)+`) ?? ""))`))
}

// Eval evaluates a JavaScript expression in the page (the tests' script:
// the views themselves have none).
func Eval[T any](t testing.TB, b *Browser, expr string) T {
	t.Helper()
	return Run(t, b, chromedp.Evaluate[T](expr))
}

func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// Requests returns the URLs the pages have asked for so far.
func (b *Browser) Requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests...)
}

// AssertSameOrigin fails t when a request the pages made (since the
// browser started) went to another origin than origin
// ("http://127.0.0.1:PORT"): a view must load nothing from elsewhere.
func (b *Browser) AssertSameOrigin(t testing.TB, origin string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.requests) == 0 {
		t.Fatal("the browser made no request: nothing was checked")
	}
	for _, r := range b.requests {
		if strings.HasPrefix(r, "data:") || strings.HasPrefix(r, "about:") {
			continue
		}
		u, err := url.Parse(r)
		if err != nil || u.Scheme+"://"+u.Host != origin {
			t.Errorf("a page requested %s, outside %s", r, origin)
		}
	}
	for _, r := range b.refused {
		t.Errorf("request refused (not loopback): %s", r)
	}
}

// Phone emulates a phone's viewport (390×844, touch, scale 3) until
// Desktop.
func (b *Browser) Phone(t testing.TB) {
	t.Helper()
	b.Do(t, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile, chromedp.EmulateTouch))
}

// Desktop restores a desktop viewport (1280×900).
func (b *Browser) Desktop(t testing.TB) {
	t.Helper()
	b.Do(t, chromedp.EmulateViewport(1280, 900))
}

// Screenshot takes a picture of the whole page, checks that it shows
// something (not one flat colour) and saves it as NAME.png in
// $BROWSERTEST_SCREENSHOTS when that is set. It returns the PNG.
func (b *Browser) Screenshot(t testing.TB, name string) []byte {
	t.Helper()
	buf := Run(t, b, chromedp.FullScreenshot(100))
	if err := checkPicture(buf); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if dir := os.Getenv("BROWSERTEST_SCREENSHOTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return buf
}

// checkPicture refuses a blank or undecodable PNG.
func checkPicture(buf []byte) error {
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		return fmt.Errorf("not a PNG: %w", err)
	}
	colours := map[[4]uint32]bool{}
	bnd := img.Bounds()
	step := max(1, bnd.Dx()/200)
	for y := bnd.Min.Y; y < bnd.Max.Y; y += step {
		for x := bnd.Min.X; x < bnd.Max.X; x += step {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
			if len(colours) > 1 {
				return nil
			}
		}
	}
	return fmt.Errorf("blank picture (%d colours in %v)", len(colours), bnd)
}
