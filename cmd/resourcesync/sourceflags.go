package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/storage"
)

// documentsHelp is the part of the help topic dumps on what the documents
// of serve and publish cost on disk and when they are rewritten.
const documentsHelp = `

DOCUMENTS AND DISK
   Resource List: one document up to 50,000 resources, else an index and parts
   of at most 50,000 by path range; an update rewrites only the parts whose
   range holds a change (and the index). Closed Change Lists are never
   rewritten.
   Dumps take disk beside the documents when their packages are files
   (publish --dumps; serve --dump-files; serve's default writes none):
   - the Resource Dump is a full copy of the collection (ZIP packages of at
     most --dump-part-size, stored uncompressed, plus a manifest of about 350
     bytes per resource). It is rebuilt only when the collection changed since
     the last one, and at most once per --dump-interval (default 24h); the old
     one is removed only once the new one is listed, so a rebuild briefly
     needs a second copy. publish --archived-dumps N keeps N earlier ones,
     listed in the Resource Dump Archive: N more copies (default none).
   - Change Dumps: one package per closed Change List holding the current
     bytes of the resources created or updated in it, kept as long as the
     Change Dump lists it (all closed lists): this grows with the changed
     bytes. The Change Dump Archive lists them, one small document each.
   Plan for about twice the collection's size during a Resource Dump rebuild,
   plus the changed bytes.`

// sourceFlags are the flags shared by serve and publish.
func sourceFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "state", Usage: "state `DIR`", Value: "", DefaultText: "DIR/.resourcesync"},
		storeFlag(),
		// Hidden: tests split the Resource List of a small collection.
		&cli.IntFlag{Name: "max-entries", Hidden: true, Usage: "largest number of entries per document"},
		&cli.StringSliceFlag{Name: "set", Usage: "publish `NAME=DIR` at BASE/NAME/ (repeatable)", TakesFile: true},
		&cli.StringSliceFlag{Name: "skip", Usage: "skip paths matching `PATTERN` (repeatable)"},
		&cli.DurationFlag{Name: "changelist-period", Usage: "close the open Change List after `D`", Value: time.Hour},
		&cli.BoolFlag{Name: "changelist-index", Value: true, HideDefault: true, Usage: "list the Change List Index (=false: the open list)"},
		&cli.BoolFlag{Name: "no-dumps", Usage: "do not write Resource Dumps and Change Dumps"},
		&cli.BoolFlag{Name: "feeds", Usage: "also publish IIIF Change Discovery and LDES change feeds"},
		&cli.BoolFlag{Name: "plain-sitemap", Usage: "also write plain sitemaps.org sitemaps"},
		&SizeFlag{Name: "dump-part-size", Usage: "largest dump package, `SIZE`", Value: 256 << 20},
		&cli.DurationFlag{Name: "dump-interval", Usage: "least time `D` between Resource Dumps", Value: 24 * time.Hour},
		&cli.BoolFlag{Name: "allow-empty", Usage: "let a scan of an emptied DIR delete all"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log each scan and publish; publish: a line per set"},
	}, s3Flags(true)...)
}

func storeFlag() cli.Flag {
	return &cli.StringFlag{Name: "store", Usage: "`URL` of the state store", DefaultText: "bolt:STATE", Sources: cli.EnvVars("RESOURCESYNC_STORE")}
}

// sourceConfig builds a source.Config from the shared flags.
func sourceConfig(ctx context.Context, cmd *cli.Command, baseURL string, stderr io.Writer) (source.Config, error) {
	ctx = storageContext(ctx, cmd)
	warnInsecure(cmd)
	cfg := source.Config{
		BaseURL:          baseURL,
		StateDir:         cmd.String("state"),
		Skip:             cmd.StringSlice("skip"),
		ChangeListPeriod: cmd.Duration("changelist-period"),
		MaxEntries:       int(cmd.Int("max-entries")),
		Dumps:            !cmd.Bool("no-dumps"),
		// Opt-in: the feeds' baseline pages take about 700 bytes per
		// resource, more than the rest of serve's state and documents.
		NoFeeds:       !cmd.Bool("feeds"),
		PlainSitemap:  cmd.Bool("plain-sitemap"),
		DumpPartBytes: cmd.Int64("dump-part-size"),
		DumpInterval:  cmd.Duration("dump-interval"),
		Archives:      true,
		// A Resource Dump kept for the archive is a second full copy of
		// DIR: none unless asked for (publish --archived-dumps N).
		ArchivedDumps: -1,
		AllowEmpty:    cmd.Bool("allow-empty"),
	}
	for _, s := range cmd.StringSlice("set") {
		name, dir, ok := strings.Cut(s, "=")
		if !ok || name == "" || dir == "" {
			return cfg, cli.Exit(fmt.Sprintf("--set %q: want NAME=DIR", s), exitUsage)
		}
		sc, err := setConfig(ctx, name, dir)
		if err != nil {
			return cfg, err
		}
		cfg.Sets = append(cfg.Sets, sc)
	}
	if cmd.Args().Len() > 1 {
		return cfg, usageError(cmd, "at most one DIR (use --set NAME=DIR for several)")
	}
	if d := cmd.Args().First(); d != "" {
		sc, err := setConfig(ctx, "default", d)
		if err != nil {
			return cfg, err
		}
		cfg.Sets = append(cfg.Sets, sc)
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
		if c := cfg.Sets[0].Content; c != nil {
			// A bucket has no DIR/.resourcesync: the state (and serve's
			// documents) go under the user's state directory, named after
			// the first set's location, as a bucket mirror's do.
			dir, err := userStateDir("sources", c.Location())
			if err != nil {
				return cfg, cli.Exit(fmt.Sprintf("%s is not a local directory and there is no user state directory (%v): give --state DIR", c.Location(), err), exitUsage)
			}
			if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(stderr, "state of the Source %s kept in %s (--state DIR to choose)\n", c.Location(), dir)
			}
			cfg.StateDir = dir
		} else {
			cfg.StateDir = filepath.Join(cfg.Sets[0].Dir, ".resourcesync")
		}
	}
	cfg.OpenChangeList = !cmd.Bool("changelist-index")
	cfg.Logger = commandLogger(cmd, stderr, slog.LevelInfo)
	return cfg, nil
}

// setConfig is one set of the command line: a local directory (a path or
// file:///path), read by the local scan's fast paths, or a location of
// another registered storage (s3://BUCKET/PREFIX), opened as a Content.
func setConfig(ctx context.Context, name, loc string) (source.SetConfig, error) {
	if storage.IsLocal(loc) {
		// A path, file:///path or file:path: one grammar (storage.LocalPath).
		dir, err := storage.LocalPath(loc)
		if err != nil {
			return source.SetConfig{}, cli.Exit(err.Error(), exitUsage)
		}
		loc = dir
		return source.SetConfig{Name: name, Dir: loc}, nil
	}
	c, err := storage.OpenContent(ctx, loc)
	if err != nil {
		return source.SetConfig{}, cli.Exit(redact.String(err.Error()), exitUsage)
	}
	return source.SetConfig{Name: name, Content: c}, nil
}

// closeContents closes the Contents setConfig opened, once the Source is
// closed (deferred before source.Open's defer, it runs after it).
func closeContents(cfg source.Config) {
	for _, sc := range cfg.Sets {
		if sc.Content != nil {
			sc.Content.Close()
		}
	}
}
