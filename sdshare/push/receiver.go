package push

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// DefaultMaxBytes bounds a pushed body (one fragment or a batch).
const DefaultMaxBytes = 32 << 20

// Errors of the receiver; match with errors.Is.
var (
	ErrBadRequest  = errors.New("sdshare push: bad request")
	ErrOrderLocked = errors.New("sdshare push: order file is in use by another process")
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

	locks [64]sync.Mutex
	seed  maphash.Seed
	once  sync.Once
}

// Result is what one POST did; the handler writes it as the body.
type Result struct {
	Applied, Deleted, Stale int
}

func (rv *Receiver) lockFor(graph, resource string) *sync.Mutex {
	rv.once.Do(func() { rv.seed = maphash.MakeSeed() })
	h := maphash.String(rv.seed, graph+"\x00"+resource)
	return &rv.locks[h%uint64(len(rv.locks))]
}

func (rv *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
	case http.MethodGet, http.MethodHead:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if strings.HasSuffix(r.URL.Path, "/ping") {
			io.WriteString(w, "pong\n")
			return
		}
		io.WriteString(w, receiverDoc)
		return
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "SDShare Push receiver: POST fragments here", http.StatusMethodNotAllowed)
		return
	}
	res, code, err := rv.receive(r)
	if err != nil {
		if rv.Logf != nil {
			rv.Logf("push %s: %d %v", r.URL.RawQuery, code, err)
		}
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "applied %d, deleted %d, stale %d\n", res.Applied, res.Deleted, res.Stale)
}

const receiverDoc = `SDShare Push receiver.
POST ?resource=IRI[&resource=IRI...][&graph=IRI] with the fragment as the body
(Content-Type application/n-triples, text/plain, text/turtle or
application/rdf+xml; empty body = the resource was deleted). Optional header
SDShare-Updated: RFC 3339 instant of the change; older fragments than one
already applied are acknowledged and ignored. GET ping answers pong.
`

func (rv *Receiver) receive(r *http.Request) (Result, int, error) {
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
	max := rv.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return Result{}, http.StatusBadRequest, fmt.Errorf("%w: reading body: %w", ErrBadRequest, err)
	}
	if int64(len(body)) > max {
		return Result{}, http.StatusRequestEntityTooLarge, fmt.Errorf("%w: body longer than %d bytes", ErrBadRequest, max)
	}
	parts := map[string][]rdf.Triple{}
	if len(bytes.TrimSpace(body)) > 0 {
		f, ok := rdf.FormatFor(r.Header.Get("Content-Type"))
		if !ok {
			return Result{}, http.StatusUnsupportedMediaType, fmt.Errorf("%w: Content-Type %q is not an RDF format the receiver reads", ErrBadRequest, r.Header.Get("Content-Type"))
		}
		var ts []rdf.Triple
		for t, err := range rdf.Parse(bytes.NewReader(body), f, "") {
			if err != nil {
				return Result{}, http.StatusBadRequest, fmt.Errorf("%w: body: %w", ErrBadRequest, err)
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

var bOrder = []byte("updated")

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
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s", ErrOrderLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("sdshare push: order file %s: %w", path, err)
	}
	db.NoSync = noSync
	if err := db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bOrder)
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
		return b.Put(key, val)
	})
	return ok, err
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
