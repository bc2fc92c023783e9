package storage

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// Opener opens a location of one scheme. loc is the whole location string
// as given; u is its parse (nil for a plain local path).
type Opener struct {
	Content func(ctx context.Context, loc string, u *url.URL) (Content, error)
	Target  func(ctx context.Context, loc string, u *url.URL) (Target, error)
}

var (
	mu      sync.RWMutex
	openers = map[string]Opener{}
)

// Register makes scheme ("file", "s3", "mem") open with o. An
// implementation may register its Content and its Target opener in two
// calls (from two files' init); a side registered twice panics: a scheme
// registers once.
func Register(scheme string, o Opener) {
	mu.Lock()
	defer mu.Unlock()
	cur := openers[scheme]
	if (o.Content != nil && cur.Content != nil) || (o.Target != nil && cur.Target != nil) {
		panic("storage: scheme registered twice: " + scheme)
	}
	if o.Content != nil {
		cur.Content = o.Content
	}
	if o.Target != nil {
		cur.Target = o.Target
	}
	openers[scheme] = cur
}

// Schemes lists the registered schemes, sorted.
func Schemes() []string {
	mu.RLock()
	defer mu.RUnlock()
	s := make([]string, 0, len(openers))
	for k := range openers {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// Scheme returns the scheme of loc: "file" for a path without one
// (including a Windows path "C:\dir").
func Scheme(loc string) string {
	i := strings.Index(loc, "://")
	if i <= 1 { // "C:" is a drive, not a scheme
		return "file"
	}
	return strings.ToLower(loc[:i])
}

// IsLocal reports whether loc names a local directory.
func IsLocal(loc string) bool { return Scheme(loc) == "file" }

func lookup(loc string) (Opener, *url.URL, error) {
	scheme := Scheme(loc)
	var u *url.URL
	if strings.Contains(loc, "://") {
		var err error
		if u, err = url.Parse(loc); err != nil {
			return Opener{}, nil, fmt.Errorf("storage: %w", err)
		}
	}
	mu.RLock()
	o, ok := openers[scheme]
	mu.RUnlock()
	if !ok {
		return Opener{}, nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownScheme, scheme, strings.Join(Schemes(), ", "))
	}
	return o, u, nil
}

// OpenContent opens loc as a Source's collection.
func OpenContent(ctx context.Context, loc string) (Content, error) {
	o, u, err := lookup(loc)
	if err != nil {
		return nil, err
	}
	if o.Content == nil {
		return nil, fmt.Errorf("%w: %s cannot be a Source", ErrUnknownScheme, Scheme(loc))
	}
	return o.Content(ctx, loc, u)
}

// OpenTarget opens loc as a mirror.
func OpenTarget(ctx context.Context, loc string) (Target, error) {
	o, u, err := lookup(loc)
	if err != nil {
		return nil, err
	}
	if o.Target == nil {
		return nil, fmt.Errorf("%w: %s cannot be a mirror", ErrUnknownScheme, Scheme(loc))
	}
	return o.Target(ctx, loc, u)
}
