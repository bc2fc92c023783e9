package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/oai/harvest"
	"github.com/resourcesync-go/resourcesync/oai/oaisource"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/status"
)

// oaiHelp is the part of the help topic oai-pmh on serve's and publish's --oai-pmh.
const oaiHelp = `

OAI-PMH REPOSITORY (--oai-pmh URL)
   With --oai-pmh, the Source publishes the records of an OAI-PMH 2.0
   repository (DSpace, EPrints, Invenio, OJS, ...) instead of a directory of
   your own: its ListRecords are harvested into DIR, one file per record and
   metadata prefix, and DIR is published as usual (journal, Change Lists,
   dumps, notifications, status page). DIR and --state are required; DIR is
   created if missing, --state must lie outside DIR (the harvest state is
   kept in STATE/oai-pmh). Nothing else may write in DIR.
   A record is the resource BASE/PREFIX/HH/IDENTIFIER.xml (HH: two hex
   digits spreading the records over 256 directories; the identifier with
   '%', '/', '?', '*', '<', '>', '"', '|', '\' and control bytes
   percent-encoded), its bytes the record's <metadata> child serialised
   canonically (an unchanged record is never journaled again), its lastmod
   the record's datestamp. Deleted records are journaled as deletions;
   records with bad XML or without identifier are skipped with a warning.
   The first harvest lists everything; the next ones ask for the records
   changed since the last one (from, overlapping by one granule). Every
   --oai-full-every (default 24h; 0: never) a harvest also lists every
   record again, whatever the repository: only records whose canonical
   bytes changed are written and journaled, so it finds what a wrong from
   hid (a provider answering from=D as if it were a month later says
   noRecordsMatch while records change; the log and the status page then
   say "the repository's from missed N changes"), the deletions of a
   repository that does not report them, and the records that left an
   --oai-set (also removed at once when their header names only other
   sets). A full pass that lists nothing at all removes nothing, nor does
   one that would remove more than --oai-max-delete percent of the records
   (default 50; a listing cut short looks like mass deletions).
   resumptionTokens (with expiry and list size), noRecordsMatch and 503
   Retry-After are handled. A record whose canonical form would be over 16
   times its size (a namespace declared once, used on many elements) is
   skipped with a warning. At most --oai-max-records record files are
   kept (default 20,000,000; the largest repositories hold a few
   million), and --oai-min-free bytes (default 1 GiB) are left free on
   DIR's file system: a repository listing endless records stops the
   harvest with an error before the page that would cross either is
   written.
   Each harvested page is journaled as a whole (never half a page, even
   after kill -9): the harvester itself names the files it changed, so
   --watch is refused with --oai-pmh and --rescan-interval is off unless
   given (then its full rescans run between harvests, never during one).
   A harvest that fails is logged and tried again at the next interval
   from its last committed page; the last state stays published.
   The first harvest (empty DIR, new state) runs before the first publish
   and is the Source's baseline, as a directory's first scan: the records
   are listed, no change is journaled; meanwhile serve answers every
   request with 503 and Retry-After. serve then harvests every
   --oai-interval (publishing a long harvest as it goes); its status page
   shows the repository, the last harvest, records per second and the last
   error. publish harvests once, then publishes; it exits 1 if the harvest
   failed (what was harvested before the failure is published).
   Example: resourcesync serve --oai-pmh https://repo.example.org/oai
            --metadata-prefix oai_dc --state /var/lib/rs/state /var/lib/rs/records`

// oaiFlags are the flags of --oai-pmh; interval only for serve.
func oaiFlags(serve bool) []cli.Flag {
	fl := []cli.Flag{
		&cli.StringFlag{Name: "oai-pmh", Usage: "harvest the OAI-PMH repository at `URL` into DIR"},
		&cli.StringSliceFlag{Name: "metadata-prefix", Usage: "harvest this `PREFIX` (repeatable)", Value: []string{"oai_dc"}},
		&cli.StringSliceFlag{Name: "oai-set", Usage: "harvest only set `SPEC` (repeatable)"},
		&cli.DurationFlag{Name: "oai-full-every", Usage: "list all records every `D` (0: never)", Value: 24 * time.Hour},
		&cli.Int64Flag{Name: "oai-max-records", DefaultText: "20,000,000", Usage: "keep at most `N` records", Value: harvest.DefaultMaxRecords},
		&cli.IntFlag{Name: "oai-max-delete", Usage: "a full pass removes at most `PCT`%", Value: harvest.DefaultFullMaxRemove},
		&SizeFlag{Name: "oai-min-free", Usage: "leave `SIZE` free on DIR's disk", Value: harvest.DefaultMinFree},
	}
	if serve {
		fl = append(fl, &cli.DurationFlag{Name: "oai-interval", Usage: "harvest every `D`", Value: 10 * time.Minute})
	}
	return fl
}

// oaiPublishEvery is how often a long harvest of serve publishes the
// documents of the pages journaled so far (oaisource.Config.PublishEvery).
var oaiPublishEvery = 5 * time.Second

// checkOAIArgs checks the arguments of --oai-pmh before sourceConfig
// (which needs DIR to exist) and creates DIR.
func checkOAIArgs(cmd *cli.Command) error {
	if cmd.String("oai-pmh") == "" {
		for _, f := range []string{"metadata-prefix", "oai-set", "oai-full-every", "oai-max-records", "oai-max-delete", "oai-min-free", "oai-interval"} {
			if cmd.IsSet(f) {
				return usageError(cmd, "--"+f+" needs --oai-pmh URL")
			}
		}
		return nil
	}
	u := cmd.String("oai-pmh")
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return usageError(cmd, fmt.Sprintf("--oai-pmh %q: want the repository's http(s) base URL", u))
	}
	if cmd.Duration("oai-full-every") < 0 {
		return usageError(cmd, "--oai-full-every: want a duration, or 0 for no full pass")
	}
	if n := cmd.Int64("oai-max-records"); n == 0 || n < -1 {
		return usageError(cmd, "--oai-max-records: want a positive number, or -1 for no bound")
	}
	if n := cmd.Int("oai-max-delete"); n < 1 || n > 100 {
		return usageError(cmd, "--oai-max-delete: want a percentage from 1 to 100 (100: no bound)")
	}
	if cmd.Int64("oai-min-free") < 0 {
		return usageError(cmd, "--oai-min-free: want a number of bytes, or 0 for no floor")
	}
	if len(cmd.StringSlice("set")) > 0 {
		return usageError(cmd, "--oai-pmh publishes one directory: no --set (use --oai-set to harvest a repository's sets)")
	}
	if cmd.IsSet("watch") && cmd.Bool("watch") {
		return usageError(cmd, "--watch with --oai-pmh: the harvester names the files it changes (see OAI-PMH REPOSITORY)")
	}
	dir := cmd.Args().First()
	if dir == "" || cmd.Args().Len() > 1 {
		return usageError(cmd, "--oai-pmh URL DIR: give one DIR, where the records are kept")
	}
	state := cmd.String("state")
	if state == "" {
		return usageError(cmd, "--oai-pmh: give --state, outside DIR (the harvest state is kept there)")
	}
	if inside(state, dir) {
		return usageError(cmd, "--oai-pmh: --state must lie outside DIR")
	}
	if isPostgresURL(cmd.String("store")) {
		return usageError(cmd, "--oai-pmh with a shared --store postgres://: not supported yet (replicas would each harvest); use the default store")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	return nil
}

// inside reports whether p is dir or lies in it (after making both
// absolute and resolving symbolic links where they exist).
func inside(p, dir string) bool {
	abs := func(s string) string {
		a, err := filepath.Abs(s)
		if err != nil {
			return filepath.Clean(s)
		}
		if r, err := filepath.EvalSymlinks(a); err == nil {
			return r
		}
		return a
	}
	a, d := abs(p), abs(dir)
	rel, err := filepath.Rel(d, a)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// newOAISource opens the harvester of --oai-pmh (nil when not given) and
// adds its section to the status page of cfg; serve publishes during a
// harvest, publish once after it.
func newOAISource(cmd *cli.Command, cfg *source.Config, serve bool) (*oaisource.Repository, error) {
	u := cmd.String("oai-pmh")
	if u == "" {
		return nil, nil
	}
	oc := oaisource.Config{
		Harvest: harvest.Config{
			Endpoint:      u,
			Prefixes:      cmd.StringSlice("metadata-prefix"),
			Sets:          cmd.StringSlice("oai-set"),
			Dir:           cfg.Sets[0].Dir,
			State:         filepath.Join(cfg.StateDir, "oai-pmh"),
			Client:        syncClient(4, time.Minute),
			FullEvery:     oaiFullEvery(cmd.Duration("oai-full-every")),
			MaxRecords:    cmd.Int64("oai-max-records"),
			MinFree:       oaiMinFree(cmd.Int64("oai-min-free")),
			FullMaxRemove: cmd.Int("oai-max-delete"),
		},
		Logger:         cfg.Logger,
		FailureMessage: oaiFailure,
	}
	if serve {
		oc.PublishEvery = oaiPublishEvery
	}
	o, err := oaisource.New(oc)
	if err != nil {
		return nil, cli.Exit("--oai-pmh: "+err.Error(), exitUsage)
	}
	cfg.StatusSections = func() []status.Section { return []status.Section{o.Section()} }
	return o, nil
}

// oaiFailure words a failed harvest's log message with the flags that
// bound it.
func oaiFailure(err error) string {
	switch {
	case errors.Is(err, harvest.ErrTooManyRecords):
		return "harvest stopped at --oai-max-records; raise it if the repository is that large"
	case errors.Is(err, harvest.ErrLowDiskSpace):
		return "harvest stopped at --oai-min-free; make room (or lower it) and the next harvest goes on"
	}
	return oaisource.FailureMessage(err)
}

// oaiFullEvery is harvest.Config.FullEvery for --oai-full-every d: 0
// there means no full pass (negative for the harvester, whose 0 is its
// default).
func oaiFullEvery(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// oaiMinFree is harvest.Config.MinFree for --oai-min-free n: 0 there
// means no floor.
func oaiMinFree(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}
