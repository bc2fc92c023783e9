package destination

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Errors for resource URIs that cannot be mirrored, matched with errors.Is.
var (
	ErrOutsideAuthority = errors.New("resource URI is outside the Source's authority")
	ErrOutsideBase      = errors.New("resource URI is outside the Source's base URL")
	ErrUnmappable       = errors.New("resource URI does not map to a file")
	ErrReserved         = errors.New("resource URI maps into the state directory")
)

// StateDirName is the directory in DEST that holds the Destination's state.
const StateDirName = ".resourcesync"

// Mapper maps resource URIs to files below a root directory: the path of
// the URI relative to the Source's base, percent-decoded, one file per URI.
type Mapper struct {
	base *url.URL
	root string
}

// NewMapper returns a Mapper for resources under base ("scheme://host/prefix/")
// mirrored into root.
func NewMapper(base, root string) (*Mapper, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("base URL %q: %w", base, err)
	}
	if u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("base URL %q is not absolute", base)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		u.RawPath = ""
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	return &Mapper{base: u, root: abs}, nil
}

// Base returns the base URL.
func (m *Mapper) Base() string { return m.base.String() }

// Root returns the absolute root directory.
func (m *Mapper) Root() string { return m.root }

// Rel returns the slash-separated path of uri relative to the root, or an
// error saying precisely why the URI cannot be mirrored.
func (m *Mapper) Rel(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", ErrUnmappable, uri, err)
	}
	if !strings.EqualFold(u.Scheme, m.base.Scheme) || !strings.EqualFold(u.Host, m.base.Host) {
		return "", fmt.Errorf("%w: %s is not under %s://%s", ErrOutsideAuthority, uri, m.base.Scheme, m.base.Host)
	}
	if u.User != nil {
		return "", fmt.Errorf("%w: %s carries user information", ErrUnmappable, uri)
	}
	if u.RawQuery != "" || u.ForceQuery {
		return "", fmt.Errorf("%w: %s has a query string", ErrUnmappable, uri)
	}
	// Compare escaped paths so that %2F cannot pose as a separator.
	ep := u.EscapedPath()
	bp := m.base.EscapedPath()
	if !strings.HasPrefix(ep, bp) {
		return "", fmt.Errorf("%w: %s is not under %s", ErrOutsideBase, uri, m.base)
	}
	rest := ep[len(bp):]
	if rest == "" || strings.HasSuffix(rest, "/") {
		return "", fmt.Errorf("%w: %s names a directory", ErrUnmappable, uri)
	}
	segs := strings.Split(rest, "/")
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %v", ErrUnmappable, uri, err)
		}
		switch {
		case d == "" || d == "." || d == "..":
			return "", fmt.Errorf("%w: %s would map outside DEST (segment %q)", ErrOutsideBase, uri, d)
		case strings.ContainsAny(d, "/\\\x00"):
			return "", fmt.Errorf("%w: %s has a segment %q with a separator or NUL", ErrUnmappable, uri, d)
		case i == 0 && d == StateDirName:
			return "", fmt.Errorf("%w: %s", ErrReserved, uri)
		case strings.HasPrefix(d, tempPrefix):
			return "", fmt.Errorf("%w: %s uses the temporary-file prefix %q", ErrUnmappable, uri, tempPrefix)
		case len(d) > 255:
			return "", fmt.Errorf("%w: %s has a segment longer than 255 bytes", ErrUnmappable, uri)
		}
		segs[i] = d
	}
	return strings.Join(segs, "/"), nil
}

// Path returns the absolute file path for a relative path from Rel.
func (m *Mapper) Path(rel string) string {
	return filepath.Join(m.root, filepath.FromSlash(rel))
}

// URI returns the URI a relative path was mapped from.
func (m *Mapper) URI(rel string) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return m.base.String() + strings.Join(segs, "/")
}
