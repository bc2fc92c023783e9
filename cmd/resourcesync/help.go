package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
	"golang.org/x/term"
)

// The --help of every command has one shape, as rclone's and restic's: a
// one-line usage, a short description, a few examples, the flags grouped by
// topic, then where to read more. The long texts are help topics
// (resourcesync help TOPIC, topics.go) and pages of docs/cli.
const (
	// helpWidth is the width --help wraps to when stdout is not a terminal.
	helpWidth = 80
	// helpMaxWidth caps the width on a wide terminal: longer lines are
	// hard to read.
	helpMaxWidth = 100
	// helpMinWidth is the narrowest layout (a terminal narrower still
	// wraps the lines itself).
	helpMinWidth = 40
	// flagColumn is the widest flag names column: longer names (rare)
	// take a line of their own, so that descriptions keep their room.
	flagColumn = 26
)

// Flag categories, in the order --help lists them. A flag's category comes
// from flagCategories (by command path and flag, else by flag).
const (
	catSource        = "Source"
	catDest          = "Mirror"
	catServer        = "Server"
	catState         = "State"
	catDocuments     = "Documents and dumps"
	catSafety        = "Safety"
	catNotifications = "Notifications"
	catFollow        = "Follow"
	catOAI           = "OAI-PMH"
	catRDF           = "RDF store"
	catTransfer      = "Transfers"
	catClient        = "Credentials and TLS"
	catAuth          = "Access control"
	catOutput        = "Output and logging"
)

var categoryOrder = []string{catSource, catDest, catServer, catState, catDocuments, catSafety, catTransfer,
	catFollow, catNotifications, catOAI, catRDF, catAuth, catClient, catOutput}

// flagCategories names the category of a flag: "COMMAND PATH/flag" for a
// flag one command files elsewhere, else "flag". A flag in neither is in
// its command's first group (see flagGroups).
var flagCategories = map[string]string{
	// Output and logging, on every command.
	"verbose": catOutput, "log-format": catOutput, "quiet": catOutput, "log-file": catOutput, "help": catOutput, "json": catOutput,
	"progress": catOutput, "status-addr": catOutput, "report": catOutput, "version": catOutput,
	// Servers.
	"addr": catServer, "base-url": catServer, "max-conns": catServer, "url": catServer, "endpoint-url": catServer,
	// State.
	"state": catState, "store": catState, "node": catState, "claim-ttl": catState, "import-state": catState, "lease": catState,
	// A Source's collection and its documents.
	"set": catSource, "skip": catSource, "watch": catSource, "no-watch": catSource, "debounce": catSource, "rescan-interval": catSource,
	"out": catSource, "no-html": catSource,
	"changelist-period": catDocuments, "changelist-index": catDocuments, "no-dumps": catDocuments, "feeds": catDocuments, "plain-sitemap": catDocuments,
	"dump-part-size": catDocuments, "dump-interval": catDocuments, "archived-dumps": catDocuments, "dump-files": catDocuments, "dumps": catDocuments,
	"allow-empty": catSafety,
	// Notifications.
	"hub": catNotifications, "no-hub": catNotifications, "hub-token": catNotifications,
	"allow-private-callbacks": catNotifications, "hub-admin-token": catNotifications,
	"no-push": catNotifications, "push-origin": catNotifications,
	// OAI-PMH.
	"oai-pmh": catOAI, "metadata-prefix": catOAI, "oai-set": catOAI, "oai-full-every": catOAI, "oai-max-records": catOAI,
	"oai-max-delete": catOAI, "oai-min-free": catOAI, "oai-interval": catOAI, "oai-pmh-endpoint": catOAI, "oai-metadata-format": catOAI,
	// Access control of the servers.
	"auth-token-file": catAuth, "basic-auth-file": catAuth,
	// Clients.
	"header": catClient, "bearer-token-file": catClient, "netrc-file": catClient, "ca-cert": catClient, "insecure": catClient,
	"allow-host": catClient, "s3-endpoint": catClient,
	"workers": catTransfer, "rate": catTransfer, "bwlimit": catTransfer, "verify": catTransfer, "fsync": catTransfer, "timeout": catTransfer,
	"min-rate": catTransfer, "min-rate-window": catTransfer, "max-docs": catTransfer,
	"no-delete": catSafety, "max-delete": catSafety, "allow-reset": catSafety, "force": catSafety,
	"follow": catFollow, "listen": catFollow, "callback-url": catFollow, "poll-interval": catFollow,
	// RDF stores.
	"sparql-update": catRDF, "sparql-query": catRDF, "sparql-graph-store": catRDF, "graph-store": catRDF,

	// Per command: a flag that belongs elsewhere on that command's page
	// ("": the command's own first group, Options).
	"sync/lease":                        catFollow,
	"sync/base-url":                     "",
	"sync/no-dumps":                     catTransfer,
	"sync/dumps":                        catTransfer,
	"sync/set":                          "",
	"serve/state":                       catSource,
	"serve/store":                       catSource,
	"serve/allow-empty":                 catSource,
	"serve/auth-token-file":             catServer,
	"serve/basic-auth-file":             catServer,
	"validate/base-url":                 catSource,
	"publish/base-url":                  catSource,
	"simulate/dir":                      catSource,
	"hub/state":                         catState,
	"hub/admin-token":                   catServer,
	"hub/publish-token":                 catAuth,
	"hub/allow-private-callbacks":       catServer,
	"sdshare serve/push":                catNotifications,
	"sdshare serve/push-token-file":     catNotifications,
	"sdshare serve/resourcesync":        catNotifications,
	"sdshare serve/rescan":              catSource,
	"sdshare serve/page-size":           catSource,
	"sdshare serve/chunk-size":          catSource,
	"sdshare serve/author":              catSource,
	"sdshare serve/max-canonical-steps": catSource,
	"sdshare sync/store":                catRDF,
	"sdshare sync/graph":                catSource,
	"sdshare sync/collection":           catSource,
	"sdshare sync/max-wait":             catTransfer,
	"sdshare sync/max-snapshot-bytes":   catTransfer,
	"sdshare receive/store":             catRDF,
	"sdshare receive/graph":             catRDF,
	"sdshare receive/addr":              catServer,
	"sdshare export/store":              catRDF,
	"sdshare export/graph":              catRDF,
	"sdshare export/format":             catOutput,
	"sdshare export/lock-timeout":       catRDF,
	"oai serve/set":                     catSource,
	"oai serve/mirror":                  catSource,
	"oai serve/records":                 catSource,
	"oai serve/rescan-interval":         catSource,
	"aggregate/sources":                 catSource,
	"aggregate/allow-http-sources":      catSource,
	"aggregate/sources-files-dir":       catSource,
	"aggregate/root":                    catDest,
	"aggregate/reload":                  catSource,
	"aggregate/store":                   catState,
	"aggregate/per-host":                catTransfer,
	"aggregate/source-workers":          catTransfer,
	"aggregate/run-timeout":             catTransfer,
	"aggregate/once":                    catTransfer,
	"aggregate/poll-interval":           catTransfer,
	"aggregate/graph-store":             catRDF,
}

// categorize files every flag of cmd under its category (see
// flagCategories); one the map does not name stays in the command's
// first group.
func categorize(cmd *cli.Command, path string) {
	for _, f := range cmd.Flags {
		cf, ok := f.(interface {
			GetCategory() string
			SetCategory(string)
		})
		if !ok || cf.GetCategory() != "" {
			continue
		}
		name := f.Names()[0]
		if c, ok := flagCategories[path+"/"+name]; ok {
			cf.SetCategory(c)
		} else if c, ok := flagCategories[name]; ok {
			cf.SetCategory(c)
		}
	}
}

// commandPath is cmd's path under the root ("sdshare sync"); "" for the
// root.
func commandPath(cmd *cli.Command) string {
	_, rest, _ := strings.Cut(cmd.FullName(), " ")
	if cmd.Root() == cmd {
		return ""
	}
	return rest
}

// terminalWidth is the width help is wrapped to on w: the terminal's
// (between helpMinWidth and helpMaxWidth), else helpWidth.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return helpWidth
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil || cols <= 0 {
		return helpWidth
	}
	return min(max(cols, helpMinWidth), helpMaxWidth)
}

// printHelp is urfave/cli's HelpPrinter: every help of the tree (--help,
// help COMMAND, a group without its subcommand) is rendered by renderHelp.
func printHelp(w io.Writer, templ string, data any) {
	cmd, ok := data.(*cli.Command)
	if !ok {
		cli.DefaultPrintHelp(w, templ, data)
		return
	}
	io.WriteString(w, renderHelp(cmd, terminalWidth(w)))
}

// renderHelp is cmd's --help at width columns.
func renderHelp(cmd *cli.Command, width int) string {
	var b strings.Builder
	root := cmd.Root() == cmd
	full := "resourcesync"
	if p := commandPath(cmd); p != "" {
		full += " " + p
	}
	// Usage: one line per form.
	usage := cmd.UsageText
	if usage == "" {
		usage = full
		if len(cmd.VisibleCommands()) > 0 {
			usage += " COMMAND"
		}
		if len(cmd.VisibleFlags()) > 0 {
			usage += " [options]"
		}
		if cmd.ArgsUsage != "" {
			usage += " " + cmd.ArgsUsage
		}
	}
	for i, u := range strings.Split(strings.TrimSpace(usage), "\n") {
		lead := "Usage: "
		if i > 0 {
			lead = "       "
		}
		b.WriteString(wrapText(strings.TrimSpace(u), width, lead, "         "))
	}
	body, footer := splitFooter(cmd.Description)
	if cmd.Usage != "" && body == "" {
		b.WriteString("\n" + wrapText(capitalize(cmd.Usage)+".", width, "", ""))
	}
	if body != "" {
		b.WriteString("\n" + renderText(body, width))
	}
	if cmds := cmd.VisibleCommands(); len(cmds) > 0 {
		b.WriteString("\nCommands:\n")
		b.WriteString(renderColumns(commandRows(cmds), width))
	}
	if root {
		var names []string
		for _, t := range helpTopics() {
			names = append(names, t.Name)
		}
		b.WriteString("\n" + wrapText("Help topics: "+strings.Join(names, ", ")+
			" (resourcesync help TOPIC; resourcesync help topics says what each holds).", width, "", ""))
	}
	if groups := flagGroups(cmd); len(groups) > 0 {
		b.WriteString(renderFlags(groups, width))
	}
	if footer != "" {
		b.WriteString("\n")
		for _, p := range strings.Split(footer, "\n\n") {
			b.WriteString(renderText(p, width))
		}
	}
	return b.String()
}

// splitFooter cuts a Description into the text shown before the flags and
// the paragraphs shown after them ("See also:", "Exit status:",
// "Environment:").
func splitFooter(desc string) (body, footer string) {
	var head, tail []string
	for _, p := range strings.Split(strings.TrimSpace(desc), "\n\n") {
		if strings.HasPrefix(p, "See also:") || strings.HasPrefix(p, "Exit status:") || strings.HasPrefix(p, "Environment:") {
			tail = append(tail, p)
		} else {
			head = append(head, p)
		}
	}
	return strings.Join(head, "\n\n"), strings.Join(tail, "\n\n")
}

// renderText reflows the paragraphs of text to width: a line that starts
// with a space (an example, a table) is kept as it is; "Examples:" and
// other lines ending in ":" start a block.
func renderText(text string, width int) string {
	var b strings.Builder
	for i, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if i > 0 {
			b.WriteString("\n")
		}
		var para []string
		flush := func() {
			if len(para) > 0 {
				b.WriteString(wrapText(strings.Join(para, " "), width, "", ""))
				para = nil
			}
		}
		for _, line := range strings.Split(p, "\n") {
			switch {
			case strings.HasPrefix(line, " "):
				flush()
				b.WriteString(line + "\n")
			case strings.HasSuffix(line, ":") && len(para) == 0:
				b.WriteString(line + "\n")
			default:
				para = append(para, strings.TrimSpace(line))
			}
		}
		flush()
	}
	return b.String()
}

// wrapText wraps s to width: the first line starts with first, the others
// with indent; a word longer than a line stays whole.
func wrapText(s string, width int, first, indent string) string {
	var b strings.Builder
	line := first
	empty := true
	for _, w := range strings.Fields(s) {
		if !empty && len(line)+1+len(w) > width {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
	return b.String()
}

// renderColumns lays out name/text rows: names in a column, texts wrapped
// beside them.
func renderColumns(rows [][2]string, width int) string {
	col := 0
	for _, r := range rows {
		col = max(col, len(r[0]))
	}
	col = min(col, width/3)
	var b strings.Builder
	for _, r := range rows {
		lead := "  " + r[0]
		if len(r[0]) > col {
			b.WriteString(lead + "\n")
			lead = ""
		}
		pad := strings.Repeat(" ", 2+col+2)
		b.WriteString(wrapText(r[1], width, padTo(lead, 2+col+2), pad))
	}
	return b.String()
}

// capitalize is s with its first letter in upper case.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func padTo(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return s + strings.Repeat(" ", n-len(s))
}

func commandRows(cmds []*cli.Command) [][2]string {
	var rows [][2]string
	for _, c := range cmds {
		rows = append(rows, [2]string{c.Name, c.Usage})
	}
	return rows
}

// flagGroup is one category of a command's flags.
type flagGroup struct {
	name  string
	flags []cli.Flag
}

// flagGroups are cmd's visible flags by category, in categoryOrder; the
// flags of no category come first, under "Options".
func flagGroups(cmd *cli.Command) []flagGroup {
	by := map[string][]cli.Flag{}
	for _, f := range cmd.VisibleFlags() {
		c := ""
		if cf, ok := f.(cli.CategorizableFlag); ok {
			c = cf.GetCategory()
		}
		switch {
		case cmd.Root() == cmd:
			c = "" // --version and --help
		case f.Names()[0] == "help":
			c = catOutput // urfave/cli adds it after conventions
		}
		by[c] = append(by[c], f)
	}
	var groups []flagGroup
	if fs := by[""]; len(fs) > 0 {
		groups = append(groups, flagGroup{"Options", fs})
	}
	for _, c := range categoryOrder {
		if fs := by[c]; len(fs) > 0 {
			groups = append(groups, flagGroup{c, fs})
		}
	}
	for c, fs := range by {
		if c != "" && !slices.Contains(categoryOrder, c) {
			groups = append(groups, flagGroup{c, fs})
		}
	}
	return groups
}

// renderFlags is the flag table: each group under its name, a flag's
// names and value in one column and its description wrapped beside it.
func renderFlags(groups []flagGroup, width int) string {
	type row struct{ names, text string }
	var rows [][]row
	col := 0
	for _, g := range groups {
		var rs []row
		for _, f := range g.flags {
			n, t := flagLine(f)
			rs = append(rs, row{n, t})
			col = max(col, len(n))
		}
		rows = append(rows, rs)
	}
	col = min(col, flagColumn)
	var b strings.Builder
	for i, g := range groups {
		b.WriteString("\n" + g.name + ":\n")
		for _, r := range rows[i] {
			lead := "  " + r.names
			pad := strings.Repeat(" ", 2+col+2)
			if len(r.names) > col {
				b.WriteString(lead + "\n")
				lead = ""
			}
			b.WriteString(wrapText(r.text, width, padTo(lead, len(pad)), pad))
		}
	}
	return b.String()
}

// flagLine is a flag's names ("-v, --verbose", "--addr HOST:PORT") and its
// description with its default. Hidden aliases (hiddenAliases) are left
// out; environment variables are in the footer (see envFooter).
func flagLine(f cli.Flag) (names, text string) {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return "--" + f.Names()[0], ""
	}
	placeholder, usage := unquote(df.GetUsage())
	if df.TakesValue() && placeholder == "" {
		placeholder = typePlaceholder(df.TypeName())
	}
	hide := hiddenAliases[f.Names()[0]]
	var short, long []string
	for _, n := range f.Names() {
		switch {
		case slices.Contains(hide, n):
		case len(n) == 1:
			short = append(short, "-"+n)
		default:
			long = append(long, "--"+n)
		}
	}
	names = strings.Join(append(long, short...), ", ")
	if placeholder != "" {
		names += " " + placeholder
	}
	text = usage
	if def := flagDefault(f, df); def != "" {
		text += " (default " + def + ")"
	}
	return names, text
}

// flagDefault is the default a flag's help shows: its DefaultText, else a
// value that is not the zero of its type.
func flagDefault(f cli.Flag, df cli.DocGenerationFlag) string {
	if rf, ok := f.(cli.RequiredFlag); ok && rf.IsRequired() {
		return ""
	}
	if !df.IsDefaultVisible() {
		return ""
	}
	if s := df.GetDefaultText(); s != "" {
		return s
	}
	if !df.TakesValue() {
		if df.GetValue() == "true" {
			return "true"
		}
		return ""
	}
	v := strings.Trim(df.GetValue(), `"`)
	if d, err := time.ParseDuration(v); err == nil && df.TypeName() == "duration" {
		return shortDuration(d)
	}
	if v == "" || v == "0" || v == "[]" {
		return ""
	}
	return v
}

// shortDuration writes 1h0m0s as 1h, 1m30s as 1m30s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func typePlaceholder(t string) string {
	switch t {
	case "duration":
		return "D"
	case "int", "uint", "float":
		return "N"
	}
	return "VALUE"
}

// unquote is urfave/cli's placeholder convention: the first `word` of a
// usage is the flag's value placeholder.
func unquote(usage string) (placeholder, text string) {
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return "", usage
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return "", usage
	}
	name := usage[i+1 : i+1+j]
	return name, usage[:i] + name + usage[i+1+j+1:]
}

// envFooter names the environment variables cmd's flags are read from.
func envFooter(cmd *cli.Command) string {
	var vars []string
	for _, f := range cmd.Flags {
		for _, v := range flagEnvVars(f) {
			vars = append(vars, "$"+v)
		}
	}
	if len(vars) == 0 {
		return ""
	}
	return "Environment: " + strings.Join(vars, ", ") + " (help environment)."
}

// helpCommand is the help command of the root and of every group: help
// A B prints A B's help, help TOPIC a topic, help topics the list.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:            "help",
		Aliases:         []string{"h"},
		Usage:           "show a command's help, or a topic's (help topics lists them)",
		UsageText:       "resourcesync help [COMMAND [SUBCOMMAND]] | TOPIC | topics",
		HideHelp:        true,
		SkipFlagParsing: true,
		Action:          helpAction,
	}
}

// helpAction prints the help of the command its arguments name, under the
// command help was given to (resourcesync help sdshare sync; resourcesync
// sdshare help sync), or a help topic.
func helpAction(_ context.Context, hc *cli.Command) error {
	parent := hc.Root()
	if l := hc.Lineage(); len(l) > 1 {
		parent = l[1]
	}
	w := hc.Root().Writer
	args := hc.Args().Slice()
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		args = nil
	}
	if len(args) == 0 {
		io.WriteString(w, renderHelp(parent, terminalWidth(w)))
		return nil
	}
	if parent.Root() == parent {
		if args[0] == "topics" && len(args) == 1 {
			io.WriteString(w, renderTopicList(terminalWidth(w)))
			return nil
		}
		if t, ok := findTopic(args[0]); ok && len(args) == 1 {
			io.WriteString(w, t.render())
			return nil
		}
	}
	cur := parent
	for i, a := range args {
		next := cur.Command(a)
		if next == nil || next.Name == "help" && i > 0 {
			if cur == parent && parent.Root() == parent && i == 0 {
				return unknownHelpName(hc, a)
			}
			if strings.HasPrefix(a, "-") {
				return usageError(hc, fmt.Sprintf("help takes command names, not %s", a))
			}
			if len(cur.VisibleCommands()) == 0 {
				return usageError(hc, fmt.Sprintf("unknown command %q: resourcesync %s has no subcommands", a, commandPath(cur)))
			}
			return unknownCommandName(cur, a)
		}
		cur = next
	}
	if cur.Name == "help" {
		io.WriteString(w, renderHelp(parent, terminalWidth(w)))
		return nil
	}
	io.WriteString(w, renderHelp(cur, terminalWidth(w)))
	return nil
}

// unknownHelpName is the usage error of help NAME when NAME is neither a
// command nor a topic: the nearest name, and both lists.
func unknownHelpName(hc *cli.Command, name string) error {
	root := hc.Root()
	var cmds, topics []string
	for _, c := range root.VisibleCommands() {
		cmds = append(cmds, c.Name)
	}
	for _, t := range helpTopics() {
		topics = append(topics, t.Name)
	}
	msg := fmt.Sprintf("unknown command or help topic %q", name)
	if s := suggestName(append(slices.Clone(cmds), topics...), name); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	} else {
		msg += " (commands: " + strings.Join(cmds, ", ") + "; topics: " + strings.Join(topics, ", ") + ")"
	}
	return usageError(hc, msg)
}

// renderTopicList is help topics.
func renderTopicList(width int) string {
	var rows [][2]string
	for _, t := range helpTopics() {
		rows = append(rows, [2]string{t.Name, t.Summary})
	}
	return "Help topics: resourcesync help TOPIC (also in docs/cli/topic-TOPIC.md).\n\n" + renderColumns(rows, width)
}
