package main

import "github.com/urfave/cli/v3"

// TODO: replace with the real command.
func sdshareSyncCommand() *cli.Command {
	return &cli.Command{Name: "sync", Hidden: true}
}
