package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"
)

// configureCompletion lists urfave/cli's completion command in the help
// (it is hidden by default) and makes an unknown shell a usage error.
func configureCompletion(c *cli.Command) {
	c.Hidden = false
	c.Usage = "print a shell completion script: bash, zsh, fish or pwsh"
	c.UsageText = "resourcesync completion bash|zsh|fish|pwsh"
	c.Description = `Prints a script that completes commands and flags of resourcesync.

   bash:  source <(resourcesync completion bash)            (e.g. in ~/.bashrc)
   zsh:   source <(resourcesync completion zsh)             (e.g. in ~/.zshrc)
   fish:  resourcesync completion fish > ~/.config/fish/completions/resourcesync.fish`
	print := c.Action
	c.Action = func(ctx context.Context, cmd *cli.Command) error {
		switch cmd.Args().First() {
		case "bash", "zsh", "fish", "pwsh":
		case "":
			return usageError(cmd, "which shell? bash, zsh, fish or pwsh")
		default:
			return usageError(cmd, fmt.Sprintf("unknown shell %q: bash, zsh, fish or pwsh", cmd.Args().First()))
		}
		return print(ctx, cmd)
	}
}
