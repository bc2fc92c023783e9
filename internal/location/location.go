package location

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Errors of Parse and Lookup; match them with errors.Is.
var (
	// ErrScheme: a scheme no one registered (Lookup's default), or a
	// file:// URL naming another host.
	ErrScheme = errors.New("unknown scheme")
	// ErrEmpty: an empty location, which names no scheme (it wraps
	// ErrScheme).
	ErrEmpty = fmt.Errorf("%w: empty location", ErrScheme)
	// ErrNoPath: a scheme that needs something after it ("bolt:", "file://")
	// has nothing.
	ErrNoPath = errors.New("no path after the scheme")
)

// Location is a parsed location string.
type Location struct {
	// Scheme is the scheme in lower case: "file" for a plain path.
	Scheme string
	// Rest is what follows "scheme:" as given ("//h/db" of a URL, "DIR"
	// of bolt:DIR); of a file location, the local path (a file:// URL's
	// path, unescaped, in the platform's separators).
	Rest string
	// Raw is the location as given; it may hold a password (show String).
	Raw string
}

// String is the location with its passwords hidden, for messages.
func (l Location) String() string { return Redact(l.Raw) }

// connString is a libpq key=value connection string ("host=h dbname=d
// password=…"): every word a key=value. Taken as a path, it would name a
// directory after a password.
var connString = regexp.MustCompile(`^\s*[A-Za-z_]+\s*=\s*\S*(\s+[A-Za-z_]+\s*=\s*\S*)*\s*$`)

// schemeRE is a scheme of two characters or more.
var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]+$`)

// Path is the Location of a local path p taken as it is: not parsed, so a
// directory whose name looks like a scheme stays a directory. The default
// paths of the engines (a state directory) open through it.
func Path(p string) Location { return Location{Scheme: "file", Rest: p, Raw: p} }

// The scheme families the state stores share, registered with
// RegisterEach: the embedded store in a local directory (a path,
// file:///path, bolt:DIR) and a PostgreSQL database.
var (
	LocalSchemes    = []string{"file", "bolt"}
	PostgresSchemes = []string{"postgres", "postgresql"}
)

// Postgres reports whether l names a PostgreSQL database.
func (l Location) Postgres() bool { return slices.Contains(PostgresSchemes, l.Scheme) }

// Dir is the local directory l names: the path of a plain path or a file
// location, DIR of bolt:DIR; "" for any other scheme.
func (l Location) Dir() string {
	if slices.Contains(LocalSchemes, l.Scheme) {
		return l.Rest
	}
	return ""
}

// Parse parses s (see the package documentation). A file location must
// name a path, on this host.
func Parse(s string) (Location, error) {
	if s == "" {
		return Location{}, ErrEmpty
	}
	if connString.MatchString(s) {
		return Location{}, fmt.Errorf("%w: %s is a key=value connection string, not a location: give a postgres:// URL (a directory of that name: ./NAME)", ErrScheme, Redact(s))
	}
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || !schemeRE.MatchString(scheme) {
		return Path(s), nil
	}
	l := Location{Scheme: strings.ToLower(scheme), Rest: rest, Raw: s}
	if l.Scheme == "bolt" && rest == "" {
		return Location{}, fmt.Errorf("%s: %w", s, ErrNoPath)
	}
	if l.Scheme != "file" {
		return l, nil
	}
	if !strings.HasPrefix(rest, "//") { // file:PATH
		if rest == "" {
			return Location{}, fmt.Errorf("%s: %w", s, ErrNoPath)
		}
		return l, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return Location{}, fmt.Errorf("%s: %w", Redact(s), err)
	}
	if u.Host != "" && u.Host != "localhost" {
		return Location{}, fmt.Errorf("%w: %s names the host %q: only local paths (file:///path)", ErrScheme, Redact(s), u.Host)
	}
	p := u.Path
	if len(p) >= 3 && p[0] == '/' && p[2] == ':' && filepath.VolumeName(p[1:]) != "" { // file:///C:/dir on Windows
		p = p[1:]
	}
	if p == "" {
		return Location{}, fmt.Errorf("%s: %w", s, ErrNoPath)
	}
	l.Rest = filepath.FromSlash(p)
	return l, nil
}

// Registry maps schemes to the openers F of one kind of thing (a store
// family, content, mirrors). The zero value is not usable: call New.
type Registry[F any] struct {
	what    string
	unknown error
	mu      sync.RWMutex
	m       map[string]F
}

// New returns an empty registry. what names the kind in messages
// ("store", "aggregator state"); unknown is the error Lookup wraps for a
// scheme not registered (ErrScheme if nil).
func New[F any](what string, unknown error) *Registry[F] {
	if unknown == nil {
		unknown = ErrScheme
	}
	return &Registry[F]{what: what, unknown: unknown, m: map[string]F{}}
}

// Register makes scheme (compared in lower case) open with f. A scheme
// registers once: a second registration panics, since two packages
// claiming one scheme is a build mistake, not a run-time condition.
func (r *Registry[F]) Register(scheme string, f F) {
	scheme = strings.ToLower(scheme)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[scheme]; dup {
		panic(fmt.Sprintf("location: %s scheme %q registered twice", r.what, scheme))
	}
	r.m[scheme] = f
}

// RegisterEach registers f under each of schemes (a family, such as
// LocalSchemes).
func (r *Registry[F]) RegisterEach(f F, schemes ...string) {
	for _, s := range schemes {
		r.Register(s, f)
	}
}

// Schemes lists the registered schemes, sorted.
func (r *Registry[F]) Schemes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := make([]string, 0, len(r.m))
	for k := range r.m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// Get returns the opener of scheme.
func (r *Registry[F]) Get(scheme string) (F, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.m[strings.ToLower(scheme)]
	return f, ok
}

// Lookup parses s and returns its scheme's opener. An unknown scheme is
// an error wrapping the registry's unknown error and naming the known
// schemes; no error shows a password.
func (r *Registry[F]) Lookup(s string) (F, Location, error) {
	var zero F
	l, err := Parse(s)
	if err != nil {
		return zero, Location{}, fmt.Errorf("%s: %w", r.what, err)
	}
	f, err := r.Of(l)
	return f, l, err
}

// Of returns the opener of l's scheme (see Lookup).
func (r *Registry[F]) Of(l Location) (F, error) {
	f, ok := r.Get(l.Scheme)
	if !ok {
		return f, r.Unknown(l.Scheme)
	}
	return f, nil
}

// Unknown is the error for a scheme this registry does not know: it
// wraps the registry's unknown error and names the known schemes.
func (r *Registry[F]) Unknown(scheme string) error {
	return fmt.Errorf("%w %q for a %s (known: %s)", r.unknown, scheme, r.what, strings.Join(r.Schemes(), ", "))
}

// IsPostgres reports whether s is a PostgreSQL URL.
func IsPostgres(s string) bool {
	l, err := Parse(s)
	return err == nil && l.Postgres() && strings.HasPrefix(l.Rest, "//")
}
