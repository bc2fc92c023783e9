package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/resourcesync-go/resourcesync/internal/location"
)

// Opener opens a location of one scheme. loc is the whole location string
// as given; u is its parse (nil for a location without "//" after its
// scheme: a plain local path, or an opaque form such as "name:path").
type Opener struct {
	Content func(ctx context.Context, loc string, u *url.URL) (Content, error)
	Target  func(ctx context.Context, loc string, u *url.URL) (Target, error)
}

// The two sides register apart, on the grammar of every location string
// of the code base (internal/location), the one the state stores' --store
// locations use too.
var (
	contents = location.New[func(context.Context, string, *url.URL) (Content, error)]("Source's content", ErrUnknownScheme)
	targets  = location.New[func(context.Context, string, *url.URL) (Target, error)]("mirror", ErrUnknownScheme)
)

// Register makes scheme ("file", "s3", "mem") open with o. An
// implementation may register its Content and its Target opener in two
// calls (from two files' init); a side registered twice panics: a scheme
// registers once.
func Register(scheme string, o Opener) {
	scheme = strings.ToLower(scheme)
	if (o.Content != nil && has(contents, scheme)) || (o.Target != nil && has(targets, scheme)) {
		panic("storage: scheme registered twice: " + scheme)
	}
	if o.Content != nil {
		contents.Register(scheme, o.Content)
	}
	if o.Target != nil {
		targets.Register(scheme, o.Target)
	}
}

func has[F any](r *location.Registry[F], scheme string) bool {
	_, ok := r.Get(scheme)
	return ok
}

// Schemes lists the registered schemes, sorted.
func Schemes() []string {
	seen := map[string]bool{}
	var s []string
	for _, k := range append(contents.Schemes(), targets.Schemes()...) {
		if !seen[k] {
			seen[k] = true
			s = append(s, k)
		}
	}
	sort.Strings(s)
	return s
}

// Scheme returns the scheme of loc, in lower case: "file" for a path
// without one (including a Windows path "C:\dir") and for one that does
// not parse.
func Scheme(loc string) string {
	l, err := location.Parse(loc)
	if err != nil {
		return "file"
	}
	return l.Scheme
}

// IsLocal reports whether loc names a local directory.
func IsLocal(loc string) bool { return Scheme(loc) == "file" }

// parse parses loc, and as a URL when it has "//" after its scheme.
func parse(loc string) (location.Location, *url.URL, error) {
	l, err := location.Parse(loc)
	if err != nil {
		return l, nil, fmt.Errorf("storage: %w", err)
	}
	var u *url.URL
	if strings.HasPrefix(loc[min(len(loc), len(l.Scheme)+1):], "//") {
		if u, err = url.Parse(loc); err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // without the URL, which may hold a password
			}
			if strings.Contains(loc, "@") {
				// The reason may quote a piece of a password that does
				// not parse ("invalid port" of an unescaped "/" in it).
				return l, nil, fmt.Errorf("storage: %s: not a valid URL (a password holding \"/\", \"?\" or \"#\" must be percent-encoded)", l)
			}
			return l, nil, fmt.Errorf("storage: %s: %w", l, err)
		}
	}
	return l, u, nil
}

// unknown is the error of a scheme with neither side registered, or of
// a side the scheme does not have (what: "a Source", "a mirror").
func unknown(scheme, what string) error {
	for _, k := range Schemes() {
		if k == scheme {
			return fmt.Errorf("%w: %s cannot be %s", ErrUnknownScheme, scheme, what)
		}
	}
	return fmt.Errorf("%w %q (known: %s)", ErrUnknownScheme, scheme, strings.Join(Schemes(), ", "))
}

// OpenContent opens loc as a Source's collection.
func OpenContent(ctx context.Context, loc string) (Content, error) {
	l, u, err := parse(loc)
	if err != nil {
		return nil, err
	}
	open, ok := contents.Get(l.Scheme)
	if !ok {
		return nil, unknown(l.Scheme, "a Source")
	}
	return open(ctx, loc, u)
}

// OpenTarget opens loc as a mirror.
func OpenTarget(ctx context.Context, loc string) (Target, error) {
	l, u, err := parse(loc)
	if err != nil {
		return nil, err
	}
	open, ok := targets.Get(l.Scheme)
	if !ok {
		return nil, unknown(l.Scheme, "a mirror")
	}
	return open(ctx, loc, u)
}

// LocalPath returns the local directory a file location names: loc itself
// for a plain path, the path of file:///path (unescaped, in the platform's
// separators) or of file:path. The file scheme's openers read their root
// through it, so that every spelling of a local location means one
// directory.
func LocalPath(loc string) (string, error) {
	l, err := location.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("storage: %w", err)
	}
	if l.Scheme != "file" {
		return "", fmt.Errorf("storage: %s is not a local path", l)
	}
	return l.Rest, nil
}

// FileName is a file name for the location loc, for a directory that
// keeps its state (sync's default --state, an aggregate line's bucket
// DEST): loc made a name (separators and control characters as "_", at
// most 100 bytes of it) followed by a short digest of loc, so that two
// locations never share a name.
func FileName(loc string) string {
	name := strings.Map(func(r rune) rune {
		if r < ' ' || strings.ContainsRune(`/\:?*<>|"`, r) { // not in a file name on Windows
			return '_'
		}
		return r
	}, strings.TrimRight(loc, "/"))
	name = strings.TrimLeft(name, "._")
	if len(name) > 100 {
		name = name[:100]
	}
	sum := sha256.Sum256([]byte(loc))
	return name + "-" + hex.EncodeToString(sum[:4])
}
