package main

import "github.com/urfave/cli/v3"

const sdshareHelp = `SDShare 1.0: publish RDF collections as Atom feeds of snapshots and
changed resource fragments, keep an RDF store in step with such feeds, and
push fragments (SDShare Push).`

func sdshareCommand() *cli.Command {
	return &cli.Command{
		Name:        "sdshare",
		Usage:       "serve, mirror and push RDF collections over SDShare",
		Description: sdshareHelp,
		Commands: []*cli.Command{
			sdshareServeCommand(),
			sdshareSyncCommand(),
			sdshareExportCommand(),
			sdshareReceiveCommand(),
		},
	}
}
