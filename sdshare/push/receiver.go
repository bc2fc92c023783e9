package push

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/resourcesync-go/resourcesync/internal/httpserver"
	"hash/maphash"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/internal/boltdb"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// DefaultMaxBytes bounds a pushed body (one fragment or a batch).
const DefaultMaxBytes = 32 << 20

// DefaultMaxClockSkew bounds how far in the receiver's future an
// HeaderUpdated instant may lie (Receiver.MaxClockSkew).
const DefaultMaxClockSkew = 5 * time.Minute

// DefaultMaxSequenceGap bounds how far a HeaderSequence may lie beyond the
// highest one admitted in its graph (Receiver.MaxSequenceGap).
const DefaultMaxSequenceGap = 1_000_000

// MaxSequence is the largest HeaderSequence accepted at all: no sender
// counts that far, and a forged number near 2^64 would outrank every
// genuine one for good.
const MaxSequence = 1<<63 - 1

// DefaultMemoryBudget bounds the memory of the requests in progress
// (Receiver.MemoryBudget).
const DefaultMemoryBudget = 1 << 30

// ParseFactor is the receiver's memory per byte of body, measured: the
// peak RSS of sdshare receive with its bbolt store grew by 46 MB for one
// 1 MB push and by 314 MB for one 8 MB push of short statements (the
// worst case: most triples per byte; the body, its triples, their split
// into fragments, the store's transaction and the garbage collector's
// headroom). A request reserves its Content-Length (MaxBytes when the
// body is chunked) times this in the MemoryBudget.
const ParseFactor = 40

// RetryAfter is what a request that found the MemoryBudget spent is told
// to wait (503 with Retry-After, in seconds).
const RetryAfter = 2 * time.Second

// Errors of the receiver; match with errors.Is.
var (
	ErrBadRequest  = errors.New("sdshare push: bad request")
	ErrOrderLocked = errors.New("sdshare push: order file is in use by another process")
	// ErrCrossOrigin: a web page's request (Origin or Sec-Fetch-Site
	// says another origin), refused with 403.
	ErrCrossOrigin = errors.New("sdshare push: refused a request from a web page of another origin")
	// ErrMediaType: the Content-Type is not an RDF type the receiver
	// takes (415).
	ErrMediaType = errors.New("sdshare push: unsupported media type")
	// ErrFutureVersion: HeaderUpdated too far in the future, or
	// HeaderSequence too far ahead (400); never recorded.
	ErrFutureVersion = errors.New("sdshare push: version too far ahead")
	// ErrBusy: the MemoryBudget is spent (503 with Retry-After).
	ErrBusy = errors.New("sdshare push: receiver busy")
)

// Receiver is an http.Handler that applies pushed fragments to a Store
// (SD-PUSH-1..9). POST applies; GET …/ping answers "pong"; any other GET
// describes the endpoint.
type Receiver struct {
	Store graphstore.Store
	// DefaultGraph is the graph of requests without a graph parameter;
	// when empty such requests get 400.
	DefaultGraph string
	// MaxBytes bounds a request body (DefaultMaxBytes if ≤ 0): 413 beyond.
	MaxBytes int64
	// Order, if set, refuses fragments older than one already applied
	// (see the package documentation). Without it fragments are applied
	// in arrival order.
	Order *Order
	// Logf, if set, receives one line per failed request.
	Logf func(format string, args ...any)

	// AllowTextPlain accepts text/plain as N-Triples (its 2004-era type,
	// which old senders use). Off, such a push gets 415: text/plain is
	// also a type any web page may POST anywhere without asking (a CORS
	// "simple" request). Turn it on for old senders, or when every
	// request that reaches the receiver is authenticated (a page cannot
	// add credentials to a simple request).
	AllowTextPlain bool
	// MaxClockSkew bounds how far after the receiver's clock an
	// HeaderUpdated instant may lie (DefaultMaxClockSkew if ≤ 0); a later
	// one gets 400 and is not recorded: recorded, a forged instant in
	// 2262 would make every genuine push of the resource stale.
	MaxClockSkew time.Duration
	// MaxSequenceGap bounds how far a HeaderSequence may lie beyond the
	// highest one admitted in the same graph (DefaultMaxSequenceGap if 0);
	// beyond it, or above MaxSequence, the push gets 400 and is not
	// recorded. A graph's first sequence number is bounded the same way,
	// as if 0 had been admitted, unless TrustFirstSequence.
	MaxSequenceGap uint64
	// TrustFirstSequence takes a graph's first sequence number as it
	// comes (up to MaxSequence), so that a sender whose stream is long
	// under way starts at once. Set it only when every push is
	// authenticated: one unauthenticated push of 2^63-1 would otherwise
	// make every later genuine push of its resources stale, for good.
	TrustFirstSequence bool
	// MemoryBudget bounds the memory of the requests in progress
	// (DefaultMemoryBudget if ≤ 0): each reserves its Content-Length
	// (MaxBytes when chunked) times ParseFactor, at most the whole budget,
	// before reading its body, and gets 503 with Retry-After when the
	// budget cannot hold it. One request alone is always admitted. Its
	// statements, as they are parsed, take sdshare.TripleMemory each
	// beyond that reservation: 503 when the others hold it, 413 when
	// the whole budget cannot.
	MemoryBudget int64
	// LoopbackOnly refuses (403) a request whose Host names anything but
	// a loopback address or localhost: set it when the receiver listens
	// on loopback without credentials. A page whose host name comes to
	// resolve to 127.0.0.1 (DNS rebinding) is same-origin with itself,
	// so Origin and Sec-Fetch-Site let it through; its Host still names it.
	LoopbackOnly bool

	locks [64]sync.Mutex
	seed  maphash.Seed
	once  sync.Once
	cop   *http.CrossOriginProtection

	memMu   sync.Mutex
	memUsed int64

	applied, deleted, stale                                atomic.Int64
	refusedOrigin, refusedType, refusedFuture, refusedBusy atomic.Int64
}

// ReceiverStats are a Receiver's counters since it started.
type ReceiverStats struct {
	Applied, Deleted, Stale int64
	// Refusals: cross-origin requests (403), media types (415), versions
	// too far ahead (HeaderUpdated beyond the clock skew or
	// HeaderSequence beyond the gap: 400), memory budget spent (503).
	RefusedCrossOrigin, RefusedMediaType, RefusedFutureVersion, RefusedBusy int64
}

// Stats returns the receiver's counters.
func (rv *Receiver) Stats() ReceiverStats {
	return ReceiverStats{
		Applied: rv.applied.Load(), Deleted: rv.deleted.Load(), Stale: rv.stale.Load(),
		RefusedCrossOrigin: rv.refusedOrigin.Load(), RefusedMediaType: rv.refusedType.Load(),
		RefusedFutureVersion: rv.refusedFuture.Load(), RefusedBusy: rv.refusedBusy.Load(),
	}
}

// Result is what one POST did; the handler writes it as the body.
type Result struct {
	Applied, Deleted, Stale int
}

func (rv *Receiver) init() {
	rv.once.Do(func() {
		rv.seed = maphash.MakeSeed()
		rv.cop = http.NewCrossOriginProtection()
	})
}

func (rv *Receiver) lockFor(graph, resource string) *sync.Mutex {
	rv.init()
	h := maphash.String(rv.seed, graph+"\x00"+resource)
	return &rv.locks[h%uint64(len(rv.locks))]
}

func (rv *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rv.init()
	switch r.Method {
	case http.MethodPost:
	case http.MethodGet, http.MethodHead:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		switch {
		case strings.HasSuffix(r.URL.Path, "/ping"):
			io.WriteString(w, "pong\n")
		case strings.HasSuffix(r.URL.Path, "/status"):
			st := rv.Stats()
			fmt.Fprintf(w, "applied %d\ndeleted %d\nstale %d\nrefused cross-origin %d\nrefused media type %d\nrefused future version %d\nrefused busy %d\n",
				st.Applied, st.Deleted, st.Stale, st.RefusedCrossOrigin, st.RefusedMediaType, st.RefusedFutureVersion, st.RefusedBusy)
		default:
			io.WriteString(w, receiverDoc)
		}
		return
	default:
		// OPTIONS too: a CORS preflight is never answered with an
		// Access-Control-Allow-*, so a page's non-simple request is
		// never sent.
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "SDShare Push receiver: POST fragments here", http.StatusMethodNotAllowed)
		return
	}
	res, code, err := rv.receive(w, r)
	if err != nil {
		var n *atomic.Int64
		switch {
		case errors.Is(err, ErrCrossOrigin):
			n = &rv.refusedOrigin
		case errors.Is(err, ErrMediaType):
			n = &rv.refusedType
		case errors.Is(err, ErrFutureVersion):
			n = &rv.refusedFuture
		case errors.Is(err, ErrBusy):
			n = &rv.refusedBusy
		}
		msg := err.Error()
		if n != nil {
			msg += fmt.Sprintf(" (refusals of this kind since the receiver started: %d)", n.Add(1))
		}
		if rv.Logf != nil {
			rv.Logf("push %s: %d %s", r.URL.RawQuery, code, msg)
		}
		rv.refuse(w, r, code, msg)
		return
	}
	rv.applied.Add(int64(res.Applied))
	rv.deleted.Add(int64(res.Deleted))
	rv.stale.Add(int64(res.Stale))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "applied %d, deleted %d, stale %d\n", res.Applied, res.Deleted, res.Stale)
}

// refuse answers a push that is refused, often before its body was read
// (a shed push: 503), and then reads and discards what the sender still
// sends of it, up to MaxBytes. Many senders write the whole body before
// they read the answer: a connection closed with their body unread is
// reset by the kernel, their write fails with "connection reset by
// peer", and the answer (Retry-After above all) is never read. The
// discarding costs no memory, and a sender that stalls is cut off by the
// server's body timeouts (internal/httpserver).
func (rv *Receiver) refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	// Without full duplex net/http reads at most 256 KiB of an unread
	// body after the handler, then closes: the reset.
	// A body announced longer than MaxBytes is not read (413): reading
	// MaxBytes of it would not spare the sender the reset.
	max := rv.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	rc := http.NewResponseController(w)
	duplex := r.Body != nil && r.ContentLength <= max && rc.EnableFullDuplex() == nil
	http.Error(w, msg, code)
	if !duplex {
		return
	}
	rc.Flush() // the answer first: a sender that reads while it writes can stop
	io.Copy(io.Discard, io.LimitReader(r.Body, max+1))
}

const receiverDoc = `SDShare Push receiver.
POST ?resource=IRI[&resource=IRI...][&graph=IRI] with the fragment as the body
(Content-Type application/n-triples, text/turtle or application/rdf+xml, also
on an empty body, which means the resource was deleted; text/plain only where
the receiver allows it). Optional header SDShare-Updated: RFC 3339 instant of
the change; older fragments than one already applied are acknowledged and
ignored, instants beyond the receiver's clock skew refused. Requests from web
pages of other origins are refused. GET ping answers pong, GET status counts.
`

// checkMediaType refuses a push whose Content-Type is not an RDF type
// the receiver takes, an empty one (a deletion) included: a web page may
// POST text/plain, a form or no body at all anywhere without asking.
func (rv *Receiver) checkMediaType(ct string) (rdf.Format, error) {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	f, ok := rdf.FormatFor(mt)
	switch {
	case mt == "":
		return 0, fmt.Errorf("%w: no Content-Type: every push names its RDF type, an empty one (a deletion) too (application/n-triples)", ErrMediaType)
	case mt == "text/plain" && !rv.AllowTextPlain:
		return 0, fmt.Errorf("%w: Content-Type text/plain refused: it is N-Triples' old type, but also one any web page may send anywhere (a CORS simple request); send application/n-triples (an old sender: start the receiver with --allow-text-plain, or require a token)", ErrMediaType)
	case !ok:
		return 0, fmt.Errorf("%w: Content-Type %q is not an RDF format the receiver reads (application/n-triples, text/turtle, application/rdf+xml)", ErrMediaType, ct)
	}
	return f, nil
}

// reserve takes n bytes of the MemoryBudget (at most all of it); false
// when they are not free and other requests hold some.
func (rv *Receiver) reserve(n int64) (int64, bool) {
	budget := rv.MemoryBudget
	if budget <= 0 {
		budget = DefaultMemoryBudget
	}
	n = min(n, budget)
	rv.memMu.Lock()
	defer rv.memMu.Unlock()
	if rv.memUsed > 0 && rv.memUsed+n > budget {
		return 0, false
	}
	rv.memUsed += n
	return n, true
}

// reserveMore grows the *held of a request whose statements need n bytes,
// outgrowing its reservation, to n or twice *held (at most the budget):
// 413 when it holds the whole budget already, 503 (ErrBusy) when the
// others hold what it needs.
func (rv *Receiver) reserveMore(held *int64, n int64) (int, error) {
	budget := rv.MemoryBudget
	if budget <= 0 {
		budget = DefaultMemoryBudget
	}
	n = min(max(n-*held, *held), budget-*held)
	if n <= 0 {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("%w: the body's statements need more than the receiver's memory budget (%d bytes, about %d statements); send fewer at a time", ErrBadRequest, budget, budget/sdshare.TripleMemory)
	}
	rv.memMu.Lock()
	defer rv.memMu.Unlock()
	if rv.memUsed+n > budget {
		return http.StatusServiceUnavailable, fmt.Errorf("%w: the pushes in progress fill its memory budget; try again later", ErrBusy)
	}
	rv.memUsed += n
	*held += n
	return 0, nil
}

func (rv *Receiver) release(n int64) {
	rv.memMu.Lock()
	rv.memUsed -= n
	rv.memMu.Unlock()
}

func (rv *Receiver) receive(w http.ResponseWriter, r *http.Request) (Result, int, error) {
	if err := rv.cop.Check(r); err != nil {
		return Result{}, http.StatusForbidden, fmt.Errorf("%w (Origin %q, Sec-Fetch-Site %q): a sender is not a browser; a page a local browser opens must not change the store",
			ErrCrossOrigin, r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site"))
	}
	if rv.LoopbackOnly && !loopbackHost(r.Host) {
		return Result{}, http.StatusForbidden, fmt.Errorf("%w: Host %q names no loopback address, and this receiver takes pushes from this machine only: a page of that name resolved to it (DNS rebinding)? Senders name 127.0.0.1, [::1] or localhost",
			ErrCrossOrigin, r.Host)
	}
	f, err := rv.checkMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return Result{}, http.StatusUnsupportedMediaType, err
	}
	q := r.URL.Query()
	resources := q["resource"]
	if len(resources) == 0 {
		return Result{}, http.StatusBadRequest, fmt.Errorf("%w: no resource parameter (SD-PUSH-2)", ErrBadRequest)
	}
	for _, res := range resources {
		if !absIRI(res) {
			return Result{}, http.StatusBadRequest, fmt.Errorf("%w: resource %q is not an absolute IRI", ErrBadRequest, res)
		}
	}
	graph := q.Get("graph")
	if graph == "" {
		graph = rv.DefaultGraph
	}
	if graph == "" {
		return Result{}, http.StatusBadRequest, fmt.Errorf("%w: no graph parameter and no default graph", ErrBadRequest)
	}
	if !absIRI(graph) {
		return Result{}, http.StatusBadRequest, fmt.Errorf("%w: graph %q is not an absolute IRI", ErrBadRequest, graph)
	}
	ver, err := versionOf(r.Header)
	if err != nil {
		return Result{}, http.StatusBadRequest, err
	}
	if err := rv.checkVersion(graph, ver, time.Now()); err != nil {
		return Result{}, http.StatusBadRequest, err
	}
	max := rv.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if r.ContentLength > max {
		return Result{}, http.StatusRequestEntityTooLarge, fmt.Errorf("%w: body longer than %d bytes", ErrBadRequest, max)
	}
	size := max
	if r.ContentLength >= 0 {
		size = r.ContentLength
	}
	held, ok := rv.reserve(size*ParseFactor + 64<<10)
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(RetryAfter/time.Second)))
		return Result{}, http.StatusServiceUnavailable, fmt.Errorf("%w: the pushes in progress fill its memory budget; try again later", ErrBusy)
	}
	defer func() { rv.release(held) }()
	buf := bytes.NewBuffer(make([]byte, 0, min(size, max)+1))
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, max+1)); err != nil {
		return Result{}, http.StatusBadRequest, fmt.Errorf("%w: reading body: %w", ErrBadRequest, err)
	}
	body := buf.Bytes()
	if int64(len(body)) > max {
		return Result{}, http.StatusRequestEntityTooLarge, fmt.Errorf("%w: body longer than %d bytes", ErrBadRequest, max)
	}
	parts := map[string][]rdf.Triple{}
	if len(bytes.TrimSpace(body)) > 0 {
		var ts []rdf.Triple
		for t, err := range rdf.Parse(bytes.NewReader(body), f, "") {
			if err != nil {
				return Result{}, http.StatusBadRequest, fmt.Errorf("%w: body: %w", ErrBadRequest, err)
			}
			// The reservation assumed N-Triples' bytes per statement;
			// a denser body (Turtle's object lists) takes more as it
			// parses, or stops.
			if need := int64(len(ts)+1) * sdshare.TripleMemory; need > held {
				code, err := rv.reserveMore(&held, need) // doubles it at least
				if err != nil {
					if code == http.StatusServiceUnavailable {
						w.Header().Set("Retry-After", strconv.Itoa(int(RetryAfter/time.Second)))
					}
					return Result{}, code, err
				}
			}
			ts = append(ts, t)
		}
		if parts, err = Split(ts, resources); err != nil {
			return Result{}, http.StatusBadRequest, err
		}
	}
	var res Result
	for _, name := range uniq(resources) {
		st, err := rv.apply(r.Context(), graph, name, parts[name], ver)
		if err != nil {
			return res, http.StatusInternalServerError, fmt.Errorf("applying %s: %w (the receiver's copy of it cannot be trusted until it is sent again)", name, err)
		}
		switch {
		case st:
			res.Stale++
		case len(parts[name]) == 0:
			res.Deleted++
		default:
			res.Applied++
		}
	}
	return res, http.StatusOK, nil
}

// apply applies one fragment under its resource's lock; stale reports a
// fragment older than one already admitted (not applied).
func (rv *Receiver) apply(ctx context.Context, graph, resource string, ts []rdf.Triple, ver Version) (stale bool, err error) {
	mu := rv.lockFor(graph, resource)
	mu.Lock()
	defer mu.Unlock()
	if rv.Order != nil && !ver.IsZero() {
		ok, err := rv.Order.Admit(graph, resource, ver)
		if err != nil {
			return false, err
		}
		if !ok {
			return true, nil
		}
	}
	return false, rv.Store.ApplyFragment(ctx, graph, rdf.IRI(resource), ts)
}

// Split divides the triples of a (batched) body into the fragments of
// resources (SD-PUSH-8, SD-PUSH-9): sdshare.Split, the scoping rule the
// client applies too, its refusals wrapping ErrBadRequest.
func Split(ts []rdf.Triple, resources []string) (map[string][]rdf.Triple, error) {
	parts, err := sdshare.Split(ts, resources)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return parts, nil
}

func uniq(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// loopbackHost reports whether a Host header names this machine
// (httpserver.LoopbackHost), or is empty (an HTTP/1.0 sender; a browser
// always names it).
func loopbackHost(host string) bool {
	return host == "" || httpserver.LoopbackHost(host)
}

func absIRI(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.IsAbs()
}

// Version is the place of a pushed fragment in its resource's history:
// the instant of the change (HeaderUpdated) or the sender's sequence
// number (HeaderSequence). Zero means unknown.
type Version struct {
	Updated time.Time
	Seq     uint64
}

// IsZero reports whether v says nothing.
func (v Version) IsZero() bool { return v.Updated.IsZero() && v.Seq == 0 }

// checkVersion refuses a version too far ahead: an instant beyond now
// plus MaxClockSkew, a sequence number above MaxSequence or beyond
// MaxSequenceGap past the highest one the graph admitted (0 for a graph's
// first, unless TrustFirstSequence).
func (rv *Receiver) checkVersion(graph string, ver Version, now time.Time) error {
	if !ver.Updated.IsZero() {
		skew := rv.MaxClockSkew
		if skew <= 0 {
			skew = DefaultMaxClockSkew
		}
		if bound := now.Add(skew); ver.Updated.After(bound) {
			return fmt.Errorf("%w: %s %s is more than %s after the receiver's clock (%s); not recorded: check the sender's clock",
				ErrFutureVersion, HeaderUpdated, ver.Updated.Format(time.RFC3339Nano), skew, now.UTC().Format(time.RFC3339))
		}
		return nil
	}
	if ver.Seq == 0 {
		return nil
	}
	if ver.Seq > MaxSequence {
		return fmt.Errorf("%w: %s %d is above %d; not recorded", ErrFutureVersion, HeaderSequence, ver.Seq, uint64(MaxSequence))
	}
	if rv.Order == nil {
		return nil
	}
	gap := rv.MaxSequenceGap
	if gap == 0 {
		gap = DefaultMaxSequenceGap
	}
	high, ok, err := rv.Order.HighestSequence(graph)
	if err != nil {
		return err
	}
	if ok && ver.Seq > high && ver.Seq-high > gap {
		return fmt.Errorf("%w: %s %d is more than %d past the highest this graph admitted (%d); not recorded",
			ErrFutureVersion, HeaderSequence, ver.Seq, gap, high)
	}
	if !ok && !rv.TrustFirstSequence && ver.Seq > gap {
		return fmt.Errorf("%w: %s %d is the first of its graph and more than %d (--max-sequence-gap); not recorded: an unauthenticated first push must not outrank the genuine sender for good (a sender long under way: require a token, which takes the first as it comes, or raise --max-sequence-gap)",
			ErrFutureVersion, HeaderSequence, ver.Seq, gap)
	}
	return nil
}

func versionOf(h http.Header) (Version, error) {
	var v Version
	if s := strings.TrimSpace(h.Get(HeaderUpdated)); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || t.UnixNano() <= 0 {
			return v, fmt.Errorf("%w: %s %q is not an RFC 3339 instant after 1970", ErrBadRequest, HeaderUpdated, s)
		}
		v.Updated = t.UTC()
		return v, nil
	}
	if s := strings.TrimSpace(h.Get(HeaderSequence)); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return v, fmt.Errorf("%w: %s %q is not an unsigned integer", ErrBadRequest, HeaderSequence, s)
		}
		v.Seq = n
	}
	return v, nil
}

// OrderFile is the name of the receiver's order file in its state
// directory.
const OrderFile = "sdshare-receive.order"

var (
	bOrder = []byte("updated")
	// bHighSeq holds, per graph, the highest sequence number admitted.
	bHighSeq = []byte("highseq")
)

// Order remembers, per graph and resource, the newest change instant the
// receiver admitted, in a bbolt file (one fsynced transaction per
// admission unless NoSync).
type Order struct {
	db *bbolt.DB
}

// OpenOrder opens or creates the order file at path. noSync skips the
// fsync of each admission (for tests and stores that are not durable
// themselves).
func OpenOrder(path string, noSync bool) (*Order, error) {
	db, err := boltdb.Open(path, &bbolt.Options{Timeout: time.Second})
	if errors.Is(err, boltdb.ErrLocked) {
		return nil, fmt.Errorf("%w: %s", ErrOrderLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("sdshare push: order file %s: %w", path, err)
	}
	db.NoSync = noSync
	if err := db.Update(func(tx *bbolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bOrder); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bHighSeq)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("sdshare push: order file %s: %w", path, err)
	}
	return &Order{db: db}, nil
}

// Admit records ver for (graph, resource) and returns true, unless a
// later version of the same kind is recorded already (false: the fragment
// is stale). Sequence numbers and instants are kept apart: a sender that
// sends one kind is compared only with itself.
func (o *Order) Admit(graph, resource string, ver Version) (bool, error) {
	kind, pos := byte('u'), uint64(ver.Updated.UnixNano())
	if ver.Updated.IsZero() {
		kind, pos = 's', ver.Seq
	}
	key := []byte(graph + "\x00" + resource + "\x00" + string(kind))
	val := binary.BigEndian.AppendUint64(nil, pos)
	ok := false
	err := o.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bOrder)
		if v := b.Get(key); len(v) == 8 && binary.BigEndian.Uint64(v) > pos {
			return nil
		}
		ok = true
		if kind == 's' {
			hb := tx.Bucket(bHighSeq)
			if v := hb.Get([]byte(graph)); len(v) != 8 || binary.BigEndian.Uint64(v) < pos {
				if err := hb.Put([]byte(graph), val); err != nil {
					return err
				}
			}
		}
		return b.Put(key, val)
	})
	return ok, err
}

// HighestSequence returns the highest sequence number admitted in graph;
// false when none was.
func (o *Order) HighestSequence(graph string) (uint64, bool, error) {
	var high uint64
	var ok bool
	err := o.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bHighSeq).Get([]byte(graph)); len(v) == 8 {
			high, ok = binary.BigEndian.Uint64(v), true
		}
		return nil
	})
	return high, ok, err
}

// Close closes the order file; idempotent.
func (o *Order) Close() error {
	if o == nil || o.db == nil {
		return nil
	}
	err := o.db.Close()
	o.db = nil
	return err
}
