package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/simulate"
)

// simulateHelp is simulate's description.
const simulateHelp = `Runs a Source over a synthetic collection: --resources files are generated,
then resources are created, updated and deleted at --change-rate changes per second.
The sequence of changes depends only on --seed, so two runs with the same
seed publish the same history (at their own times). Tests and benchmarks use
it as a changing Source; it serves the same layout as 'serve'.

The collection and the state live in --dir (default: a new temporary
directory, removed on exit).

Examples:
  resourcesync simulate --resources 10000 --change-rate 5
  resourcesync simulate --seed 7 --dir ./sim

See also: resourcesync help state, layout.`

func simulateCommand() *cli.Command {
	return &cli.Command{
		Name:        "simulate",
		Usage:       "serve a synthetic Source whose resources change at a given rate",
		UsageText:   "resourcesync simulate [options]",
		Description: simulateHelp,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "listen on `HOST:PORT`", Value: "127.0.0.1:8080"},
			&cli.StringFlag{Name: "base-url", Usage: "public `URL` of the Source", DefaultText: "http://ADDR/"},
			&cli.IntFlag{Name: "resources", Usage: "`N` resources at the start", Value: 1000},
			&cli.FloatFlag{Name: "change-rate", Usage: "`R` changes per second (0: none)", Value: 1},
			&cli.Uint64Flag{Name: "seed", Usage: "`SEED` of the sequence of changes", Value: 1},
			&cli.StringFlag{Name: "dir", Usage: "`DIR` of the collection and its state", TakesFile: true},
			&cli.DurationFlag{Name: "changelist-period", Usage: "close the open Change List after `D`", Value: time.Minute},
			&cli.BoolFlag{Name: "no-dumps", Usage: "do not write Resource Dumps and Change Dumps"},
			storeFlag(),
		}, notificationFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			dir := cmd.String("dir")
			if dir == "" {
				tmp, err := os.MkdirTemp("", "resourcesync-simulate-")
				if err != nil {
					return cli.Exit(err.Error(), exitUsage)
				}
				defer os.RemoveAll(tmp)
				dir = tmp
			}
			coll := filepath.Join(dir, "collection")
			if err := os.MkdirAll(coll, 0o755); err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
			c, err := simulate.New(coll, int(cmd.Int("resources")), cmd.Uint64("seed"))
			if err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
			ln, err := net.Listen("tcp", cmd.String("addr"))
			if err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
			defer ln.Close()
			base := cmd.String("base-url")
			if base == "" {
				base = "http://" + ln.Addr().String() + "/"
			}
			cfg := source.Config{
				BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: coll}},
				StateDir: filepath.Join(dir, "state"), ChangeListPeriod: cmd.Duration("changelist-period"),
				Dumps: !cmd.Bool("no-dumps"), Archives: true,
			}
			cfg.Logger = commandLogger(cmd, cmd.Root().ErrWriter, slog.LevelInfo)
			if err := applyStore(cmd, &cfg); err != nil {
				return err
			}
			trigger := make(chan struct{}, 1)
			rate := cmd.Float("change-rate")
			w := cmd.Root().Writer
			return serveSource(ctx, cmd, ln, cfg, source.RunOptions{Trigger: trigger}, func(ctx context.Context, src *source.Source) func() {
				fmt.Fprintf(w, "simulating %d resources, %.3g changes/s, seed %d, in %s\n", c.Len(), rate, cmd.Uint64("seed"), dir)
				go c.Run(ctx, rate, func([]simulate.Op) {
					select {
					case trigger <- struct{}{}:
					default: // an update is already pending; it will see these changes
					}
				})
				return nil
			})
		},
	}
}
