package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

// flagConcepts is the command line's vocabulary: one canonical spelling per
// concept, and the spellings it must not take (a synonym may live on only
// as a hidden alias of the canonical flag, listed in hiddenAliases). Add a
// row when a flag for a new concept is added; TestFlagVocabulary then
// fails when a command spells it another way.
var flagConcepts = []struct {
	canonical string
	synonyms  []string
	usage     string // a word the flag's --help line contains: the meaning is the same everywhere
}{
	{"base-url", []string{"base", "base-uri", "baseurl", "url-base"}, "URL"},
	{"no-dumps", []string{"no-dump", "nodump", "nodumps", "skip-dumps"}, "Dumps"},
	{"poll-interval", []string{"interval", "poll", "poll-every", "polling-interval"}, "poll"},
	{"rate", []string{"requests-per-second", "rps", "max-rate"}, "requests per second"},
	{"change-rate", []string{"changes-per-second", "changerate"}, "changes per second"},
	{"verbose", []string{"debug", "loud"}, ""},
	{"quiet", []string{"silent"}, ""},
	{"dry-run", []string{"dryrun", "simulate-only", "pretend"}, ""},
	{"json", []string{"output-json", "json-lines"}, "JSON"},
	{"state", []string{"state-dir", "statedir", "state-directory"}, "state"},
	{"timeout", []string{"request-timeout", "http-timeout"}, ""},
	{"workers", []string{"concurrency", "jobs", "parallel", "threads"}, ""},
	{"allow-host", []string{"allow-hosts", "allowed-host", "allowed-hosts"}, ""},
	{"log-file", []string{"logfile", "log-to", "log-output"}, ""},
	// Issue 19's new flags (authentication, TLS, safe defaults).
	{"header", []string{"headers", "http-header", "add-header"}, ""},
	{"bearer-token-file", []string{"token-file", "bearer-file", "bearer-token-path"}, ""},
	{"ca-cert", []string{"cacert", "ca-file", "cafile", "ca-bundle", "ca-certs"}, ""},
	{"insecure", []string{"no-verify", "insecure-skip-verify", "skip-tls-verify", "no-check-certificate"}, ""},
	{"auth-token-file", []string{"auth-token", "access-token-file"}, ""},
	{"basic-auth-file", []string{"htpasswd", "htpasswd-file", "basic-auth"}, ""},
	{"max-delete", []string{"max-deletes", "delete-limit", "max-deletions"}, ""},
	{"allow-empty", []string{"allow-empty-dir", "force-empty"}, ""},
	{"changelist-index", []string{"change-list-index", "changelist-idx"}, ""},
	{"max-conns", []string{"max-connections", "conn-limit", "connections", "max-conn"}, "connections"},
}

// shortFlags: a one-letter flag means the same on every command.
var shortFlags = map[string]string{"v": "verbose", "q": "quiet", "h": "help", "V": "version"}

// TestFlagVocabulary walks every command's flags: a concept is spelled one
// way everywhere, an old spelling is only a hidden alias, one letter means
// one thing, and every flag carrying a secret can come from the
// environment (RESOURCESYNC_<FLAG>).
func TestFlagVocabulary(t *testing.T) {
	app := setUpApp(t)
	synonymOf := map[string]string{}
	for _, c := range flagConcepts {
		for _, s := range c.synonyms {
			synonymOf[s] = c.canonical
		}
	}
	walkCommands(app, func(path []string, c *cli.Command) {
		where := strings.Join(append([]string{"resourcesync"}, path...), " ")
		for _, f := range c.Flags {
			names := f.Names()
			name := names[0]
			if canon, ok := synonymOf[name]; ok {
				t.Errorf("%s --%s: spell it --%s (keep --%s as a hidden alias in hiddenAliases)", where, name, canon, name)
			}
			for _, a := range names[1:] {
				if canon, ok := synonymOf[a]; ok && (canon != name || !slices.Contains(hiddenAliases[name], a)) {
					t.Errorf("%s --%s: alias --%s is a spelling of --%s; only a hidden alias of --%s may keep it", where, name, a, canon, canon)
				}
				if long, ok := shortFlags[a]; ok && long != name {
					t.Errorf("%s: -%s is --%s here but --%s elsewhere", where, a, name, long)
				}
			}
			for _, cc := range flagConcepts {
				if cc.canonical == name && cc.usage != "" {
					if u, ok := f.(cli.DocGenerationFlag); ok && !strings.Contains(u.GetUsage(), cc.usage) {
						t.Errorf("%s --%s: its help %q does not say %q: one name, one meaning", where, name, u.GetUsage(), cc.usage)
					}
				}
			}
			// --help never shows a hidden alias.
			if hide := hiddenAliases[name]; len(hide) > 0 {
				help := f.String()
				for _, h := range hide {
					if strings.Contains(help, "--"+h+" ") || strings.Contains(help, "--"+h+",") || strings.Contains(help, "-"+h+"\t") {
						t.Errorf("%s: the help line %q shows the hidden alias --%s", where, help, h)
					}
					if !slices.Contains(names, h) {
						t.Errorf("%s --%s: old spelling --%s not accepted", where, name, h)
					}
				}
			}
			if secretFlag(name) && len(flagEnvVars(f)) == 0 {
				t.Errorf("%s --%s carries a secret but is read from no environment variable", where, name)
			}
		}
		// -v and -q reach every command that runs something.
		if c.Action != nil && len(c.Commands) == 0 && !slices.Contains([]string{"help", "completion", "version"}, c.Name) {
			for _, short := range []string{"v", "q"} {
				if !hasFlagInTree(c, short) {
					t.Errorf("%s: no -%s", where, short)
				}
			}
		}
	})
}

// hasFlag reports whether c or an ancestor's persistent flag answers to name.
func hasFlagInTree(c *cli.Command, name string) bool {
	for _, p := range c.Lineage() {
		for _, f := range p.Flags {
			if slices.Contains(f.Names(), name) {
				if lf, ok := f.(cli.LocalFlag); p == c || !ok || !lf.IsLocal() {
					return true
				}
			}
		}
	}
	return false
}

// TestOldFlagSpellings: the spellings of the previous releases still work,
// and mean what the new ones mean.
func TestOldFlagSpellings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		get  func(*cli.Command) any
		want any
	}{
		{[]string{"sync", "--base", "http://127.0.0.1/x/", "--no-dump", "S", "D"}, func(c *cli.Command) any {
			return c.String("base-url") + " " + map[bool]string{true: "nodumps"}[c.Bool("no-dumps")]
		}, "http://127.0.0.1/x/ nodumps"},
		{[]string{"sync", "--base-url", "http://127.0.0.1/y/", "--no-dumps", "S", "D"}, func(c *cli.Command) any {
			return c.String("base") + " " + map[bool]string{true: "nodumps"}[c.Bool("no-dump")]
		}, "http://127.0.0.1/y/ nodumps"},
		{[]string{"simulate", "--rate", "7"}, func(c *cli.Command) any { return c.Float("change-rate") }, 7.0},
		{[]string{"sdshare", "sync", "--interval", "3s", "U"}, func(c *cli.Command) any { return c.Duration("poll-interval").String() }, "3s"},
		{[]string{"hub", "-v"}, func(c *cli.Command) any { return c.Bool("verbose") }, true},
		{[]string{"validate", "-q", "x"}, func(c *cli.Command) any { return c.Bool("quiet") }, true},
		{[]string{"sdshare", "serve", "-v", "-q"}, func(c *cli.Command) any { return c.Bool("verbose") && c.Bool("quiet") }, true},
	} {
		var got any
		app := newApp(&strings.Builder{}, &strings.Builder{})
		walkCommands(app, func(_ []string, c *cli.Command) {
			if c.Action != nil {
				c.Action = func(_ context.Context, c *cli.Command) error { got = tc.get(c); return nil }
			}
		})
		if err := app.Run(context.Background(), append([]string{"resourcesync"}, tc.args...)); err != nil || got != tc.want {
			t.Errorf("%v: got %v (%v), want %v", tc.args, got, err, tc.want)
		}
	}
	// Secrets come from the environment.
	t.Setenv("RESOURCESYNC_HUB_PUBLISH_TOKEN", "tok-from-env")
	t.Setenv("RESOURCESYNC_HUB_TOKEN", "hubtok-from-env")
	for _, tc := range []struct {
		args []string
		flag string
		want string
	}{
		{[]string{"hub"}, "publish-token", "tok-from-env"},
		{[]string{"serve", "DIR"}, "hub-token", "hubtok-from-env"},
		{[]string{"sdshare", "serve", "a=b"}, "hub-token", "hubtok-from-env"},
	} {
		var got string
		app := newApp(&strings.Builder{}, &strings.Builder{})
		walkCommands(app, func(_ []string, c *cli.Command) {
			if c.Action != nil {
				c.Action = func(_ context.Context, c *cli.Command) error { got = c.String(tc.flag); return nil }
			}
		})
		if err := app.Run(context.Background(), append([]string{"resourcesync"}, tc.args...)); err != nil || got != tc.want {
			t.Errorf("%v --%s from the environment: %q (%v), want %q", tc.args, tc.flag, got, err, tc.want)
		}
	}
}
