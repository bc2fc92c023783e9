package aggregate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/httpclient"
	"github.com/resourcesync-go/resourcesync/internal/origin"
	"github.com/resourcesync-go/resourcesync/storage"
)

// Limits of a sources file: a line longer than MaxSourcesLine or more
// than MaxSourcesLines lines is an error, never a truncation (a cut list
// would silently stop Sources).
const (
	MaxSourcesLine  = 64 << 10
	MaxSourcesLines = 100_000
)

// Limits of a Source's options.
const maxSourceWorkers = 256

// sourceOption is one option of a sources line.
type sourceOption struct {
	name   string // without "--"
	flag   bool   // takes no value
	repeat bool   // may be given more than once
	set    func(s *Source, v string, files filesPolicy) error
}

var sourceOptions = []sourceOption{
	{name: "poll-interval", set: func(s *Source, v string, _ filesPolicy) error {
		d, err := positiveDuration(v)
		s.Interval = d
		return err
	}},
	{name: "follow", flag: true, set: func(s *Source, _ string, _ filesPolicy) error { s.Follow = true; return nil }},
	{name: "set", repeat: true, set: func(s *Source, v string, _ filesPolicy) error {
		if v == "" {
			return errors.New("empty set name")
		}
		s.Sets = append(s.Sets, v)
		return nil
	}},
	{name: "sdshare", flag: true, set: func(s *Source, _ string, _ filesPolicy) error { s.Kind = KindSDShare; return nil }},
	{name: "bearer-token-file", set: func(s *Source, v string, files filesPolicy) error {
		p, err := files.path(v)
		s.BearerTokenFile = p
		return err
	}},
	{name: "netrc-file", set: func(s *Source, v string, files filesPolicy) error {
		p, err := files.path(v)
		s.NetrcFile = p
		return err
	}},
	{name: "ca-cert", set: func(s *Source, v string, files filesPolicy) error {
		p, err := files.path(v)
		s.CACertFile = p
		return err
	}},
	{name: "allow-host", repeat: true, set: func(s *Source, v string, _ filesPolicy) error {
		// The same check sync's --allow-host gets, so a bad host is
		// refused here rather than at the Source's first run.
		if _, err := origin.New("http://source.invalid/", []string{v}); err != nil || v == "" {
			return fmt.Errorf("bad host %q: want HOST or HOST:PORT", v)
		}
		s.AllowHosts = append(s.AllowHosts, v)
		return nil
	}},
	{name: "max-delete", set: func(s *Source, v string, _ filesPolicy) error {
		v = strings.TrimSpace(v)
		if _, err := destination.ParseDeleteLimit(v); err != nil {
			return fmt.Errorf("bad value %q: want N (files), -1 (no limit) or P%% (0 to 100)", v)
		}
		s.MaxDelete = v
		return nil
	}},
	{name: "no-delete", flag: true, set: func(s *Source, _ string, _ filesPolicy) error { s.NoDelete = true; return nil }},
	{name: "allow-reset", flag: true, set: func(s *Source, _ string, _ filesPolicy) error { s.AllowReset = true; return nil }},
	{name: "no-dumps", flag: true, set: func(s *Source, _ string, _ filesPolicy) error { s.NoDumps = true; return nil }},
	{name: "base-url", set: func(s *Source, v string, _ filesPolicy) error {
		if err := checkHTTPURL(v); err != nil {
			return err
		}
		s.BaseURL = v
		return nil
	}},
	{name: "workers", set: func(s *Source, v string, _ filesPolicy) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSourceWorkers {
			return fmt.Errorf("bad value %q: want 1 to %d", v, maxSourceWorkers)
		}
		s.Workers = n
		return nil
	}},
	{name: "timeout", set: func(s *Source, v string, _ filesPolicy) error {
		d, err := positiveDuration(v)
		s.Timeout = d
		return err
	}},
	{name: "include", repeat: true, set: func(s *Source, v string, _ filesPolicy) error { return s.addFilter("include", v) }},
	{name: "exclude", repeat: true, set: func(s *Source, v string, _ filesPolicy) error { return s.addFilter("exclude", v) }},
	{name: "filter-from", repeat: true, set: func(s *Source, v string, files filesPolicy) error {
		p, err := files.path(v)
		if err != nil {
			return err
		}
		return s.addFilter("filter-from", p)
	}},
	{name: "force", flag: true, set: func(s *Source, _ string, _ filesPolicy) error { s.Force = true; return nil }},
}

// sourceAliases: other spellings a line may use. --interval is the word
// of the first version of the format; the command line's vocabulary says
// --poll-interval.
var sourceAliases = map[string]string{"interval": "poll-interval"}

// sdshareExcludes: the options meaningless for an SDShare collection
// (no notifications, sets, dumps or deletion limits there).
var sdshareExcludes = []string{"follow", "set", "no-dumps", "max-delete", "no-delete", "allow-reset", "include", "exclude", "filter-from", "force"}

func lookupOption(name string) *sourceOption {
	if a, ok := sourceAliases[name]; ok {
		name = a
	}
	for i := range sourceOptions {
		if sourceOptions[i].name == name {
			return &sourceOptions[i]
		}
	}
	return nil
}

func positiveDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("bad duration %q: want a positive duration such as 90s, 15m or 1h", v)
	}
	return d, nil
}

// filesPolicy says where the credential files a sources list names may
// be. A local list (remote false) is the operator's own: its paths are
// absolute or relative to its directory, dir. A list read from a URL is
// not: it chooses the hosts its Sources are fetched from, so naming a
// local file would send that file's token (a service account's, say) to
// a host of the list's choosing. Its paths are resolved inside dir, the
// directory the operator allows (RemoteSources.FilesDir), and nowhere
// else; with no such directory it names no file at all.
type filesPolicy struct {
	dir    string
	remote bool
}

// path makes a credential file's path absolute under the policy.
func (fp filesPolicy) path(v string) (string, error) {
	if v == "" {
		return "", errors.New("empty file name")
	}
	p := filepath.FromSlash(v)
	if !fp.remote {
		if filepath.IsAbs(p) {
			return filepath.Clean(p), nil
		}
		return filepath.Join(fp.dir, p), nil
	}
	if fp.dir == "" {
		return "", fmt.Errorf("%q: a sources list read from a URL may not name local files unless the operator allows a directory for them (--sources-files-dir)", v)
	}
	return remoteFilePath(fp.dir, v)
}

// remoteFilePath resolves v, a path a remote list names, inside dir: a
// relative path with no ".." and no symbolic link that leads out of dir.
// The link check is made when the list is read: dir is the operator's, so
// a link changed in it later is the operator's doing, not the list's.
func remoteFilePath(dir, v string) (string, error) {
	p := filepath.FromSlash(v)
	if filepath.IsAbs(p) || filepath.VolumeName(p) != "" || strings.HasPrefix(v, "/") || strings.HasPrefix(v, `\`) {
		return "", fmt.Errorf("%q: a sources list read from a URL names files by a path relative to --sources-files-dir, not an absolute one", v)
	}
	if filepath.Clean(p) == "." {
		return "", fmt.Errorf("%q: names --sources-files-dir itself, not a file in it", v)
	}
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return "", fmt.Errorf("%q: \"..\" may not leave --sources-files-dir", v)
		}
	}
	if !filepath.IsLocal(p) {
		// Windows: a reserved device name (NUL, COM1, CONIN$, also as
		// a/NUL) opens a device wherever the path points.
		return "", fmt.Errorf("%q: not a file name inside --sources-files-dir", v)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("--sources-files-dir: %w", err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, p))
	if err != nil {
		return "", fmt.Errorf("%q in --sources-files-dir: %w", v, err)
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%q: a symbolic link out of --sources-files-dir", v)
	}
	return real, nil
}

// checkHTTPURL accepts an absolute http(s) URL without user information.
func checkHTTPURL(v string) error {
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("bad URL %q: %v", v, unwrapURLError(err))
	}
	if s := strings.ToLower(u.Scheme); (s != "http" && s != "https") || u.Host == "" {
		return fmt.Errorf("bad URL %q: want an absolute http:// or https:// URL", v)
	}
	if u.User != nil {
		return fmt.Errorf("URL %s: credentials do not belong in the sources file; put them in a file named with --netrc-file or --bearer-token-file", u.Redacted())
	}
	return nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// checkDest cleans a DEST and checks it names a directory under the root
// of its own, or a storage location (s3://BUCKET/PREFIX: see DestLocation).
func checkDest(v string) (string, error) {
	if scheme, rest, ok := strings.Cut(v, "://"); ok && scheme != "" && !strings.EqualFold(scheme, "file") && strings.Trim(strings.ToLower(scheme), "abcdefghijklmnopqrstuvwxyz0123456789+.-") == "" {
		switch loc := strings.TrimRight(v, "/"); {
		case strings.ContainsAny(v, "\t\\?#"):
			return "", fmt.Errorf("DEST %q: a tab, backslash, ? or # in a location", v)
		case strings.Trim(rest, "/") == "":
			return "", fmt.Errorf("DEST %q: want %s://BUCKET/PREFIX", v, scheme)
		default:
			return loc, nil
		}
	}
	switch {
	case v == "":
		return "", errors.New("empty DEST")
	case strings.Contains(v, "\t"):
		return "", fmt.Errorf("DEST %q: a tab in a directory name", v)
	case strings.Contains(v, `\`):
		return "", fmt.Errorf("DEST %q: use / to separate directories", v)
	}
	d := path.Clean(v)
	first, _, _ := strings.Cut(d, "/")
	switch {
	case strings.HasPrefix(d, "/") || (len(d) >= 2 && d[1] == ':'):
		// c:x is relative to drive C's current directory on Windows.
		return "", fmt.Errorf("DEST %q: want a path relative to --root", v)
	case d == ".":
		return "", fmt.Errorf("DEST %q: the root itself cannot be a mirror; name a directory under it", v)
	case first == "..":
		return "", fmt.Errorf("DEST %q: leaves --root", v)
	case strings.HasSuffix(first, ":"):
		// s3:/bucket, a location misspelt, must not become a directory.
		return "", fmt.Errorf("DEST %q: a location is written SCHEME://…, a directory's name does not end with \":\"", v)
	case strings.EqualFold(first, ".resourcesync") || strings.EqualFold(first, ".aggregate"):
		return "", fmt.Errorf("DEST %q: inside %s, where state is kept", v, first)
	}
	return d, nil
}

// ParseSources reads a sources file (the format is documented on Source).
// dir is the file's directory, to which relative credential-file paths
// are resolved. dir "" is a list read from a URL, which names no local
// file: see ParseRemoteSources.
// Every error matches ErrSources and names the line:
//
//	sources:12: --poll-interval: bad duration "x": ...
func ParseSources(r io.Reader, dir string) ([]Source, error) {
	if dir == "" {
		return parseSources(r, filesPolicy{remote: true})
	}
	if a, err := filepath.Abs(dir); err == nil {
		dir = a
	}
	return parseSources(r, filesPolicy{dir: dir})
}

// ParseRemoteSources reads a sources list fetched from a URL: the hosts
// it names are its author's choice, so the credential files it names
// (--bearer-token-file, --netrc-file, --ca-cert) are paths relative to
// filesDir, the directory the operator allows, without ".." and without a
// symbolic link out of it; filesDir "" allows no file at all.
func ParseRemoteSources(r io.Reader, filesDir string) ([]Source, error) {
	if filesDir != "" {
		if a, err := filepath.Abs(filesDir); err == nil {
			filesDir = a
		}
	}
	return parseSources(r, filesPolicy{dir: filesDir, remote: true})
}

func parseSources(r io.Reader, files filesPolicy) ([]Source, error) {
	sc := bufio.NewScanner(r)
	// The scanner's buffer bounds a line (and its CR LF): a longer one is
	// ErrTooLong.
	sc.Buffer(make([]byte, 0, 4096), MaxSourcesLine+2)
	var (
		out   []Source
		lines int
	)
	for sc.Scan() {
		lines++
		if lines > MaxSourcesLines {
			return nil, fmt.Errorf("%w: more than %d lines", ErrSources, MaxSourcesLines)
		}
		line := sc.Bytes()
		if len(line) > MaxSourcesLine {
			return nil, fmt.Errorf("%w:%d: line longer than %d KiB", ErrSources, lines, MaxSourcesLine>>10)
		}
		if lines == 1 {
			line = bytes.TrimPrefix(line, []byte("\ufeff")) // a BOM from a Windows editor
		}
		s, ok, err := parseSourceLine(string(line), files)
		if err != nil {
			return nil, fmt.Errorf("%w:%d: %s", ErrSources, lines, err)
		}
		if ok {
			s.Line = lines
			out = append(out, s)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w:%d: line longer than %d KiB", ErrSources, lines+1, MaxSourcesLine>>10)
		}
		return nil, fmt.Errorf("%w: reading: %w", ErrSources, err)
	}
	if err := checkDests(out); err != nil {
		return nil, err
	}
	return out, nil
}

// DestLocation reports whether a Source's DEST is a storage location
// (s3://BUCKET/PREFIX) rather than a directory under the root: its mirror
// is written through a storage.Target (storage.OpenTarget) and its state
// kept under ROOT/.aggregate/targets/ (see TargetStateDir). A cleaned
// directory DEST never holds "://" (path.Clean makes it ":/").
func DestLocation(dest string) bool { return strings.Contains(dest, "://") }

// TargetStateDir is the directory of the state of the mirror into the
// location DEST dest, under the aggregator's root: named after the
// location (storage.FileName), so that a line's state follows its DEST.
func TargetStateDir(root, dest string) string {
	return filepath.Join(root, ".aggregate", "targets", storage.FileName(dest))
}

// checkDests refuses two Sources sharing a directory: the same DEST, or
// one inside the other (its files would be the other's, deleted by its
// runs). DESTs are compared without case, as macOS and Windows do.
func checkDests(ss []Source) error {
	seen := make(map[string]int, len(ss))
	for i, s := range ss {
		k := strings.ToLower(s.Dest)
		if j, ok := seen[k]; ok {
			return fmt.Errorf("%w:%d: DEST %q is already line %d's (%q)", ErrSources, s.Line, s.Dest, ss[j].Line, ss[j].Dest)
		}
		seen[k] = i
	}
	for _, s := range ss {
		k := strings.ToLower(s.Dest)
		for i := strings.LastIndexByte(k, '/'); i > 0; i = strings.LastIndexByte(k[:i], '/') {
			if j, ok := seen[k[:i]]; ok {
				in, out := s, ss[j] // in is inside out
				if in.Line > out.Line {
					return fmt.Errorf("%w:%d: DEST %q is inside line %d's DEST %q: two mirrors cannot share a directory", ErrSources, in.Line, in.Dest, out.Line, out.Dest)
				}
				return fmt.Errorf("%w:%d: DEST %q contains line %d's DEST %q: two mirrors cannot share a directory", ErrSources, out.Line, out.Dest, in.Line, in.Dest)
			}
		}
	}
	return nil
}

// token is one field of a line.
type token struct {
	text string
	opt  bool // begins with an unquoted "--"
}

// splitLine splits a line into fields: blanks separate them, "..."
// quotes (with \" and \\) and a blank followed by # starts a comment.
func splitLine(line string) ([]token, error) {
	var (
		toks []token
		b    strings.Builder
		in   bool // inside a field
		tok  token
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if in {
				tok.text = b.String()
				toks = append(toks, tok)
				in = false
			}
			continue
		case c < 0x20 || c == 0x7f:
			return nil, fmt.Errorf("control character %q in the line", c)
		case c == '#' && !in:
			return toks, nil
		}
		if !in {
			in = true
			b.Reset()
			tok = token{opt: strings.HasPrefix(line[i:], "--")}
		}
		if c != '"' {
			b.WriteByte(c)
			continue
		}
		// A quoted part, up to the closing quote.
		closed := false
		for i++; i < len(line); i++ {
			c = line[i]
			if c < 0x20 && c != '\t' || c == 0x7f {
				return nil, fmt.Errorf("control character %q in the line", c)
			}
			if c == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\') {
				i++
				b.WriteByte(line[i])
				continue
			}
			if c == '"' {
				closed = true
				break
			}
			b.WriteByte(c)
		}
		if !closed {
			return nil, errors.New("unterminated quote")
		}
	}
	if in {
		tok.text = b.String()
		toks = append(toks, tok)
	}
	return toks, nil
}

// parseSourceLine parses one line; ok is false for a blank or comment line.
func parseSourceLine(line string, files filesPolicy) (s Source, ok bool, err error) {
	toks, err := splitLine(line)
	if err != nil || len(toks) == 0 {
		return s, false, err
	}
	if toks[0].opt || len(toks) < 2 || toks[1].opt {
		return s, false, errors.New("want URL DEST [--option ...]")
	}
	s.URL = toks[0].text
	if u, ok := httpclient.AssumeHTTPS(s.URL); ok {
		// "example.org/rs", as curl and wget take it: the command prints
		// what it took (Source.Typed).
		s.Typed, s.URL = s.URL, u
	}
	if err := checkHTTPURL(s.URL); err != nil {
		return s, false, err
	}
	if s.Dest, err = checkDest(toks[1].text); err != nil {
		return s, false, err
	}
	s.ID = s.Dest
	s.Kind = KindResourceSync
	given := map[string]bool{}
	for i := 2; i < len(toks); i++ {
		t := toks[i]
		if !t.opt {
			return s, false, fmt.Errorf("unexpected field %q after DEST (options begin with --; quote a value with blanks)", t.text)
		}
		name, val, hasVal := strings.Cut(t.text[2:], "=")
		o := lookupOption(name)
		if o == nil {
			msg := fmt.Sprintf("unknown option --%s", name)
			if m := suggestOption(name); m != "" {
				msg += fmt.Sprintf(" (did you mean --%s?)", m)
			}
			return s, false, errors.New(msg)
		}
		if given[o.name] && !o.repeat {
			return s, false, fmt.Errorf("--%s given twice", o.name)
		}
		given[o.name] = true
		if o.flag {
			if hasVal {
				return s, false, fmt.Errorf("--%s takes no value", name)
			}
		} else if !hasVal {
			if i+1 >= len(toks) || toks[i+1].opt {
				return s, false, fmt.Errorf("--%s: missing value", name)
			}
			i++
			val = toks[i].text
		}
		if err := o.set(&s, val, files); err != nil {
			return s, false, fmt.Errorf("--%s: %w", name, err)
		}
	}
	if s.Kind == KindSDShare {
		for _, x := range sdshareExcludes {
			if given[x] {
				return s, false, fmt.Errorf("--sdshare excludes --%s (an SDShare collection has no %s)", x, sdshareLacks[x])
			}
		}
	}
	return s, true, nil
}

var sdshareLacks = map[string]string{
	"follow":      "change notifications; it is polled every --poll-interval",
	"set":         "ResourceSync sets",
	"no-dumps":    "Resource Dumps",
	"max-delete":  "file deletions to limit: it is merged into the graph store",
	"no-delete":   "file deletions: it is merged into the graph store",
	"allow-reset": "file deletions: it is merged into the graph store",
	"include":     "files to filter: it is merged into the graph store",
	"exclude":     "files to filter: it is merged into the graph store",
	"filter-from": "files to filter: it is merged into the graph store",
	"force":       "files to replace: it is merged into the graph store",
}

// suggestOption names the known option a misspelt name most likely
// meant, or "": only when it is a trivial slip (one or two edits).
func suggestOption(name string) string {
	best, bestD, ties := "", 3, 0
	names := make([]string, 0, len(sourceOptions)+len(sourceAliases))
	for _, o := range sourceOptions {
		names = append(names, o.name)
	}
	for a := range sourceAliases {
		names = append(names, a)
	}
	slices.Sort(names)
	for _, n := range names {
		d := editDistance(strings.ToLower(name), n)
		switch {
		case d < bestD:
			best, bestD, ties = n, d, 0
		case d == bestD:
			ties++
		}
	}
	if ties > 0 || best == "" {
		return ""
	}
	if a, ok := sourceAliases[best]; ok {
		return a
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// FormatSources writes ss as a sources file that ParseSources reads back
// to the same Sources (but for Line): one line each, options in a fixed
// order, fields quoted where needed.
func FormatSources(w io.Writer, ss []Source) error {
	bw := bufio.NewWriter(w)
	for _, s := range ss {
		f := []string{quoteField(s.URL), quoteField(s.Dest)}
		opt := func(name, v string) { f = append(f, "--"+name, quoteField(v)) }
		if s.Kind == KindSDShare {
			f = append(f, "--sdshare")
		}
		if s.Interval != 0 {
			opt("poll-interval", s.Interval.String())
		}
		if s.Follow {
			f = append(f, "--follow")
		}
		for _, x := range s.Sets {
			opt("set", x)
		}
		if s.BearerTokenFile != "" {
			opt("bearer-token-file", s.BearerTokenFile)
		}
		if s.NetrcFile != "" {
			opt("netrc-file", s.NetrcFile)
		}
		if s.CACertFile != "" {
			opt("ca-cert", s.CACertFile)
		}
		for _, h := range s.AllowHosts {
			opt("allow-host", h)
		}
		if s.MaxDelete != "" {
			opt("max-delete", s.MaxDelete)
		}
		if s.NoDelete {
			f = append(f, "--no-delete")
		}
		if s.AllowReset {
			f = append(f, "--allow-reset")
		}
		if s.NoDumps {
			f = append(f, "--no-dumps")
		}
		if s.BaseURL != "" {
			opt("base-url", s.BaseURL)
		}
		if s.Workers != 0 {
			opt("workers", strconv.Itoa(s.Workers))
		}
		if s.Timeout != 0 {
			opt("timeout", s.Timeout.String())
		}
		for _, x := range s.Filters {
			name, v, _ := strings.Cut(x, " ")
			opt(name, v)
		}
		if s.Force {
			f = append(f, "--force")
		}
		bw.WriteString(strings.Join(f, " "))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// quoteField quotes v when it would not read back as one plain field.
func quoteField(v string) string {
	if v != "" && !strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "#") && !strings.ContainsAny(v, " \t\"\\") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(v) + `"`
}
