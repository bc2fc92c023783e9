package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/source"
)

const publishHelp = `Writes DIR's ResourceSync documents as static files into OUT, for hosting on
any web server or object store at --base-url (which must also serve DIR's
files at BASE/<path>). Running it again scans DIR, records what changed in
the change journal (--state, default DIR/.resourcesync) and updates the
documents; closed Change Lists are never rewritten. See 'serve --help' for
the layout.`

func publishCommand() *cli.Command {
	return &cli.Command{
		Name:        "publish",
		Usage:       "write a directory's ResourceSync documents as static files",
		UsageText:   "resourcesync publish --base-url URL --out OUT [--state DIR] [--set NAME=DIR]... [DIR]",
		Description: publishHelp,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "base-url", Usage: "public base URL of the Source", Required: true},
			&cli.StringFlag{Name: "out", Usage: "directory to write the documents into", Required: true, TakesFile: true},
		}, sourceFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			cfg, err := sourceConfig(cmd, cmd.String("base-url"), cmd.Root().ErrWriter)
			if err != nil {
				return err
			}
			cfg.Out = cmd.String("out")
			src, err := source.Open(cfg)
			if err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
			defer src.Close()
			start := time.Now()
			rep, err := src.Update(ctx)
			if err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
			w := cmd.Root().Writer
			for _, s := range rep.Publish.Sets {
				sc := rep.Scans[s.Name]
				fmt.Fprintf(w, "set %s: %d resources (%d created, %d updated, %d deleted), %d Change Lists, %d Resource Dump packages\n",
					s.Name, s.Resources, sc.Created, sc.Updated, sc.Deleted, s.ChangeLists, s.DumpParts)
			}
			fmt.Fprintf(w, "published to %s in %s; Source Description: %s.well-known/resourcesync\n",
				src.Out(), time.Since(start).Round(time.Millisecond), src.BaseURL())
			return nil
		},
	}
}
