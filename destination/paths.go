package destination

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/resourcesync-go/resourcesync/internal/casefold"
)

// Errors for resource URIs that cannot be mirrored, matched with errors.Is.
var (
	ErrOutsideAuthority = errors.New("resource URI is outside the Source's authority")
	ErrOutsideBase      = errors.New("resource URI is outside the Source's base URL")
	ErrUnmappable       = errors.New("resource URI does not map to a file")
	ErrReserved         = errors.New("resource URI maps into the state directory")
	// ErrPathCollision is a resource URI that maps to the same file as
	// another one (in the same list, or recorded) that is not equivalent
	// to it (e.g. /a%3Bb and /a;b).
	ErrPathCollision = errors.New("two resource URIs map to one file")
)

// StateDirName is the directory in DEST that holds the Destination's state.
const StateDirName = ".resourcesync"

// Mapper maps resource URIs to files below a root directory: the path of
// the URI relative to the Source's base, percent-decoded, one file per URI.
type Mapper struct {
	base *url.URL
	root string
	// hosts, when set, accepts URIs of other hosts (see AllowHosts).
	hosts func(*url.URL) bool
	// fold is how root's file system compares names (probed per Mirror).
	fold casefold.Folding
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
		if m.hosts != nil && (strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")) && u.Host != "" && m.hosts(u) {
			return m.hostRel(uri, u)
		}
		return "", fmt.Errorf("%w: %s is not under %s://%s", ErrOutsideAuthority, uri, m.base.Scheme, m.base.Host)
	}
	if u.User != nil {
		return "", fmt.Errorf("%w: %s carries user information", ErrUnmappable, uri)
	}
	if u.RawQuery != "" || u.ForceQuery {
		return "", fmt.Errorf("%w: %s has a query string", ErrUnmappable, uri)
	}
	// Compare escaped paths so that %2F cannot pose as a separator, in
	// normal form so that %70re matches pre.
	ep := normPercent(u.EscapedPath())
	bp := normPercent(m.base.EscapedPath())
	if !strings.HasPrefix(ep, bp) {
		return "", fmt.Errorf("%w: %s is not under %s", ErrOutsideBase, uri, m.base)
	}
	segs, err := segments(uri, ep[len(bp):])
	if err != nil {
		return "", err
	}
	switch {
	case segs[0] == StateDirName:
		return "", fmt.Errorf("%w: %s", ErrReserved, uri)
	case m.hosts != nil && strings.EqualFold(segs[0], HostsDirName):
		return "", fmt.Errorf("%w: %s maps into DEST/%s, which holds the resources of the hosts --allow-host names", ErrReserved, uri, HostsDirName)
	}
	return strings.Join(segs, "/"), nil
}

// segments splits rest, the escaped path of uri below what it is mapped
// from, into decoded segments that are each a safe file name.
func segments(uri, rest string) ([]string, error) {
	if rest == "" || strings.HasSuffix(rest, "/") {
		return nil, fmt.Errorf("%w: %s names a directory", ErrUnmappable, uri)
	}
	segs := strings.Split(rest, "/")
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrUnmappable, uri, err)
		}
		switch {
		case d == "" || d == "." || d == "..":
			return nil, fmt.Errorf("%w: %s would map outside DEST (segment %q)", ErrOutsideBase, uri, d)
		case strings.ContainsAny(d, "/\\\x00"):
			return nil, fmt.Errorf("%w: %s has a segment %q with a separator or NUL", ErrUnmappable, uri, d)
		case strings.HasPrefix(d, tempPrefix):
			return nil, fmt.Errorf("%w: %s uses the temporary-file prefix %q", ErrUnmappable, uri, tempPrefix)
		case len(d) > 255:
			return nil, fmt.Errorf("%w: %s has a segment longer than 255 bytes", ErrUnmappable, uri)
		}
		segs[i] = d
	}
	return segs, nil
}

// HostsDirName is the directory in DEST that holds the resources of other
// hosts than the Source's, when the user allows them (Mapper.AllowHosts):
// DEST/_hosts/<host>[_<port>]/<path>. While it is in use, a resource of
// the Source itself that would map into it is refused (ErrReserved), so
// that the two can never collide.
const HostsDirName = "_hosts"

// AllowHosts makes the Mapper take in resources whose authority is not
// the base's but whose URL allowed accepts (the hosts of --allow-host):
// they map to HostsDirName/<host>[_<port>]/<path from the host's root>.
func (m *Mapper) AllowHosts(allowed func(*url.URL) bool) { m.hosts = allowed }

// hostRel maps the URI u of another host than the base's.
func (m *Mapper) hostRel(uri string, u *url.URL) (string, error) {
	if u.User != nil {
		return "", fmt.Errorf("%w: %s carries user information", ErrUnmappable, uri)
	}
	if u.RawQuery != "" || u.ForceQuery {
		return "", fmt.Errorf("%w: %s has a query string", ErrUnmappable, uri)
	}
	dir, err := hostDir(u)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrUnmappable, uri, err)
	}
	ep := normPercent(u.EscapedPath())
	segs, err := segments(uri, strings.TrimPrefix(ep, "/"))
	if err != nil {
		return "", err
	}
	return HostsDirName + "/" + dir + "/" + strings.Join(segs, "/"), nil
}

// hostDir is the directory name of u's host: the host in lower case (an
// IPv6 address with '-' for ':'), then '_' and the port unless it is the
// scheme's default (cdn.example.org_8443). Only letters, digits, '.', '-'
// and '_' are kept: a name any file system takes.
func hostDir(u *url.URL) (string, error) {
	h := strings.ToLower(u.Hostname())
	if strings.Contains(h, ":") {
		h = strings.ReplaceAll(h, ":", "-")
	}
	if h == "" || strings.HasPrefix(h, ".") || strings.HasPrefix(h, tempPrefix) || len(h) > 200 {
		return "", fmt.Errorf("host %q cannot name a directory", u.Hostname())
	}
	for _, r := range h {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '-' || r == '_') {
			return "", fmt.Errorf("host %q cannot name a directory", u.Hostname())
		}
	}
	if p := u.Port(); p != "" && !(p == "80" && strings.EqualFold(u.Scheme, "http") || p == "443" && strings.EqualFold(u.Scheme, "https")) {
		h += "_" + p
	}
	return h, nil
}

// Key returns uri in normal form (NormalizeURI), the identity under which
// the Destination records it; a URI that cannot be mirrored anyway is
// returned as written, so that its refusal names it as the list does.
func (m *Mapper) Key(uri string) string {
	n := NormalizeURI(uri)
	if n == uri {
		return uri
	}
	if _, err := m.Rel(n); err != nil {
		return uri
	}
	return n
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

// NormalizeURI returns uri in the normal form RFC 3986 §6.2.2 uses for
// comparison: scheme and host in lower case, percent-encoded unreserved
// characters (ALPHA DIGIT - . _ ~) decoded, other percent-encodings in
// upper-case hex. URIs with one normal form name one resource, so the
// Destination keys its state by it (/aA and /a%41 are one record, one
// file). A '%' that starts no escape is written %25, which keeps the
// function idempotent.
func NormalizeURI(uri string) string {
	// Twice: decoding can reveal a scheme (A%70://h is Ap://h), which the
	// second pass then lower-cases; after it nothing is left to decode,
	// so the result is a fixed point.
	return normalizeURI(normalizeURI(uri))
}

func normalizeURI(uri string) string {
	rest := uri
	var b strings.Builder
	if i := strings.Index(uri, "://"); i > 0 && isScheme(uri[:i]) {
		auth := uri[i+3:]
		j := strings.IndexAny(auth, "/?#")
		if j < 0 {
			j = len(auth)
		}
		a := normPercent(auth[:j])
		if !strings.Contains(a, "@") { // user information is case-sensitive
			// Lower-cased after decoding (%41 is A, then a) and escapes
			// upper-cased again, so that the result is a fixed point.
			a = normPercent(strings.ToLower(a))
		}
		b.Grow(len(uri))
		b.WriteString(strings.ToLower(uri[:i]))
		b.WriteString("://")
		b.WriteString(a)
		rest = auth[j:]
	}
	b.WriteString(normPercent(rest))
	return b.String()
}

func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// normPercent decodes percent-encoded unreserved characters and writes
// the other escapes in upper-case hex.
func normPercent(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0 {
			b.WriteString("%25")
			continue
		}
		v := byte(unhex(s[i+1])<<4 | unhex(s[i+2]))
		if 'a' <= v && v <= 'z' || 'A' <= v && v <= 'Z' || '0' <= v && v <= '9' || v == '-' || v == '.' || v == '_' || v == '~' {
			b.WriteByte(v)
		} else {
			const hexd = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(hexd[v>>4])
			b.WriteByte(hexd[v&15])
		}
		i += 2
	}
	return b.String()
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// probeFolding finds out whether DEST's file system takes names that
// differ only in case (or normalization form) for one: Options.FoldsCase
// when set, else a probe in dir, the state's temporary directory in DEST.
func probeFolding(opt *Options, dir string) (casefold.Folding, error) {
	if opt.FoldsCase != nil {
		c, err := opt.FoldsCase(dir)
		return casefold.Folding{Case: c}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return casefold.Folding{}, err
	}
	return casefold.Probe(dir)
}

// caseCollision refuses uri, mapped to rel, when DEST's file system folds
// names and rel would reach the file of another URI: one that claimed a
// name with the same folded form earlier in this pass (claims, which then
// hold the folded form too, under a key no path can have, once uri is
// accepted), or a file already in DEST under another spelling. The second
// of such a pair fails, the first keeps its file: nothing is overwritten.
//
// Memory stays flat: the folded forms go to the pass's on-disk claims,
// and DEST is only asked when a file the state does not name at rel
// itself is found there (on such a file system a lookup of rel finds a
// file of another spelling); its directory is then read for that
// spelling.
func (e *engine) caseCollision(claims *seenSet, rel, uri, owner string) error {
	f := e.m.fold
	if !f.Folds() {
		return nil
	}
	if err := e.otherSpelling(rel, uri, owner); err != nil {
		return err
	}
	prev, err := claims.claim("\x00"+f.Key(rel), uri)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	if prev != "" && prev != uri {
		return fmt.Errorf("%w: %s and %s map to names that differ only in case (or Unicode normalization), which DEST's file system takes for one file: %s is refused", ErrPathCollision, prev, uri, uri)
	}
	return nil
}

// otherSpelling refuses uri when a file of another spelling of rel is in
// DEST (caseCollision).
func (e *engine) otherSpelling(rel, uri, owner string) error {
	if owner != "" {
		return nil // the state names rel itself: the file there is spelled so
	}
	abs := e.m.Path(rel)
	if _, err := e.lstat(abs); err != nil {
		return nil
	}
	f := e.m.fold
	dir, name := path.Split(rel)
	other, ok, err := f.Other(filepath.Dir(abs), name)
	if err != nil {
		return fmt.Errorf("%w: reading DEST for another spelling of %s: %v", ErrState, rel, err)
	}
	if !ok {
		return nil
	}
	otherRel := dir + other
	who, _, _, err := e.st.lookup(uri, otherRel)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	if who == "" {
		return fmt.Errorf("%w: %s maps to %s, whose name differs only in case (or Unicode normalization) from %s, a file resourcesync did not write, and DEST's file system takes them for one file: %s is refused", ErrPathCollision, uri, rel, otherRel, uri)
	}
	return fmt.Errorf("%w: %s and %s (at %s) map to names that differ only in case (or Unicode normalization), which DEST's file system takes for one file: %s is refused", ErrPathCollision, who, uri, otherRel, uri)
}
