package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
)

// helpTopic is a page of `resourcesync help TOPIC`: the long text a
// command's --help leaves out (its flags say what they do; a topic says how
// the parts work together). docs/cli/topic-NAME.md is generated from it.
type helpTopic struct {
	Name    string // what follows "resourcesync help"; never a command's name
	Summary string // one line for the lists
	Text    string // the page: headings at column 0, text indented 3
}

// render is the page as `resourcesync help NAME` prints it.
func (t helpTopic) render() string {
	text := join(dedent(t.Text), flagDetailsHelp(t.Name))
	var b strings.Builder
	b.WriteString(wrapText("resourcesync help "+t.Name+": "+t.Summary, helpWidth, "", "   "))
	b.WriteString("\n")
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if len(l) <= helpMaxWidth {
			b.WriteString(l + "\n")
			continue
		}
		// A line the old texts let run long: wrapped at its indentation
		// (the tables, up to helpMaxWidth, keep their columns).
		indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
		b.WriteString(wrapText(l, helpWidth, indent, indent))
	}
	return b.String()
}

// flagDetail is the long description of a flag that --help shows short.
type flagDetail struct {
	Topic string // the help topic it is in
	Flag  string // the commands and the flag ("serve, publish --allow-empty")
	Text  string
}

// flagDetailsHelp is the FLAGS IN DETAIL section of a topic.
func flagDetailsHelp(topic string) string {
	var b strings.Builder
	for _, d := range flagDetails {
		if d.Topic == topic {
			b.WriteString("   " + d.Flag + "\n" + wrapText(d.Text, 78, "      ", "      "))
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "FLAGS IN DETAIL\n" + b.String()
}

// dedent removes the blank lines a text starts with (the constants of the
// commands' help begin with "\n\n" to be appended).
func dedent(s string) string {
	return strings.TrimLeft(s, "\n")
}

// section is a heading and its text, indented as the topics are.
func section(heading, text string) string {
	var b strings.Builder
	b.WriteString(heading + "\n")
	for _, l := range strings.Split(strings.Trim(text, "\n"), "\n") {
		if l == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("   " + l + "\n")
	}
	return b.String()
}

// join puts the parts of a topic one after the other, a blank line apart.
func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.Trim(p, "\n"); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n\n")
}

// helpTopics are the topics, in the order help topics lists them.
func helpTopics() []helpTopic {
	return []helpTopic{
		{"layout", "the URLs of a Source that serve and publish make, and what a browser sees there",
			join(section("SERVE", serveHelp), serveLayoutHelp, section("PUBLISH", publishHelp))},
		{"dumps", "Resource Dumps and Change Dumps: made on demand or as files, and the disk they take",
			join(serveDumpsHelp, documentsHelp)},
		{"safety", "what keeps an unmounted or emptied directory from deleting every mirror",
			join(serveEmptyHelp, section("DELETIONS IN A MIRROR (sync --max-delete, --allow-reset)", syncSafetyHelp))},
		{"state", "where serve, publish, simulate, oai serve and hub keep their state: bolt or PostgreSQL",
			join(storeHelp, hubStoreHelp)},
		{"mirroring", "how sync mirrors a Source: discovery, baseline, Change Lists, verification, --follow",
			join(section("SYNC", join(syncHelp, syncMoreHelp)), section("FILTERS AND --force", filterHelp))},
		{"validation", "what validate checks, its targets and its output",
			validateHelp},
		{"authentication", "credentials: what the servers require, what the clients send, TLS",
			join(credentialsHelp(), clientHelp)},
		{"connections", "the servers' connection limits and timeouts, and loopback's Host check",
			connectionsHelp()},
		{"notifications", "change notifications: the WebSub hub, its endpoints, delivery and admin pages",
			hubHelp},
		{"oai-pmh", "OAI-PMH: harvesting a repository into a Source, and offering a Source to harvesters",
			join(oaiHelp, section("OAI SERVE", oaiServeHelp))},
		{"sdshare-feeds", "sdshare serve: the feeds, formats, state, push and the ResourceSync view",
			join(section("SDSHARE", sdshareHelp), section("SDSHARE SERVE", sdshareServeHelp))},
		{"sdshare-mirror", "sdshare sync and export: keeping an RDF store in step, and printing it",
			join(section("SDSHARE SYNC", sdshareSyncHelp), section("SDSHARE EXPORT", sdshareExportHelp))},
		{"sdshare-push", "sdshare receive: applying pushed fragments, and the safety of an open endpoint",
			section("SDSHARE RECEIVE", sdshareReceiveHelp)},
		{"sources-file", "aggregate: the sources file, scheduling, shared state and the status page",
			section("AGGREGATE", aggregateHelp)},
		{"environment", "the environment variables a command reads (secrets out of sight of ps)",
			join(envHelp, envVarsHelp())},
		{"exit-status", "what the exit codes 0, 1 and 2 mean",
			join(exitStatusHelp, exitStatusByCommand())},
	}
}

// findTopic is the topic called name.
func findTopic(name string) (helpTopic, bool) {
	for _, t := range helpTopics() {
		if t.Name == name {
			return t, true
		}
	}
	return helpTopic{}, false
}

// credentialsHelp is the servers' part of the topic "authentication":
// what each server's credentials protect, then how they work (the same
// for all).
func credentialsHelp() string {
	return join(
		"CREDENTIALS OF THE SERVERS (--auth-token-file, --basic-auth-file)",
		section("serve:", credentialScope(serveAuthHelp)),
		section("hub:", credentialScope(hubAuthHelp)),
		section("sdshare serve:", credentialScope(sdshareServeAuthHelp)),
		section("sdshare receive (--auth-token-file only):", credentialScope(sdshareReceiveAuthHelp)),
		section("Every server:", unindent(dedent(fmt.Sprintf(authHelp, authBasicHelp)))),
	)
}

// credentialScope is the part of a server's CREDENTIALS help that says
// what its credentials protect: between the heading and the shared text.
func credentialScope(s string) string {
	s = strings.TrimLeft(s, "\n")
	_, s, _ = strings.Cut(s, "\n") // the heading
	for _, shared := range []string{fmt.Sprintf(authHelp, authBasicHelp), fmt.Sprintf(authHelp, "")} {
		if i := strings.Index(s, shared); i >= 0 {
			s = s[:i]
		}
	}
	return unindent(s)
}

// unindent removes the 3 spaces every line of a help section starts with.
func unindent(s string) string {
	var out []string
	for _, l := range strings.Split(strings.Trim(s, "\n"), "\n") {
		out = append(out, strings.TrimPrefix(l, "   "))
	}
	return strings.Join(out, "\n")
}

// connectionsHelp is the topic "connections": the policy of every server,
// then what differs between them.
func connectionsHelp() string {
	const body = "(how long a request body may take: see REQUEST BODIES below)"
	return join(
		connsHelp(body),
		section("REQUEST BODIES", unindent(strings.Join([]string{
			"serve, oai serve, sdshare serve: " + bodyWithin(time.Minute),
			"hub: " + strings.ReplaceAll(bodyAtRate("--max-payload"), "\n   ", " "),
			"sdshare receive: " + strings.ReplaceAll(bodyAtRate("--max-bytes"), "\n   ", " "),
		}, "\n"))),
		section("ON LOOPBACK", unindent(strings.Join([]string{
			"serve, sdshare serve (URL is --base-url), hub (--url), oai serve (--endpoint-url):",
			hostGuardHelp("URL"),
		}, "\n"))),
	)
}

// envVarsHelp lists, per command, the environment variables its flags
// are read from (made from the command tree, so it cannot go stale).
func envVarsHelp() string {
	app := newApp(io.Discard, io.Discard)
	var rows []string
	var walk func(path []string, c *cli.Command)
	walk = func(path []string, c *cli.Command) {
		var vars []string
		for _, f := range c.Flags {
			for _, v := range flagEnvVars(f) {
				vars = append(vars, "$"+v+" (--"+f.Names()[0]+")")
			}
		}
		if len(vars) > 0 {
			rows = append(rows, strings.Join(path, " ")+": "+strings.Join(vars, ", "))
		}
		for _, s := range c.Commands {
			walk(append(slices.Clone(path), s.Name), s)
		}
	}
	walk(nil, app)
	var b strings.Builder
	b.WriteString("BY COMMAND\n")
	for _, r := range rows {
		b.WriteString(wrapText(r, 78, "   ", "      "))
	}
	b.WriteString("   Others: $NETRC (the clients' .netrc), $PGPASSWORD and ~/.pgpass (a\n" +
		"   PostgreSQL password), $RESOURCESYNC_AUTH_TOKEN (a token the servers\n" +
		"   accept), $RESOURCESYNC_BEARER_TOKEN (the token the clients send).")
	return b.String()
}

// exitStatusByCommand lists the commands whose --help states their own
// exit status (made from the command tree).
func exitStatusByCommand() string {
	var b strings.Builder
	var walk func(path []string, c *cli.Command)
	walk = func(path []string, c *cli.Command) {
		for _, p := range strings.Split(c.Description, "\n\n") {
			if st, ok := strings.CutPrefix(p, "Exit status: "); ok && p != exitStatusLine && len(path) > 0 {
				b.WriteString(wrapText(strings.Join(path, " ")+": "+strings.Join(strings.Fields(st), " "), 78, "   ", "      "))
			}
		}
		for _, s := range c.Commands {
			walk(append(slices.Clone(path), s.Name), s)
		}
	}
	walk(nil, newApp(io.Discard, io.Discard))
	return "BY COMMAND\n" + b.String()
}
