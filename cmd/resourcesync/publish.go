package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/oai/harvest"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/storage"
)

// publishHelp is publish's part of the help topic layout.
const publishHelp = `Writes DIR's ResourceSync documents as static files into OUT, for hosting on
any web server or object store at --base-url (which must also serve DIR's
files at BASE/<path>). Running it again scans DIR, records what changed in
the change journal (--state, default DIR/.resourcesync) and updates the
documents; closed Change Lists are never rewritten. Beside each document
NAME.xml it writes NAME.html (NAME.2.html, … beyond 1,000 entries), a page
to read it in a browser, linked to the pages of the other documents
(--no-html: none); a page is rewritten only when its document's bytes
change. The layout is serve's (above).
DIR may be a bucket, s3://BUCKET/PREFIX, scanned by listing; its state is then
kept under the user's state directory (~/.local/state/resourcesync/sources/)
unless --state says where.
OUT may be one too: the documents are written into STATE/out, then each new
or rewritten one is uploaded with its Content-Type (application/xml, text/html,
application/zip, text/plain for robots.txt); STATE/out.uploaded records what
was uploaded, so that an unchanged document is not sent again and only
objects publish wrote are ever overwritten or removed (--s3-endpoint URL
names an S3-compatible server; --ca-cert and --insecure apply to it).

OUT and the state directory are never scanned when they lie inside DIR
(whatever the spelling), nor OUT's robots.txt when OUT is DIR itself.
DIR must exist (exit 2 otherwise). A scan that finds DIR missing, or
holding no file while the state holds resources (unmounted, emptied),
records nothing and publish exits 1 naming --allow-empty, which lets a
real emptying through.`

// leadWait is how long publish waits for the scanner roles of a shared
// store: a holder that died frees its role within about 20 s.
var leadWait = 30 * time.Second

// publishDescription is the description --help shows; the long text is in the
// help topics (topics.go).
const publishDescription = `Writes DIR's ResourceSync documents as static files into OUT, for any web
server or object store that serves DIR's files at --base-url; a browser page
NAME.html beside each. Run it again to record and publish what changed. DIR
may be a bucket, s3://BUCKET/PREFIX (scanned by listing; state: --state).

Examples:
  resourcesync publish --base-url https://data.example.org/ --out ./out ./data
  resourcesync publish --base-url https://data.example.org/ --out ./out \
      --oai-pmh https://repo.example.org/oai --state ./state ./records

See also: resourcesync help layout, dumps, safety, state, oai-pmh.`

func publishCommand() *cli.Command {
	return &cli.Command{
		Name:        "publish",
		Usage:       "write a directory's ResourceSync documents as static files",
		UsageText:   "resourcesync publish --base-url URL --out OUT [options] [DIR]",
		Description: publishDescription,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "base-url", Usage: "public `URL` of the Source", Required: true},
			&cli.StringFlag{Name: "out", Usage: "`OUT` directory (or s3://BUCKET/PREFIX) to write into", Required: true, TakesFile: true},
			&cli.BoolFlag{Name: "no-html", Usage: "write no NAME.html page beside each document"},
			&cli.BoolFlag{Name: "dumps", Usage: "also write dump ZIPs (a second read of every file)"},
			&cli.IntFlag{Name: "archived-dumps", Usage: "with --dumps, keep `N` earlier Resource Dumps (copies of DIR)"},
		}, append(publishSourceFlags(), oaiFlags(false)...)...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := checkOAIArgs(cmd); err != nil {
				return err
			}
			cfg, err := sourceConfig(ctx, cmd, cmd.String("base-url"), cmd.Root().ErrWriter)
			if err != nil {
				return err
			}
			defer closeContents(cfg)
			if cmd.Bool("dumps") && cmd.Bool("no-dumps") {
				return usageError(cmd, "--dumps and --no-dumps: give one")
			}
			// Static dumps are opt-in: see publishSourceFlags.
			cfg.Dumps = cmd.Bool("dumps")
			// The Resource Dump Archive keeps N earlier dumps; 0: none.
			cfg.ArchivedDumps = max(int(cmd.Int("archived-dumps")), 0)
			if cfg.ArchivedDumps == 0 {
				cfg.ArchivedDumps = -1
			}
			cfg.Out = cmd.String("out")
			var outTarget storage.Target
			if !storage.IsLocal(cfg.Out) {
				// A bucket: the documents are written into a directory of
				// the state, then uploaded (publish.Upload).
				if outTarget, err = storage.OpenTarget(storageContext(ctx, cmd), cfg.Out); err != nil {
					return cli.Exit(fmt.Sprintf("--out %s: %s", cfg.Out, redact.String(err.Error())), exitUsage)
				}
				defer outTarget.Close()
				cfg.Out = filepath.Join(cfg.StateDir, "out")
			}
			cfg.NoCompanions = cmd.Bool("no-html")
			if !cmd.Bool("verbose") {
				// Quiet by default: warnings and errors, then the result line.
				cfg.Logger = commandLogger(cmd, cmd.Root().ErrWriter, slog.LevelWarn)
			}
			oai, err := newOAISource(cmd, &cfg, false)
			if err != nil {
				return err
			}
			defer oai.Close()
			clean := redact.String
			if oai != nil {
				clean = oai.Clean // errors name the endpoint: no user information
			}
			src, err := source.Open(cfg)
			if err != nil {
				return cli.Exit(err.Error()+lockedHint(err), exitUsage)
			}
			defer src.Close()
			start := time.Now()
			// With a shared store, wait for the scanner role of every set
			// (a serve replica may hold it; a one-shot publish then waits).
			lctx, cancel := context.WithTimeout(ctx, leadWait)
			release, err := src.LeadAll(lctx)
			cancel()
			if err != nil {
				if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
					err = fmt.Errorf("another process (a serve replica?) has held the scanner role for %v: %w", leadWait, err)
				}
				return cli.Exit(err.Error(), exitUsage)
			}
			defer release()
			var harvestErr error
			var hs harvest.Stats
			var rep source.Report
			if oai != nil && oai.Empty() {
				// The first harvest: the Source's baseline, scanned below.
				hs, harvestErr = oai.Harvest(ctx, nil)
				oai = nil
			}
			if oai != nil {
				// Record what a killed run left, then each page as
				// harvested; publish once at the end.
				rep.Scans, err = src.Scan(ctx)
				if err == nil {
					hs, harvestErr = oai.Harvest(ctx, src)
					var rr source.Report
					if rr, err = src.Render(ctx); err == nil {
						rep.Publish = rr.Publish
					}
				}
			} else if ctx.Err() == nil {
				rep, err = src.Update(ctx)
			}
			if ctx.Err() != nil {
				return cli.Exit(ctx.Err().Error(), exitUsage)
			}
			refused := source.Refused(err)
			if err != nil && !refused {
				return cli.Exit(err.Error(), exitUsage)
			}
			w := cmd.Root().Writer
			var resources int64
			var created, updated, deleted int
			baseline := true
			for _, s := range rep.Publish.Sets {
				sc := rep.Scans[s.Name]
				what := fmt.Sprintf("%d created, %d updated, %d deleted", sc.Created, sc.Updated, sc.Deleted)
				if sc.Baseline {
					what = "first scan: the baseline, no changes recorded"
				} else {
					baseline = false
					created, updated, deleted = created+sc.Created, updated+sc.Updated, deleted+sc.Deleted
				}
				resources += s.Resources
				if cmd.Bool("verbose") {
					fmt.Fprintf(w, "set %s: %d resources (%s), %d Change Lists, %d Resource Dump packages\n",
						s.Name, s.Resources, what, s.ChangeLists, s.DumpParts)
				}
			}
			what := fmt.Sprintf("%d created, %d updated, %d deleted", created, updated, deleted)
			if baseline {
				what = "baseline"
			}
			if cmd.String("oai-pmh") != "" {
				what = fmt.Sprintf("harvested %d written, %d unchanged, %d deleted, %d malformed skipped", hs.Written, hs.Unchanged, hs.Deleted, hs.Malformed)
				if hs.Collided > 0 {
					what += fmt.Sprintf(", %d refused (identifier differs only in case from another's)", hs.Collided)
				}
			}
			out := src.Out()
			if outTarget != nil {
				st, uerr := publish.Upload(ctx, cfg.Out, outTarget, filepath.Join(cfg.StateDir, "out.uploaded"), cfg.Logger)
				if uerr != nil {
					return cli.Exit(fmt.Sprintf("--out %s: the upload failed (the next run sends what is missing): %s", outTarget.Location(), redact.String(uerr.Error())), exitUsage)
				}
				out = fmt.Sprintf("%s (%d objects written, %d unchanged, %d removed", outTarget.Location(), st.Written, st.Unchanged, st.Removed)
				if st.NotOurs > 0 {
					out += fmt.Sprintf(", %d not ours left alone", st.NotOurs)
				}
				out += ")"
			}
			fmt.Fprintf(w, "published %d resources (%s) to %s in %s; Source Description: %s.well-known/resourcesync\n",
				resources, what, out, time.Since(start).Round(time.Millisecond), src.BaseURL())
			if refused {
				return cli.Exit(err.Error(), exitProblems)
			}
			if harvestErr != nil {
				return cli.Exit("--oai-pmh: harvest failed (what was harvested before is published; the next run resumes): "+clean(harvestErr.Error()), exitProblems)
			}
			return nil
		},
	}
}

// publishSourceFlags are serve's source flags for publish, where dumps are
// opt-in (--dumps): a static dump is a ZIP copy of every file, written by
// reading each file a second time after the scan hashed it, which doubled
// the cost of a default publish (issue 33), for a tree any web server
// serves file by file anyway. serve offers them by default at no such
// cost (produced on request). --no-dumps, publish's old way to turn them
// off, is still accepted, hidden: it is now the default.
func publishSourceFlags() []cli.Flag {
	fs := sourceFlags()
	for i, f := range fs {
		if b, ok := f.(*cli.BoolFlag); ok && b.Name == "no-dumps" {
			fs[i] = &cli.BoolFlag{Name: "no-dumps", Hidden: true, Usage: b.Usage}
		}
	}
	return fs
}
