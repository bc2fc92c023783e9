package authn

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Config says which credentials an Authenticator accepts.
type Config struct {
	// TokenFile, if set, is a file of bearer tokens (see ParseTokens).
	TokenFile string
	// Tokens are accepted too (e.g. one from the environment).
	Tokens []string
	// BasicFile, if set, is an Apache htpasswd file of bcrypt hashes (see
	// ParseHtpasswd).
	BasicFile string
	// Realm names the protection space in the challenges (default
	// "resourcesync").
	Realm string
	// MaxBcrypt bounds the bcrypt comparisons running at once (default
	// half the CPUs, at least 1).
	MaxBcrypt int
	// Budget bounds the checks that may fail (default NewBudget()).
	Budget *Budget
	// CheckEvery is how often, at most, the files are looked at for a
	// change (default 2s; negative: at every request).
	CheckEvery time.Duration
	// Logger gets a line when a changed file is read again or refused.
	Logger *slog.Logger
}

// Authenticator checks the credentials of requests. A nil Authenticator
// accepts every request.
type Authenticator struct {
	cfg   Config
	sem   *slots // bcrypt comparisons, in turns by client
	key   []byte // of the remembered credentials' digests
	creds atomic.Pointer[creds]

	mu      sync.Mutex // one look at the files at a time
	checked time.Time
	seen    [2]stamp // of the files as last read or refused

	bcrypts, inFlight, maxInFlight, waiting atomic.Int64 // for tests
}

// creds is one reading of the files, with what was verified against it.
type creds struct {
	tokens [][sha256.Size]byte // digests
	users  map[string][]byte   // bcrypt hashes
	dummy  []byte              // a hash to spend the time on for unknown users

	mu   sync.Mutex
	good map[[sha256.Size]byte]struct{} // keyed digests of verified credentials
}

const maxRemembered = 1024

// stamp identifies a version of a file.
type stamp struct {
	fi   os.FileInfo
	mod  time.Time
	size int64
}

func (s stamp) same(t stamp) bool {
	if s.fi == nil || t.fi == nil {
		return s.fi == nil && t.fi == nil
	}
	return s.mod.Equal(t.mod) && s.size == t.size && os.SameFile(s.fi, t.fi)
}

func stat(name string) stamp {
	if name == "" {
		return stamp{}
	}
	fi, err := os.Stat(name)
	if err != nil {
		return stamp{}
	}
	return stamp{fi: fi, mod: fi.ModTime(), size: fi.Size()}
}

// New reads the files of cfg. It returns nil (accept everything) when
// cfg names no credentials at all.
func New(cfg Config) (*Authenticator, error) {
	if cfg.TokenFile == "" && cfg.BasicFile == "" && len(cfg.Tokens) == 0 {
		return nil, nil
	}
	if cfg.Realm == "" {
		cfg.Realm = "resourcesync"
	}
	if cfg.MaxBcrypt <= 0 {
		cfg.MaxBcrypt = max(1, runtime.NumCPU()/2)
	}
	if cfg.Budget == nil {
		cfg.Budget = NewBudget()
	}
	if cfg.CheckEvery == 0 {
		cfg.CheckEvery = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for _, t := range cfg.Tokens {
		if !isToken(t) {
			return nil, fmt.Errorf("%w: a token is one word of letters, digits and -._~+/ (then = padding)", ErrFormat)
		}
	}
	a := &Authenticator{cfg: cfg, sem: newSlots(cfg.MaxBcrypt), key: make([]byte, 32)}
	rand.Read(a.key)
	a.seen = [2]stamp{stat(cfg.TokenFile), stat(cfg.BasicFile)}
	c, err := a.load(nil, [2]bool{})
	if err != nil {
		return nil, err
	}
	a.creds.Store(c)
	a.checked = time.Now()
	return a, nil
}

// load reads the files: both (old nil), or those that changed since
// old, whose other credentials it keeps. At start (old nil) a file that
// cannot be read or holds no credential is an error. Later, such a file
// revokes the credentials read from it before (fail closed): emptying,
// deleting or commenting out a file is how an operator locks everyone out
// in an incident, and a file mangled mid-edit may be one whose leaked line
// was being removed, so keeping "the last good" credentials would keep
// exactly the one meant to go. The error is returned with the new
// credentials, to be logged; the tokens of Config.Tokens stay.
func (a *Authenticator) load(old *creds, changed [2]bool) (*creds, error) {
	c := &creds{good: map[[sha256.Size]byte]struct{}{}}
	var errs []error
	if old != nil && !changed[0] {
		c.tokens = old.tokens
	} else {
		var toks []string
		if name := a.cfg.TokenFile; name != "" {
			t, err := readFile(name, ParseTokens)
			if err != nil {
				if old == nil {
					return nil, err
				}
				errs = append(errs, err)
			}
			toks = t
		}
		for _, t := range append(toks, a.cfg.Tokens...) {
			c.tokens = append(c.tokens, sha256.Sum256([]byte(t)))
		}
	}
	if name := a.cfg.BasicFile; old != nil && !changed[1] {
		c.users, c.dummy = old.users, old.dummy
	} else if name != "" {
		users, err := readFile(name, ParseHtpasswd)
		if err != nil {
			if old == nil {
				return nil, err
			}
			errs = append(errs, err)
			users, c.dummy = nil, old.dummy
		}
		c.users = users
		for _, h := range c.users {
			c.dummy = h
			break
		}
	}
	return c, errors.Join(errs...)
}

func readFile[T any](name string, parse func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(name)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		return v, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// current returns the credentials in force, reading the files again
// first when they changed.
func (a *Authenticator) current() *creds {
	if !a.mu.TryLock() {
		return a.creds.Load() // another request is looking
	}
	defer a.mu.Unlock()
	now := time.Now()
	if a.cfg.CheckEvery > 0 && now.Sub(a.checked) < a.cfg.CheckEvery {
		return a.creds.Load()
	}
	a.checked = now
	st := [2]stamp{stat(a.cfg.TokenFile), stat(a.cfg.BasicFile)}
	changed := [2]bool{!st[0].same(a.seen[0]), !st[1].same(a.seen[1])}
	if !changed[0] && !changed[1] {
		return a.creds.Load()
	}
	a.seen = st
	c, err := a.load(a.creds.Load(), changed)
	if err != nil {
		a.cfg.Logger.Error("credentials file unreadable, empty or malformed: the credentials it held are revoked until it is fixed (fail closed)",
			"err", err, "tokens", len(c.tokens), "users", len(c.users))
	} else {
		a.cfg.Logger.Info("credentials reloaded", "tokens", len(c.tokens), "users", len(c.users))
	}
	a.creds.Store(c)
	return c
}

// Describe says what the Authenticator accepts, for a start-up line
// (counts, never a secret).
func (a *Authenticator) Describe() string {
	if a == nil {
		return "no credentials required"
	}
	c := a.creds.Load()
	var parts []string
	if len(c.tokens) > 0 {
		parts = append(parts, plural(len(c.tokens), "bearer token"))
	}
	if len(c.users) > 0 {
		parts = append(parts, "HTTP basic for "+plural(len(c.users), "user"))
	}
	return "credentials required: " + strings.Join(parts, " or ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// Handler returns next behind the check: a request without valid
// credentials gets 401 (or 429, see Budget) and never reaches next.
// open, if set, lets the requests it reports true for through unchecked
// (a health check, a part with credentials of its own). A nil
// Authenticator returns next.
func (a *Authenticator) Handler(next http.Handler, open func(*http.Request) bool) http.Handler {
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (open != nil && open(r)) || a.Check(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// Check reports whether r carries valid credentials; when not, it has
// answered the request (401 with the challenges, 429 when the failure
// budget is spent). A nil Authenticator accepts every request.
func (a *Authenticator) Check(w http.ResponseWriter, r *http.Request) bool {
	if a == nil {
		return true
	}
	c := a.current()
	scheme, cred, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	cred = strings.TrimSpace(cred)
	var basic bool
	var user, pass string
	switch {
	case strings.EqualFold(scheme, "Bearer") && cred != "" && len(c.tokens) > 0:
	case strings.EqualFold(scheme, "Basic") && len(c.users) > 0:
		var ok bool
		if user, pass, ok = r.BasicAuth(); !ok {
			a.challenge(w, r, "")
			return false
		}
		basic, cred = true, strconv.Itoa(len(user))+":"+user+pass // unambiguous
	default:
		// None, or a scheme not configured: no check spent.
		a.challenge(w, r, "")
		return false
	}
	key := a.digest(basic, cred)
	if c.remembered(key) {
		return true
	}
	// A token's check costs a digest: only its client's budget bounds it
	// (see Budget.TakeClient). bcrypt's costs tens of milliseconds of a
	// core: the shared budget bounds those too.
	take := a.cfg.Budget.TakeClient
	if basic {
		take = a.cfg.Budget.Take
	}
	give, ok := take(Client(r))
	if !ok {
		w.Header().Set("Retry-After", "1")
		plain(w, http.StatusTooManyRequests, "too many failed logins: wait a few seconds")
		return false
	}
	var good bool
	if basic {
		var err error
		if good, err = a.verifyBasic(r.Context(), Client(r), c, user, pass); err != nil {
			give() // not checked
			plain(w, http.StatusServiceUnavailable, "request ended before its credentials were checked")
			return false
		}
	} else {
		good = c.verifyToken(cred)
	}
	if !good {
		a.challenge(w, r, map[bool]string{false: "Bearer", true: "Basic"}[basic])
		return false
	}
	give()
	c.remember(key)
	return true
}

// digest is the key a verified credential is remembered by: keyed, so
// that memory holds nothing a password can be tested against offline.
func (a *Authenticator) digest(basic bool, cred string) [sha256.Size]byte {
	m := hmac.New(sha256.New, a.key)
	if basic {
		m.Write([]byte("basic\x00"))
	} else {
		m.Write([]byte("bearer\x00"))
	}
	m.Write([]byte(cred))
	var k [sha256.Size]byte
	m.Sum(k[:0])
	return k
}

func (c *creds) remembered(k [sha256.Size]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.good[k]
	return ok
}

func (c *creds) remember(k [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.good) >= maxRemembered {
		for old := range c.good {
			delete(c.good, old)
			break
		}
	}
	c.good[k] = struct{}{}
}

// verifyToken compares tok's digest with every token's, in constant time.
func (c *creds) verifyToken(tok string) bool {
	d := sha256.Sum256([]byte(tok))
	match := 0
	for _, t := range c.tokens {
		match |= subtle.ConstantTimeCompare(d[:], t[:])
	}
	return match == 1
}

// verifyBasic compares pass with user's bcrypt hash, at most MaxBcrypt at
// once, clients taking turns (slots). An unknown user costs as much as a known one (no enumeration by
// timing). err: ctx ended while waiting.
func (a *Authenticator) verifyBasic(ctx context.Context, client string, c *creds, user, pass string) (bool, error) {
	hash, known := c.users[user]
	if !known {
		hash = c.dummy
	}
	a.waiting.Add(1)
	err := a.sem.acquire(ctx, client)
	a.waiting.Add(-1)
	if err != nil {
		return false, err
	}
	n := a.inFlight.Add(1)
	for m := a.maxInFlight.Load(); n > m && !a.maxInFlight.CompareAndSwap(m, n); m = a.maxInFlight.Load() {
	}
	a.bcrypts.Add(1)
	err = bcrypt.CompareHashAndPassword(hash, []byte(pass))
	a.inFlight.Add(-1)
	a.sem.release()
	// Any error (a mismatch, a malformed hash) is a refusal. bcrypt reads
	// only the first 72 bytes of a password, as Apache's htpasswd does: a
	// longer one matches on those (what the hash was made from).
	return known && err == nil, nil
}
