// Package filter decides which paths under a Source a mirror takes, from
// rclone-style include and exclude rules: sync's --include, --exclude and
// --filter-from, and the same options on aggregate's sources lines.
//
// A rule is a glob and a sign. Rules are tried in the order given and the
// first whose glob matches a path decides (include or exclude); a path
// that no rule matches is included, unless an --include was given, which
// (as in rclone) ends the rules with an implicit "- **": naming what to
// take means taking nothing else.
//
// Glob syntax, on slash-separated paths relative to the Source's base
// (what the mirror's files are named under DEST):
//
//   - A component of the glob is matched against one component of the
//     path with path.Match: * is any run of characters but /, ? one
//     character but /, [a-z] and [^a-z] classes, \ quotes the next
//     character.
//   - A component that is exactly ** matches any number of components,
//     none included: dir/** is everything below dir, **/x.txt is x.txt
//     at any depth.
//   - A glob that starts with / is anchored at the Source's base; one that
//     does not matches the end of the path, at any depth (*.jpg is every
//     JPEG, a/b.txt is every b.txt in a directory a).
//   - A glob that ends with / names a directory: everything below it
//     (dir/ is dir/**).
//
// Matching is case-sensitive and takes time linear in the product of the
// glob's and the path's lengths, whatever the glob: no backtracking
// blow-up on hostile patterns (FuzzMatch).
package filter

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// ErrBadRule is a rule that cannot be used: a malformed glob, or a
// --filter-from line that is neither "+ GLOB", "- GLOB", a comment nor
// blank.
var ErrBadRule = errors.New("bad filter rule")

// Rule is one include (Include true) or exclude rule.
type Rule struct {
	Include bool
	Glob    string
}

func (r Rule) String() string {
	if r.Include {
		return "+ " + r.Glob
	}
	return "- " + r.Glob
}

// Filter is a compiled list of rules. The zero value and nil include
// every path. It is safe for concurrent use.
type Filter struct {
	rules []compiled
}

type compiled struct {
	include bool
	parts   []string // components; "**" matches any number of them
}

// New compiles rules, in order. A malformed glob is an error wrapping
// ErrBadRule that names it.
func New(rules []Rule) (*Filter, error) {
	f := &Filter{}
	for _, r := range rules {
		parts, err := compile(r.Glob)
		if err != nil {
			return nil, err
		}
		f.rules = append(f.rules, compiled{include: r.Include, parts: parts})
	}
	return f, nil
}

func compile(glob string) ([]string, error) {
	g := glob
	if g == "" || g == "/" {
		return nil, fmt.Errorf("%w: empty glob %q", ErrBadRule, glob)
	}
	anchored := strings.HasPrefix(g, "/")
	g = strings.TrimPrefix(g, "/")
	if strings.HasSuffix(g, "/") {
		g += "**"
	}
	var parts []string
	if !anchored {
		parts = append(parts, "**")
	}
	for _, c := range strings.Split(g, "/") {
		if c == "" {
			return nil, fmt.Errorf("%w: empty component in glob %q", ErrBadRule, glob)
		}
		if c == "**" {
			if len(parts) > 0 && parts[len(parts)-1] == "**" {
				continue // a/**/**/b is a/**/b
			}
		} else if _, err := path.Match(c, ""); err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrBadRule, glob, err)
		}
		parts = append(parts, c)
	}
	return parts, nil
}

// Include reports whether the path p (slash-separated, relative to the
// Source's base, no leading slash) is taken: the sign of the first rule
// that matches it, else true.
func (f *Filter) Include(p string) bool {
	if f == nil {
		return true
	}
	name := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for _, r := range f.rules {
		if match(r.parts, name) {
			return r.include
		}
	}
	return true
}

// Empty reports whether f has no rule (every path is included).
func (f *Filter) Empty() bool { return f == nil || len(f.rules) == 0 }

// Match reports whether glob matches the path p, with the syntax of the
// package comment.
func Match(glob, p string) (bool, error) {
	parts, err := compile(glob)
	if err != nil {
		return false, err
	}
	return match(parts, strings.Split(strings.TrimPrefix(p, "/"), "/")), nil
}

// match is the classic wildcard match with one backtracking point, on
// components: ** is the star, every other part matches exactly one
// component. Linear in len(parts)*len(name) at worst.
func match(parts, name []string) bool {
	pi, ni := 0, 0
	star, mark := -1, 0
	for ni < len(name) {
		switch {
		case pi < len(parts) && parts[pi] == "**":
			star, mark = pi, ni
			pi++
		case pi < len(parts) && one(parts[pi], name[ni]):
			pi++
			ni++
		case star >= 0:
			mark++
			pi, ni = star+1, mark
		default:
			return false
		}
	}
	for pi < len(parts) && parts[pi] == "**" {
		pi++
	}
	return pi == len(parts)
}

func one(glob, comp string) bool {
	ok, _ := path.Match(glob, comp) // compile checked the glob
	return ok
}

// Rules collects rules in the order they are given on a command line: it
// is the flag.Value behind --include and --exclude (each appends with its
// sign) and --filter-from (appends a file's rules). Filter compiles them.
type Rules struct {
	List []Rule
	// included: an --include was given, which ends the rules with "- **".
	included bool
}

// Add appends a rule. An include given this way (an --include) ends the
// rules with an implicit "- **"; one read from a file (AddFile) does not.
func (rs *Rules) Add(include bool, glob string) error {
	if _, err := compile(glob); err != nil {
		return err
	}
	rs.List = append(rs.List, Rule{Include: include, Glob: glob})
	if include {
		rs.included = true
	}
	return nil
}

// AddFile appends the rules of a --filter-from file (Parse).
func (rs *Rules) AddFile(r io.Reader, name string) error {
	l, err := Parse(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	rs.List = append(rs.List, l...)
	return nil
}

// Filter compiles the rules, with the implicit "- **" after an --include.
// No rule gives a nil Filter, which includes everything.
func (rs *Rules) Filter() (*Filter, error) {
	if rs == nil || len(rs.List) == 0 {
		return nil, nil
	}
	l := rs.List
	if rs.included {
		l = append(l[:len(l):len(l)], Rule{Include: false, Glob: "**"})
	}
	return New(l)
}

// Parse reads rules in rclone's --filter-from form: one per line, "+ GLOB"
// to include, "- GLOB" to exclude; blank lines and lines starting with #
// or ; are ignored. Leading and trailing spaces of a line are not part
// of its glob.
func Parse(r io.Reader) ([]Rule, error) {
	var out []Rule
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		var inc bool
		switch {
		case strings.HasPrefix(line, "+ "):
			inc = true
		case strings.HasPrefix(line, "- "):
		default:
			return nil, fmt.Errorf("%w: line %d: %q: want \"+ GLOB\" or \"- GLOB\"", ErrBadRule, n, line)
		}
		glob := strings.TrimSpace(line[2:])
		if _, err := compile(glob); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, Rule{Include: inc, Glob: glob})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRule, err)
	}
	return out, nil
}
