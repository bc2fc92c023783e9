package main

import "github.com/urfave/cli/v3"

// TODO: replace with the real command.
func sdshareServeCommand() *cli.Command {
	return &cli.Command{Name: "serve", Hidden: true}
}
