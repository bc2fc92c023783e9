package main

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"
)

// exitStatusHelp is the exit-code contract of every command: the help
// topic exit-status (each command's --help ends with a line of it).
const exitStatusHelp = `EXIT STATUS
   0  success (servers and sync --follow: also when stopped by Ctrl-C or
      SIGTERM, after a clean shutdown)
   1  the command ran and found problems: invalid documents, failed
      transfers, audit differences; or a sync/validate/publish interrupted by
      Ctrl-C or SIGTERM before it finished
   2  usage error (unknown command or flag, missing argument), discovery,
      state or I/O failure
   No other code is used.`

// envHelp is the help topic environment's note on secrets.
const envHelp = `ENVIRONMENT
   Every flag that carries a secret (a token, password, secret or basic-auth
   flag, and their *-file forms) is also read from an environment variable, named
   on the Environment: line of its command's --help and below (by default
   RESOURCESYNC_<FLAG>: the flag's name in upper case with "-" as "_", e.g.
   --hub-token: $RESOURCESYNC_HUB_TOKEN), so
   that it need not appear on a command line, where ps(1) shows it to every
   local user. A systemd unit reads them from an EnvironmentFile.`

// hiddenAliases maps a flag's canonical name to the spellings it replaced:
// they are still accepted, but --help shows only the canonical name. One
// vocabulary for all commands (see TestFlagVocabulary).
var hiddenAliases = map[string][]string{
	"base-url":      {"base"},
	"no-dumps":      {"no-dump"},
	"poll-interval": {"interval"},
	"change-rate":   {"rate"}, // simulate: changes per second; --rate is sync's requests per second
}

// visibleAliases are the short forms every command spells the same way.
var visibleAliases = map[string][]string{
	"verbose": {"v"},
	"quiet":   {"q"},
}

// secretWords mark a flag name as carrying a credential (or the file
// that holds one).
var secretWords = []string{"token", "password", "passwd", "secret", "credential", "basic-auth", "htpasswd", "api-key"}

// secretFlag reports whether a flag's value is (or names a file holding) a
// credential: such a flag is also read from the environment.
func secretFlag(name string) bool {
	for _, w := range secretWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// secretEnvVar is the environment variable of the secret flag name, unless
// its definition names one.
func secretEnvVar(name string) string {
	return "RESOURCESYNC_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// conventions applies the shared command-line policy to every command of
// the tree: aliases, environment variables for secrets, short usage on
// errors, "did you mean", exit-status help.
func conventions(cmd *cli.Command) {
	conventionsAt(cmd, "")
}

// exitStatusLine ends the help of a command whose description does not
// state its exit status; the topic exit-status says more.
const exitStatusLine = "Exit status: 0 ok, 1 problems found, 2 usage or I/O error (help exit-status)."

func conventionsAt(cmd *cli.Command, path string) {
	// -v and -q on every command that runs something (one with its own
	// --verbose says in its help what it adds).
	if cmd.Action != nil && len(cmd.Commands) == 0 && cmd.Name != "version" && cmd.Name != "help" {
		if !hasLocalFlag(cmd, "verbose") {
			cmd.Flags = append(cmd.Flags, &cli.BoolFlag{Name: "verbose", Usage: "log more detail to stderr"})
		}
		if !hasLocalFlag(cmd, "quiet") {
			usage := "print only warnings and errors"
			if hasLocalFlag(cmd, "progress") {
				usage += ", no progress"
			}
			cmd.Flags = append(cmd.Flags, &cli.BoolFlag{Name: "quiet", Usage: usage})
		}
		if !hasLocalFlag(cmd, "log-format") {
			cmd.Flags = append(cmd.Flags, logFormatFlag())
		}
	}
	for _, f := range cmd.Flags {
		name := f.Names()[0]
		add := append(slices.Clone(hiddenAliases[name]), visibleAliases[name]...)
		if len(add) > 0 {
			setAliases(f, add)
		}
		if secretFlag(name) && len(flagEnvVars(f)) == 0 {
			addEnvSource(f, secretEnvVar(name))
		}
	}
	if cmd.OnUsageError == nil {
		cmd.OnUsageError = onUsageError
	}
	if cmd.ShellComplete == nil {
		cmd.ShellComplete = completeFlags
	}
	if cmd.Action == nil && len(cmd.Commands) > 0 {
		cmd.Action = unknownCommand
	}
	if len(cmd.Commands) > 0 && cmd.Command("help") == nil {
		// Ours, not urfave/cli's: help A B shows A B (theirs shows A).
		cmd.Commands = append(cmd.Commands, helpCommand())
	}
	if cmd.Action != nil && cmd.Name != "help" && !strings.Contains(strings.ToLower(cmd.Description), "exit status") {
		cmd.Description = strings.TrimSpace(cmd.Description + "\n\n" + exitStatusLine)
	}
	if env := envFooter(cmd); env != "" && !strings.Contains(cmd.Description, "\nEnvironment:") {
		cmd.Description = strings.TrimSpace(cmd.Description + "\n\n" + env)
	}
	categorize(cmd, path)
	for _, sub := range cmd.Commands {
		conventionsAt(sub, strings.TrimSpace(path+" "+sub.Name))
	}
}

func hasLocalFlag(cmd *cli.Command, name string) bool {
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

// setAliases adds names to a flag's Aliases (every urfave/cli flag type is
// a FlagBase with that field).
func setAliases(f cli.Flag, names []string) {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	a := v.Elem().FieldByName("Aliases")
	if !a.IsValid() || a.Type() != reflect.TypeFor[[]string]() {
		return
	}
	have := a.Interface().([]string)
	for _, n := range names {
		if !slices.Contains(have, n) {
			have = append(have, n)
		}
	}
	a.Set(reflect.ValueOf(have))
}

// addEnvSource makes a flag also read from the environment variable env.
func addEnvSource(f cli.Flag, env string) {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	s := v.Elem().FieldByName("Sources")
	if !s.IsValid() || s.Type() != reflect.TypeFor[cli.ValueSourceChain]() {
		return
	}
	chain := s.Interface().(cli.ValueSourceChain)
	if slices.Contains(chain.EnvKeys(), env) {
		return
	}
	chain.Append(cli.EnvVars(env))
	s.Set(reflect.ValueOf(chain))
}

// flagEnvVars returns the environment variables a flag is read from.
func flagEnvVars(f cli.Flag) []string {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	s := v.Elem().FieldByName("Sources")
	if !s.IsValid() || s.Type() != reflect.TypeFor[cli.ValueSourceChain]() {
		return nil
	}
	chain := s.Interface().(cli.ValueSourceChain)
	return chain.EnvKeys()
}

func init() {
	cli.HelpPrinter = printHelp
	// "resourcesync help synk" is the unknown command it names, with a
	// suggestion and exit status 2 (urfave/cli: "No help topic", exit 3).
	showHelp := cli.ShowCommandHelp
	cli.ShowCommandHelp = func(ctx context.Context, cmd *cli.Command, name string) error {
		if cmd.Command(name) == nil {
			return unknownCommandName(cmd, name)
		}
		return showHelp(ctx, cmd, name)
	}
	// --help lists a flag under its canonical names only: the hidden
	// aliases are stripped from a shallow copy before printing.
	def := cli.FlagStringer
	cli.FlagStringer = func(f cli.Flag) string {
		hide := hiddenAliases[f.Names()[0]]
		if len(hide) == 0 {
			return def(f)
		}
		v := reflect.ValueOf(f)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			return def(f)
		}
		c := reflect.New(v.Elem().Type())
		c.Elem().Set(v.Elem())
		a := c.Elem().FieldByName("Aliases")
		if !a.IsValid() || a.Type() != reflect.TypeFor[[]string]() {
			return def(f)
		}
		var keep []string
		for _, n := range a.Interface().([]string) {
			if !slices.Contains(hide, n) {
				keep = append(keep, n)
			}
		}
		a.Set(reflect.ValueOf(keep))
		if cf, ok := c.Interface().(cli.Flag); ok {
			return def(cf)
		}
		return def(f)
	}
}

// shortUsage is the one-line usage of cmd and where to read more.
func shortUsage(cmd *cli.Command) string {
	u := cmd.UsageText
	if u == "" {
		u = cmd.FullName()
		if !strings.HasPrefix(u, "resourcesync") {
			u = "resourcesync " + u
		}
		if len(cmd.VisibleFlags()) > 0 {
			u += " [options]"
		}
		if len(cmd.Commands) > 0 {
			u += " COMMAND"
		}
		if cmd.ArgsUsage != "" {
			u += " " + cmd.ArgsUsage
		}
	}
	if i := strings.IndexByte(u, '\n'); i >= 0 {
		u = u[:i] + " ..."
	}
	full := cmd.FullName()
	if !strings.HasPrefix(full, "resourcesync") {
		full = "resourcesync " + full
	}
	return fmt.Sprintf("usage: %s\nsee '%s --help'", u, full)
}

// usageError is a usage error of cmd: the message, then the short usage;
// exit status 2.
func usageError(cmd *cli.Command, msg string) error {
	return cli.Exit(msg+"\n"+shortUsage(cmd), exitUsage)
}

// onUsageError replaces urfave/cli's "Incorrect Usage" and full help with
// the error, a suggestion for a mistyped flag, and the short usage.
func onUsageError(_ context.Context, cmd *cli.Command, err error, _ bool) error {
	msg := err.Error()
	const undefined = "flag provided but not defined: "
	if name, ok := strings.CutPrefix(msg, undefined); ok {
		name = strings.TrimLeft(name, "-")
		msg = "unknown flag --" + name
		if len(name) == 1 {
			msg = "unknown flag -" + name
		}
		if s := cli.SuggestFlag(cmd.VisibleFlags(), name, false); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
	}
	return usageError(cmd, msg)
}

// unknownCommand is the action of a command that only groups subcommands
// (the root, sdshare): with no argument it shows the help (root: or the
// version), with an unknown one it suggests the nearest command.
func unknownCommand(ctx context.Context, cmd *cli.Command) error {
	if cmd.Root() == cmd && cmd.Bool("version") {
		return printVersion(cmd.Root().Writer)
	}
	if !cmd.Args().Present() {
		return cli.ShowSubcommandHelp(cmd)
	}
	return unknownCommandName(cmd, cmd.Args().First())
}

func unknownCommandName(cmd *cli.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	var names []string
	for _, c := range cmd.VisibleCommands() {
		names = append(names, c.Name)
	}
	if s := suggestName(names, name); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	} else {
		msg += " (commands: " + strings.Join(names, ", ") + ")"
	}
	return usageError(cmd, msg)
}

// suggestName is the name nearest to typed, or "" when none is near: the
// one at the least edit distance, if at most a third of its length.
func suggestName(names []string, typed string) string {
	best, bestD := "", -1
	for _, n := range names {
		d := editDistance(strings.ToLower(typed), n)
		if strings.HasPrefix(n, typed) && len(typed) >= 2 {
			d = 0
		}
		if bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	if bestD < 0 || bestD > max(1, len(best)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
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

// exitCode maps an error returned by the command tree to 0, 1 or 2: the
// only codes documented (urfave/cli itself uses 3 for an unknown help topic).
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		switch c := ec.ExitCode(); c {
		case exitOK, exitProblems, exitUsage:
			return c
		}
	}
	return exitUsage
}
