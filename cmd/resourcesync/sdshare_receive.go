package main

import "github.com/urfave/cli/v3"

// TODO: replace with the real command.
func sdshareReceiveCommand() *cli.Command {
	return &cli.Command{Name: "receive", Hidden: true}
}
