package main

import "github.com/urfave/cli/v3"

// TODO: replace with the real command.
func sdshareExportCommand() *cli.Command {
	return &cli.Command{Name: "export", Hidden: true}
}
