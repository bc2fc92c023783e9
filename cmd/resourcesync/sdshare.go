package main

import "github.com/urfave/cli/v3"

// sdshareHelp is the description of sdshare, and the start of the help topic sdshare-feeds.
const sdshareHelp = `SDShare 1.0: publish RDF collections as Atom feeds of snapshots and
changed resource fragments, keep an RDF store in step with such feeds, and
push fragments (SDShare Push).`

// sdshareDescription is what sdshare --help shows.
const sdshareDescription = sdshareHelp + `

Examples:
  resourcesync sdshare serve people=./people.ttl
  resourcesync sdshare sync http://127.0.0.1:8080/

See also: resourcesync help sdshare-feeds, sdshare-mirror,
sdshare-push.`

func sdshareCommand() *cli.Command {
	return &cli.Command{
		Name:        "sdshare",
		Usage:       "serve, mirror and push RDF collections over SDShare",
		Description: sdshareDescription,
		Commands: []*cli.Command{
			sdshareServeCommand(),
			sdshareSyncCommand(),
			sdshareExportCommand(),
			sdshareReceiveCommand(),
		},
	}
}
