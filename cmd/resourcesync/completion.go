package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v3"
)

// configureCompletion lists urfave/cli's completion command in the help
// (it is hidden by default) and makes an unknown shell a usage error.
func configureCompletion(c *cli.Command) {
	c.Hidden = false
	c.Usage = "print a shell completion script: bash, zsh, fish or pwsh"
	c.UsageText = "resourcesync completion bash|zsh|fish|pwsh"
	c.Description = `Prints a script that completes commands and flags of resourcesync (bash
needs the bash-completion package).

Examples:
  source <(resourcesync completion bash)    # e.g. in ~/.bashrc
  source <(resourcesync completion zsh)     # e.g. in ~/.zshrc
  resourcesync completion fish > ~/.config/fish/completions/resourcesync.fish`
	print := c.Action
	c.Action = func(ctx context.Context, cmd *cli.Command) error {
		switch a := cmd.Args().First(); {
		case strings.HasPrefix(a, "-") && a != "-h" && a != "--help":
			return usageError(cmd, "unknown flag "+a)
		case a == "bash" || a == "zsh" || a == "fish" || a == "pwsh":
		case a == "":
			return usageError(cmd, "which shell? bash, zsh, fish or pwsh")
		case a == "-h" || a == "--help":
			return cli.ShowSubcommandHelp(cmd)
		default:
			return usageError(cmd, fmt.Sprintf("unknown shell %q: bash, zsh, fish or pwsh", cmd.Args().First()))
		}
		cmd.Writer = cmd.Root().Writer // urfave/cli writes to the command's own (os.Stdout)
		return print(ctx, cmd)
	}
}

// completionArgs is the command line the completion scripts ran
// ("resourcesync sync --no --generate-shell-completion"); tests replace it.
var completionArgs = func() []string { return os.Args }

// completeFlags is every command's ShellComplete: after a word that starts
// with "-", the command's visible flags under their canonical names (not
// the hidden old spellings); else its subcommands. urfave/cli's default
// reads a subcommand's parsed arguments, where a partial flag is no longer.
func completeFlags(_ context.Context, cmd *cli.Command) {
	args := completionArgs()
	last := ""
	if n := len(args); n >= 2 && args[n-1] == "--generate-shell-completion" {
		last = args[n-2]
	}
	w := cmd.Root().Writer
	if strings.HasPrefix(last, "-") {
		cur := strings.TrimLeft(last, "-")
		for _, f := range cmd.VisibleFlags() {
			name := f.Names()[0]
			if len(name) > 1 && strings.HasPrefix(name, cur) {
				fmt.Fprintln(w, "--"+name)
			}
		}
		return
	}
	for _, c := range cmd.VisibleCommands() {
		fmt.Fprintln(w, c.Name)
	}
}
