package main

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/source"
)

// documentsHelp is the part of serve's and publish's help on what the
// documents cost on disk and when they are rewritten.
const documentsHelp = `

DOCUMENTS AND DISK
   Resource List: one document up to 50,000 resources, else an index and parts
   of at most 50,000 by path range; an update rewrites only the parts whose
   range holds a change (and the index). Closed Change Lists are never
   rewritten.
   Dumps (unless --no-dumps) take disk beside the documents when their packages
   are files (publish; serve --dump-files; serve's default writes none):
   - the Resource Dump is a full copy of the collection (ZIP packages of at
     most --dump-part-size, stored uncompressed, plus a manifest of about 350
     bytes per resource). It is rebuilt only when the collection changed since
     the last one, and at most once per --dump-interval (default 24h); the old
     one is removed only once the new one is listed, so a rebuild briefly
     needs a second copy.
   - Change Dumps: one package per closed Change List holding the current
     bytes of the resources created or updated in it, kept as long as the
     Change Dump lists it (all closed lists): this grows with the changed
     bytes.
   Plan for about twice the collection's size during a Resource Dump rebuild,
   plus the changed bytes.`

// sourceFlags are the flags shared by serve and publish.
func sourceFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "state", Usage: "state directory (inventory, change journal unless --store says otherwise; documents for serve)", Value: "", DefaultText: "DIR/.resourcesync"},
		storeFlag(),
		// Hidden: tests split the Resource List of a small collection.
		&cli.IntFlag{Name: "max-entries", Hidden: true, Usage: "largest number of entries per document"},
		&cli.StringSliceFlag{Name: "set", Usage: "publish DIR as the set NAME (repeatable; resources then live under BASE/NAME/)", TakesFile: true},
		&cli.StringSliceFlag{Name: "skip", Usage: "skip files and directories matching this path.Match pattern (repeatable)"},
		&cli.DurationFlag{Name: "changelist-period", Usage: "close the open Change List after this period", Value: time.Hour},
		&cli.BoolFlag{Name: "changelist-index", Value: true, Usage: "the Capability List names the Change List Index; =false: it names the open Change List itself (the index is still written and linked from every list), for clients that cannot read an index incrementally (py-resync 2.0.1 --incremental)"},
		&cli.BoolFlag{Name: "no-dumps", Usage: "do not write Resource Dumps and Change Dumps"},
		&SizeFlag{Name: "dump-part-size", Usage: "largest Resource Dump package, `SIZE` in bytes or KiB, MiB, GiB", Value: 256 << 20},
		&cli.DurationFlag{Name: "dump-interval", Usage: "least time between two Resource Dumps (a new one is made only if the collection changed)", Value: 24 * time.Hour},
		&cli.BoolFlag{Name: "allow-empty", Usage: "let a scan that finds DIR (or a --set's directory) holding no file, while its state holds resources, record every resource as deleted. Without it that scan is refused (an unmounted or emptied DIR would make every mirror delete everything): nothing is recorded, the last state stays published, serve logs an error on each refused scan and publish exits 1. A DIR that does not exist is always refused"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log every scan and publish (publish: also a line per set; without it, only warnings, errors and the result line)"},
	}
}

func storeFlag() cli.Flag {
	return &cli.StringFlag{Name: "store", Usage: "state store: bolt:PATH or postgres://... (see STATE STORE above)", DefaultText: "bolt:STATE", Sources: cli.EnvVars("RESOURCESYNC_STORE")}
}

// sourceConfig builds a source.Config from the shared flags.
func sourceConfig(cmd *cli.Command, baseURL string, stderr io.Writer) (source.Config, error) {
	cfg := source.Config{
		BaseURL:          baseURL,
		StateDir:         cmd.String("state"),
		Skip:             cmd.StringSlice("skip"),
		ChangeListPeriod: cmd.Duration("changelist-period"),
		MaxEntries:       int(cmd.Int("max-entries")),
		Dumps:            !cmd.Bool("no-dumps"),
		DumpPartBytes:    cmd.Int64("dump-part-size"),
		DumpInterval:     cmd.Duration("dump-interval"),
		Archives:         true,
		AllowEmpty:       cmd.Bool("allow-empty"),
	}
	for _, s := range cmd.StringSlice("set") {
		name, dir, ok := strings.Cut(s, "=")
		if !ok || name == "" || dir == "" {
			return cfg, cli.Exit(fmt.Sprintf("--set %q: want NAME=DIR", s), exitUsage)
		}
		cfg.Sets = append(cfg.Sets, source.SetConfig{Name: name, Dir: dir})
	}
	if cmd.Args().Len() > 1 {
		return cfg, usageError(cmd, "at most one DIR (use --set NAME=DIR for several)")
	}
	if d := cmd.Args().First(); d != "" {
		cfg.Sets = append(cfg.Sets, source.SetConfig{Name: "default", Dir: d})
	}
	if len(cfg.Sets) == 0 {
		return cfg, usageError(cmd, "no directory to publish: give DIR or --set NAME=DIR")
	}
	if err := source.CheckDirs(cfg); err != nil {
		return cfg, cli.Exit(err.Error(), exitUsage)
	}
	if err := applyStore(cmd, &cfg); err != nil {
		return cfg, err
	}
	if cfg.StateDir == "" {
		cfg.StateDir = filepath.Join(cfg.Sets[0].Dir, ".resourcesync")
	}
	cfg.OpenChangeList = !cmd.Bool("changelist-index")
	cfg.Logger = commandLogger(cmd, stderr, slog.LevelInfo)
	return cfg, nil
}
