package push

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/graphstoretest"
)

// TestReceiverRefusesWebPages: what a web page in a local browser can
// send to the receiver without a preflight (a CORS simple request: a form,
// text/plain, no body at all, with its Origin and Sec-Fetch-Site) changes
// nothing, and a preflight is never allowed. On the receiver before, the
// text/plain write and the empty-body delete were applied.
func TestReceiverRefusesWebPages(t *testing.T) {
	rv, s, base := newReceiver(t)
	hc, _ := testnet.Client(t)
	const a = "http://x/a"
	one := "<" + a + "> <http://x/p> \"kept\" .\n"
	q := url.Values{"resource": {a}, "graph": {graphIRI}}.Encode()
	if code, msg := post(t, hc, base, q, "application/n-triples", nil, one); code != 200 {
		t.Fatalf("genuine push: %d %s", code, msg)
	}
	want := graphstoretest.NT(one)
	evil := "<" + a + "> <http://x/p> \"planted\" .\n"
	page := map[string]string{"Origin": "http://127.0.0.1:1234"}
	for _, tc := range []struct {
		name  string
		ctype string
		hdr   map[string]string
		body  string
		code  int
		want  string
	}{
		{"text/plain", "text/plain;charset=UTF-8", nil, evil, 415, "CORS simple request"},
		{"text/plain from a page", "text/plain", page, evil, 403, "another origin"},
		{"form", "application/x-www-form-urlencoded", nil, "a=b", 415, "not an RDF format"},
		{"multipart form", "multipart/form-data; boundary=x", nil, "--x--", 415, "not an RDF format"},
		{"empty body without a type (a delete)", "", nil, "", 415, "no Content-Type"},
		{"empty form (a delete)", "application/x-www-form-urlencoded", nil, "", 415, "not an RDF format"},
		{"N-Triples from another origin", "application/n-triples", page, evil, 403, "another origin"},
		{"delete from another origin", "application/n-triples", page, "", 403, "another origin"},
		{"Origin null (a sandboxed page)", "application/n-triples", map[string]string{"Origin": "null"}, evil, 403, "another origin"},
		{"same-site page (another port)", "application/n-triples", map[string]string{"Sec-Fetch-Site": "same-site"}, evil, 403, "another origin"},
		{"cross-site page", "application/n-triples", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, "", 403, "another origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := post(t, hc, base, q, tc.ctype, tc.hdr, tc.body)
			if code != tc.code || !strings.Contains(msg, tc.want) {
				t.Errorf("%d %q, want %d containing %q", code, msg, tc.code, tc.want)
			}
			if got := triples(t, s, graphIRI); !rdf.Isomorphic(got, want) {
				t.Fatalf("the store changed: %v", got)
			}
		})
	}
	// A preflight is never allowed.
	req, _ := http.NewRequest(http.MethodOptions, base+"/?"+q, nil)
	req.Header.Set("Origin", "http://127.0.0.1:1234")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 || resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Methods") != "" {
		t.Errorf("preflight answered %d %v", resp.StatusCode, resp.Header)
	}
	// Same origin (a browser tool on the receiver's own page) and a
	// sender (no Origin) are fine; text/plain where allowed.
	self := map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"}
	if code, msg := post(t, hc, base, q, "application/n-triples", self, one); code != 200 {
		t.Errorf("same-origin push: %d %s", code, msg)
	}
	rv.AllowTextPlain = true
	if code, msg := post(t, hc, base, q, "text/plain", nil, one); code != 200 {
		t.Errorf("text/plain allowed: %d %s", code, msg)
	}
	st := rv.Stats()
	if st.RefusedCrossOrigin != 6 || st.RefusedMediaType != 5 {
		t.Errorf("counters %+v, want 6 cross-origin and 5 media type refusals", st)
	}
	if code, msg := get(t, hc, base+"/status"); code != 200 || !strings.Contains(msg, "refused cross-origin 6\n") {
		t.Errorf("status: %d %s", code, msg)
	}
}

func get(t *testing.T, hc *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReceiverFutureVersions: a forged SDShare-Updated far in the future
// or a SDShare-Sequence near 2^64 is refused and not recorded, so the
// genuine push that follows is applied (before, it was acknowledged as
// "stale" and dropped, for good).
func TestReceiverFutureVersions(t *testing.T) {
	rv, s, base := newReceiver(t)
	rv.TrustFirstSequence = true // a sender long under way (TestReceiverFirstSequence: without it)
	hc, _ := testnet.Client(t)
	const a, b, c = "http://x/a", "http://x/b", "http://x/c"
	one := func(r, v string) string { return fmt.Sprintf("<%s> <http://x/p> %q .\n", r, v) }
	q := func(r string) string { return url.Values{"resource": {r}, "graph": {graphIRI}}.Encode() }
	nt := "application/n-triples"
	now := time.Now().UTC()
	steps := []struct {
		name     string
		resource string
		hdr      map[string]string
		value    string
		code     int
		want     string
	}{
		{"forged instant", a, map[string]string{HeaderUpdated: "2262-04-01T00:00:00Z"}, "forged", 400, "SDShare-Updated 2262-04-01T00:00:00Z is more than 5m0s after"},
		{"genuine instant", a, map[string]string{HeaderUpdated: now.Format(time.RFC3339Nano)}, "genuine", 200, "applied 1"},
		{"within the skew", a, map[string]string{HeaderUpdated: now.Add(time.Minute).Format(time.RFC3339)}, "skewed", 200, "applied 1"},
		{"forged first sequence", b, map[string]string{HeaderSequence: "18446744073709551615"}, "forged", 400, "above 9223372036854775807"},
		{"genuine first sequence, long under way", b, map[string]string{HeaderSequence: "5000000"}, "genuine", 200, "applied 1"},
		{"forged sequence past the gap", c, map[string]string{HeaderSequence: "7000001"}, "forged", 400, "more than 1000000 past the highest this graph admitted (5000000)"},
		{"genuine next sequence", c, map[string]string{HeaderSequence: "5000001"}, "genuine", 200, "applied 1"},
		{"within the gap", c, map[string]string{HeaderSequence: "6000001"}, "ahead", 200, "applied 1"},
		{"genuine b again", b, map[string]string{HeaderSequence: "5000002"}, "genuine 2", 200, "applied 1"},
	}
	for _, st := range steps {
		code, msg := post(t, hc, base, q(st.resource), nt, st.hdr, one(st.resource, st.value))
		if code != st.code || !strings.Contains(msg, st.want) {
			t.Errorf("%s: %d %q, want %d containing %q", st.name, code, msg, st.code, st.want)
		}
	}
	want := graphstoretest.NT(one(a, "skewed") + one(b, "genuine 2") + one(c, "ahead"))
	if got := triples(t, s, graphIRI); !rdf.Isomorphic(got, want) {
		t.Errorf("graph %v, want %v", got, want)
	}
	if n := rv.Stats().RefusedFutureVersion; n != 3 {
		t.Errorf("%d refusals counted, want 3", n)
	}
	// The gap is the receiver's to set.
	rv.MaxSequenceGap = 10
	if code, msg := post(t, hc, base, q(c), nt, map[string]string{HeaderSequence: "6000012"}, one(c, "x")); code != 400 || !strings.Contains(msg, "more than 10 past") {
		t.Errorf("gap 10: %d %s", code, msg)
	}
}

// TestReceiverFirstSequence: without TrustFirstSequence a graph's first
// sequence number is held to MaxSequenceGap from 0: 2^63-1 is refused
// and not recorded, and the genuine sender's first (1) and later pushes
// are applied; past the first, the gap counts from the highest admitted.
func TestReceiverFirstSequence(t *testing.T) {
	rv, s, base := newReceiver(t)
	rv.MaxSequenceGap = 100
	hc, _ := testnet.Client(t)
	const a = "http://x/a"
	one := func(v string) string { return fmt.Sprintf("<%s> <http://x/p> %q .\n", a, v) }
	q := url.Values{"resource": {a}, "graph": {graphIRI}}.Encode()
	for _, st := range []struct {
		seq, value string
		code       int
		want       string
	}{
		{"9223372036854775807", "forged", 400, "the first of its graph and more than 100"},
		{"101", "forged", 400, "the first of its graph and more than 100"},
		{"1", "genuine", 200, "applied 1"},
		{"102", "forged", 400, "more than 100 past the highest this graph admitted (1)"},
		{"101", "genuine 2", 200, "applied 1"},
	} {
		code, msg := post(t, hc, base, q, "application/n-triples", map[string]string{HeaderSequence: st.seq}, one(st.value))
		if code != st.code || !strings.Contains(msg, st.want) {
			t.Errorf("sequence %s: %d %q, want %d containing %q", st.seq, code, msg, st.code, st.want)
		}
	}
	if got, want := triples(t, s, graphIRI), graphstoretest.NT(one("genuine 2")); !rdf.Isomorphic(got, want) {
		t.Errorf("graph %v, want %v", got, want)
	}
}

// TestReceiverMemoryBudget: while a push holds the memory budget (its
// body still arriving), another gets 503 with Retry-After without its
// body being read, and succeeds once the first is done. Before, every
// push was read and parsed at once, whatever the others held.
func TestReceiverMemoryBudget(t *testing.T) {
	rv, s, base := newReceiver(t)
	rv.MemoryBudget = 3 << 20 // one push of 40 KiB (× ParseFactor) at a time
	hc, _ := testnet.Client(t)
	const a, b = "http://x/a", "http://x/b"
	body := func(r string) string {
		var sb strings.Builder
		for i := 0; sb.Len() < 40<<10; i++ {
			fmt.Fprintf(&sb, "<%s> <http://x/p> \"%d\" .\n", r, i)
		}
		return sb.String()
	}
	bodyA := body(a)
	// The first push: headers and half of its body, the rest held back.
	u, _ := url.Parse(base)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /?%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/n-triples\r\nContent-Length: %d\r\n\r\n%s",
		url.Values{"resource": {a}, "graph": {graphIRI}}.Encode(), u.Host, len(bodyA), bodyA[:len(bodyA)/2])
	q := url.Values{"resource": {b}, "graph": {graphIRI}}.Encode()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) { // until the first has reserved
		rv.memMu.Lock()
		used := rv.memUsed
		rv.memMu.Unlock()
		if used > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first push reserved nothing")
		}
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/?"+q, strings.NewReader(body(b)))
	req.Header.Set("Content-Type", "application/n-triples")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	code, msg, retryAfter := resp.StatusCode, string(m), resp.Header.Get("Retry-After")
	if code != http.StatusServiceUnavailable || retryAfter != strconv.Itoa(int(RetryAfter/time.Second)) || !strings.Contains(msg, "memory budget") {
		t.Fatalf("second push: %d Retry-After %q %s", code, retryAfter, msg)
	}
	// The first completes.
	io.WriteString(conn, bodyA[len(bodyA)/2:])
	resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("first push: %d", resp.StatusCode)
	}
	if c, m := post(t, hc, base, q, "application/n-triples", nil, body(b)); c != 200 {
		t.Fatalf("retried push: %d %s", c, m)
	}
	if n := len(triples(t, s, graphIRI)); n != 2*strings.Count(bodyA, "\n") {
		t.Errorf("%d triples stored", n)
	}
	if st := rv.Stats(); st.RefusedBusy != 1 || st.Applied != 2 {
		t.Errorf("counters %+v", st)
	}
}

// TestSenderHonoursRetryAfter: a receiver's 503 with Retry-After makes the
// sender wait that long (not its 1 ms backoff) before it sends again.
func TestSenderHonoursRetryAfter(t *testing.T) {
	var calls atomic.Int32
	var first, second atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			first.Store(time.Now().UnixNano())
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			second.CompareAndSwap(0, time.Now().UnixNano())
			io.WriteString(w, "applied 1")
		}
	}))
	defer srv.Close()
	hc, _ := testnet.Client(t)
	snd := &Sender{URL: srv.URL + "/", Client: hc, Items: sliceItems([]Item{{Seq: 1, Resource: "http://x/a", Body: []byte("<http://x/a> <http://x/p> \"1\" .\n")}}),
		Cursor: &memCursor{}, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go snd.Run(ctx)
	for snd.Stats().Delivered == 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if snd.Stats().Delivered == 0 {
		t.Fatal("not delivered")
	}
	if wait := time.Duration(second.Load() - first.Load()); wait < time.Second {
		t.Errorf("the sender sent again after %s, before the Retry-After of 1s", wait)
	}
}

// TestReceiverDenseTurtle: the memory a push takes grows with its
// statements, not its bytes, and Turtle holds one in 2 bytes ("1,"), where
// ParseFactor assumes N-Triples' 15 or more: a 100 KB body of 50,000
// statements needs about 50 MB, past a budget its Content-Length fits in.
// Before, it was parsed whole and applied (a 32 MB body took about 5 GB
// against a 1 GiB budget); now it gets 413 once its statements outgrow the
// budget, nothing applied, while a dense body that fits is applied.
func TestReceiverDenseTurtle(t *testing.T) {
	rv, s, base := newReceiver(t)
	rv.MaxBytes = 1 << 20
	rv.MemoryBudget = 8 << 20 // 100 KB × ParseFactor fits
	hc, _ := testnet.Client(t)
	const a = "http://x/a"
	dense := func(n int) string {
		return "<" + a + "> <http://x/p> " + strings.Repeat("1,", n) + "2 .\n"
	}
	q := url.Values{"resource": {a}, "graph": {graphIRI}}.Encode()
	code, msg := post(t, hc, base, q, "text/turtle", nil, dense(50_000))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "memory budget") {
		t.Fatalf("50,000 statements in 100 KB: %d %s", code, msg)
	}
	if n := len(triples(t, s, graphIRI)); n != 0 {
		t.Fatalf("%d triples stored", n)
	}
	rv.memMu.Lock()
	used := rv.memUsed
	rv.memMu.Unlock()
	if used != 0 {
		t.Errorf("%d bytes of the budget still held", used)
	}
	// 2,000 statements (about 2 MB) fit: applied.
	if code, msg := post(t, hc, base, q, "text/turtle", nil, "<"+a+"> <http://x/p> "+intList(2000)+" .\n"); code != 200 {
		t.Fatalf("2,000 statements: %d %s", code, msg)
	}
	if n := len(triples(t, s, graphIRI)); n != 2000 {
		t.Errorf("%d triples stored, want 2000", n)
	}
}

func intList(n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(i))
	}
	return sb.String()
}

// TestReceiverDNSRebinding: a page whose own host name comes to resolve to
// 127.0.0.1 (DNS rebinding) is same-origin with itself, so its browser
// sends Sec-Fetch-Site same-origin and an Origin equal to its Host: the
// cross-origin rule lets it through. A receiver for loopback senders only
// (LoopbackOnly, as sdshare receive on a loopback address without a
// token) refuses a Host that names no loopback address; before, the page's
// push was applied.
func TestReceiverDNSRebinding(t *testing.T) {
	rv, s, base := newReceiver(t)
	rv.LoopbackOnly = true
	hc, _ := testnet.Client(t)
	u, _ := url.Parse(base)
	_, port, _ := net.SplitHostPort(u.Host)
	const a = "http://x/a"
	q := url.Values{"resource": {a}, "graph": {graphIRI}}.Encode()
	push := func(host, origin, value string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/?"+q, strings.NewReader("<"+a+"> <http://x/p> \""+value+"\" .\n"))
		req.Host = host
		req.Header.Set("Content-Type", "application/n-triples")
		if origin != "" {
			req.Header.Set("Origin", origin)
			req.Header.Set("Sec-Fetch-Site", "same-origin")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1.evil.example:" + port, "localhost.evil.example:" + port, "0x7f.1:" + port} {
		if code, msg := push(host, "http://"+host, "planted"); code != http.StatusForbidden || !strings.Contains(msg, "loopback") {
			t.Errorf("Host %s: %d %s", host, code, msg)
		}
	}
	if n := len(triples(t, s, graphIRI)); n != 0 {
		t.Fatalf("%d triples planted", n)
	}
	for i, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST.:" + port, "[::1]:" + port, "127.0.0.2:" + port} {
		if code, msg := push(host, "", strconv.Itoa(i)); code != 200 {
			t.Errorf("Host %s: %d %s", host, code, msg)
		}
	}
	if st := rv.Stats(); st.RefusedCrossOrigin != 5 || st.Applied != 5 {
		t.Errorf("counters %+v", st)
	}
}
