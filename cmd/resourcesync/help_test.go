package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

// The shape of --help (issue 32, item 1): a page a person reads on one
// screen, like rclone's and restic's.
const (
	helpMaxCols      = 100 // no line wider, whatever the terminal
	helpPlainCols    = 80  // the width when stdout is not a terminal
	helpFlagsByLine  = 40  // the flags start by this line
	helpMaxPageLines = 60  // the longest page, but for helpLongPages
)

// helpLongPages are the commands whose --help is longer than
// helpMaxPageLines, with the most it may have and why: each flag is one
// line already (its long form is in a help topic), and the flags are
// grouped, so what is left is their number.
var helpLongPages = map[string]struct {
	lines  int
	reason string
}{
	"serve":     {77, "47 flags in 7 groups: a directory, a server, documents and feeds, notifications (WebSub and the live push), OAI-PMH harvesting, a bucket's endpoint and TLS, output"},
	"sync":      {77, "45 flags in 8 groups: modes and filters (--include, --exclude, --filter-from), state (a bucket's), safety, transfers (with --bwlimit), --follow, credentials and TLS (a bucket's endpoint too), output (with --log-format)"},
	"publish":   {61, "31 flags in 6 groups: a directory, documents, dumps and their archives, feeds, a bucket's endpoint and TLS, output"},
	"aggregate": {66, "36 flags in 8 groups: the sources, the mirrors, state, transfers (with --bwlimit), --follow, RDF stores, a bucket's endpoint and TLS, output"},
}

// commandPaths are the argument paths of every command of the tree but
// the help commands (["sdshare", "sync"]), the root first ([]).
func commandPaths(t *testing.T) [][]string {
	t.Helper()
	var paths [][]string
	walkCommands(setUpApp(t), func(path []string, c *cli.Command) {
		if c.Name == "help" || c.Hidden {
			return
		}
		paths = append(paths, slices.Clone(path))
	})
	return paths
}

// flagSectionRE is a section heading ("Options:", "Server:", "OPTIONS:")
// whose next line is a flag.
var flagSectionRE = regexp.MustCompile(`^[A-Z][A-Za-z ,-]*:$`)

// flagsStart is the line (1-based) where the flags of a --help page start:
// the heading of the first group of flags; 0 when there is none.
func flagsStart(lines []string) int {
	for i := 0; i+1 < len(lines); i++ {
		if flagSectionRE.MatchString(lines[i]) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "-") {
			return i + 1
		}
	}
	return 0
}

// TestHelpShape: the --help of every command and subcommand is a usage
// line, a short description and the flags: no line wider than 80 columns
// (stdout is no terminal here; 100 at most anywhere), the flags by line 40,
// at most 60 lines (helpLongPages: the exceptions, and why).
func TestHelpShape(t *testing.T) {
	for _, path := range commandPaths(t) {
		name := strings.Join(path, " ")
		code, out, errOut := runCLI(t, append(slices.Clone(path), "--help")...)
		if code != 0 || errOut != "" {
			t.Errorf("%q --help: exit %d, stderr %q", name, code, errOut)
			continue
		}
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if !strings.HasPrefix(lines[0], "Usage: resourcesync") {
			t.Errorf("%q --help starts with %q, want the usage line", name, lines[0])
		}
		for i, l := range lines {
			if n := len([]rune(l)); n > helpPlainCols || n > helpMaxCols {
				t.Errorf("%q --help line %d is %d columns wide (at most %d): %q", name, i+1, n, helpPlainCols, l)
			}
		}
		if at := flagsStart(lines); at == 0 || at > helpFlagsByLine {
			t.Errorf("%q --help: the flags start at line %d, want by line %d", name, at, helpFlagsByLine)
		}
		limit := helpMaxPageLines
		if long, ok := helpLongPages[name]; ok {
			limit = long.lines
			if len(lines) <= helpMaxPageLines {
				t.Errorf("%q --help has %d lines: remove it from helpLongPages", name, len(lines))
			}
		}
		if len(lines) > limit {
			t.Errorf("%q --help has %d lines, more than %d", name, len(lines), limit)
		}
	}
}

// TestHelpWidth: on a terminal the help wraps to its width, up to 100
// columns, and never wider than the width where it can break a line.
func TestHelpWidth(t *testing.T) {
	app := setUpApp(t)
	walkCommands(app, func(path []string, c *cli.Command) {
		if c.Name == "help" {
			return
		}
		narrow := strings.Count(renderHelp(c, helpPlainCols), "\n")
		for _, w := range []int{helpMaxCols, 200} {
			page := renderHelp(c, min(w, helpMaxCols))
			for _, l := range strings.Split(page, "\n") {
				if len([]rune(l)) > helpMaxCols {
					t.Errorf("%v at width %d: %q", path, w, l)
				}
			}
			if n := strings.Count(page, "\n"); n > narrow {
				t.Errorf("%v: %d lines at width %d, %d at %d", path, n, w, narrow, helpPlainCols)
			}
		}
	})
}

// TestHelpCommandPairs: help A B prints what A B --help prints, for every
// command (help sdshare sync printed sdshare's help), and so does A help B.
func TestHelpCommandPairs(t *testing.T) {
	for _, path := range commandPaths(t) {
		if len(path) == 0 {
			continue
		}
		_, want, _ := runCLI(t, append(slices.Clone(path), "--help")...)
		code, got, errOut := runCLI(t, append([]string{"help"}, path...)...)
		if code != 0 || errOut != "" || got != want {
			t.Errorf("help %s: exit %d, stderr %q; stdout is not %q --help's:\n%s", strings.Join(path, " "), code, errOut, path, firstDiff(got, want))
		}
		if len(path) == 2 {
			code, got, errOut := runCLI(t, path[0], "help", path[1])
			if code != 0 || errOut != "" || got != want {
				t.Errorf("%s help %s: exit %d, stderr %q; not %q --help's:\n%s", path[0], path[1], code, errOut, path, firstDiff(got, want))
			}
		}
	}
	_, want, _ := runCLI(t, "--help")
	for _, args := range [][]string{{"help"}, {"h"}, {}} {
		if code, got, _ := runCLI(t, args...); code != 0 || got != want {
			t.Errorf("%v: exit %d, not the root's --help:\n%s", args, code, firstDiff(got, want))
		}
	}
}

// TestHelpUnknown: help NOSUCH is a usage error (exit 2, as every usage
// error) that says so and lists the commands and the topics.
func TestHelpUnknown(t *testing.T) {
	_, topics, _ := runCLI(t, "help", "topics")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"help", "nosuch"}, []string{`unknown command or help topic "nosuch"`, "commands: validate, serve", "topics: layout", "exit-status"}},
		{[]string{"help", "synk"}, []string{`"synk"`, `did you mean "sync"?`}},
		{[]string{"help", "stat"}, []string{`"stat"`, `did you mean "state"?`}},
		{[]string{"help", "sdshare", "nosuch"}, []string{`unknown command "nosuch"`, "serve, sync, export, receive"}},
		{[]string{"sdshare", "help", "nosuch"}, []string{`unknown command "nosuch"`}},
		{[]string{"help", "sync", "nosuch"}, []string{`unknown command "nosuch": resourcesync sync has no subcommands`}},
		{[]string{"help", "sdshare", "sync", "nosuch"}, []string{`resourcesync sdshare sync has no subcommands`}},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitUsage || out != "" {
			t.Errorf("%v: exit %d, stdout %q; want %d and nothing", tc.args, code, out, exitUsage)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, errOut)
			}
		}
	}
	if topics == "" {
		t.Error("help topics printed nothing")
	}
}

// helpTopicNames are the topics help topics lists.
func helpTopicNames(t *testing.T) []string {
	t.Helper()
	code, out, errOut := runCLI(t, "help", "topics")
	if code != 0 {
		t.Fatalf("help topics: exit %d\n%s", code, errOut)
	}
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if m := regexp.MustCompile(`^  ([a-z][a-z-]*)  `).FindStringSubmatch(l); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

// TestHelpTopics: help topics lists every topic, help TOPIC prints it (its
// name first, no line over 100 columns), no topic is named as a command,
// and the root's --help names them all.
func TestHelpTopics(t *testing.T) {
	names := helpTopicNames(t)
	if len(names) < 10 {
		t.Fatalf("help topics lists %d topics: %q", len(names), names)
	}
	_, root, _ := runCLI(t, "--help")
	app := setUpApp(t)
	for _, n := range names {
		code, out, errOut := runCLI(t, "help", n)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "resourcesync help "+n+": ") || strings.Count(out, "\n") < 5 {
			t.Errorf("help %s: exit %d, stderr %q, stdout %.200q", n, code, errOut, out)
		}
		for i, l := range strings.Split(out, "\n") {
			if len([]rune(l)) > helpMaxCols {
				t.Errorf("help %s line %d: %d columns", n, i+1, len([]rune(l)))
			}
		}
		if app.Command(n) != nil {
			t.Errorf("topic %q is also a command's name: help %s cannot show both", n, n)
		}
		if !strings.Contains(root, n) {
			t.Errorf("the root's --help does not name the topic %s", n)
		}
	}
	if code, out, _ := runCLI(t, "help", "topics"); code != 0 || !strings.Contains(out, "resourcesync help TOPIC") {
		t.Errorf("help topics: exit %d\n%s", code, out)
	}
}

// helpHeadingRE is a heading of the old help texts: an indented line of
// capitals ("   STATE STORE (--store URL)", "   IN A BROWSER").
var helpHeadingRE = regexp.MustCompile(`^ {3,6}([A-Z][A-Z0-9-]*(?: [A-Z][A-Z0-9-]*)*)(?: \(.*\))?$`)

// helpFactRE are the facts of a text that must not get lost: flags,
// environment variables, rule IDs, figures with their unit, and the special
// values of a flag ("(0: never", "(-1: no limit").
var helpFactRE = regexp.MustCompile(`--[a-z][a-z0-9-]+|\$[A-Z][A-Z_]{3,}|RS-[A-Z0-9]+-?[A-Z0-9*]*|\b\d[\d,.]*(?: ?(?:s|ms|KiB/s|KiB|MiB|GiB|bytes|hours|minutes|seconds|%)\b|-fold)|\(-?\d+%?: [a-z]+(?: [a-z]+)?`)

// TestHelpLostNothing: what the long --help texts said before (their
// copies in testdata/help-before, from before help topics existed) is
// still said: every heading of their descriptions is a heading of a help
// topic, and every flag, environment variable, rule ID and figure of their
// descriptions is in a topic or in a command's --help.
func TestHelpLostNothing(t *testing.T) {
	var topics strings.Builder
	for _, n := range helpTopicNames(t) {
		_, out, _ := runCLI(t, "help", n)
		topics.WriteString(out)
	}
	var all strings.Builder
	all.WriteString(topics.String())
	for _, path := range commandPaths(t) {
		_, out, _ := runCLI(t, append(slices.Clone(path), "--help")...)
		all.WriteString(out)
	}
	space := regexp.MustCompile(`\s+`)
	topicText, allText := space.ReplaceAllString(topics.String(), " "), space.ReplaceAllString(all.String(), " ")
	old, _ := filepath.Glob(filepath.Join("testdata", "help-before", "*.txt"))
	if len(old) < 17 {
		t.Fatalf("%d old help texts in testdata/help-before", len(old))
	}
	headings, facts := 0, 0
	for _, f := range old {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// The description: between DESCRIPTION: and the next section;
		// the flags' descriptions: after OPTIONS:.
		_, desc, _ := strings.Cut(string(b), "\nDESCRIPTION:\n")
		if i := regexp.MustCompile(`\n[A-Z][A-Z ]*:\n`).FindStringIndex(desc); i != nil {
			desc = desc[:i[0]]
		}
		_, opts, _ := strings.Cut(string(b), "\nOPTIONS:\n")
		var usages []string
		for _, l := range strings.Split(opts, "\n") {
			// "   --name placeholder   usage (default: ...)": the usage.
			if m := regexp.MustCompile(`^\s+--\S+.*?\s{2,}(\S.*?)(?: \(default: [^)]*\))?(?: \[\$.*\])?$`).FindStringSubmatch(l); m != nil {
				usages = append(usages, m[1])
			}
		}
		for _, l := range strings.Split(desc, "\n") {
			m := helpHeadingRE.FindStringSubmatch(l)
			if m == nil || len(m[1]) < 4 {
				continue
			}
			headings++
			if !strings.Contains(topicText, m[1]) {
				t.Errorf("%s: the heading %q is in no help topic", filepath.Base(f), m[1])
			}
		}
		for _, fact := range helpFactRE.FindAllString(space.ReplaceAllString(desc+" "+strings.Join(usages, " "), " "), -1) {
			facts++
			if !strings.Contains(allText, fact) {
				t.Errorf("%s: %q is in no help topic and no --help", filepath.Base(f), fact)
			}
		}
	}
	t.Logf("%d headings and %d facts of the old help texts checked", headings, facts)
	if headings < 30 || facts < 300 {
		t.Errorf("%d headings and %d facts checked: the check reads the old texts wrong", headings, facts)
	}
}
