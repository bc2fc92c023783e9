package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/aggregate"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstatus"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/aggstoreurl"
	"github.com/resourcesync-go/resourcesync/internal/httpserver"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// aggregateHelp is the help topic sources-file.
const aggregateHelp = `Keeps many Sources mirrored from one long-running process: a library
index fed by a catalogue, an institutional repository, journals and other
libraries, each kept in step, reported, and (for SDShare collections)
merged into one graph store.

--sources FILE (or an http(s) URL) lists the Sources, one per line:

    # URL                                   DEST (under --root)   options
    https://repo.example.org/               repository            --follow
    https://journals.example.net/rs/        journals/a            --poll-interval 6h --set articles
    https://cat.example.org/                catalogue             --bearer-token-file cat.token --max-delete 5%
    https://lod.example.org/sdshare/        graphs/lod            --sdshare

Options of a line: --poll-interval D, --follow (subscribe to the Source's
change notifications when it offers a hub; poll meanwhile), --set NAME
(repeatable), --sdshare (an SDShare overview feed, merged into the graph
store), --bearer-token-file FILE, --netrc-file FILE, --ca-cert FILE
(credentials only by reference to a file, relative to the sources file),
--allow-host HOST, --max-delete N|P%, --no-delete, --allow-reset,
--no-dumps, --base-url URL, --workers N, --timeout D, --include GLOB,
--exclude GLOB, --filter-from FILE (relative to the sources file, read at
each run), --force: each as sync's.
A DEST written s3://BUCKET/PREFIX mirrors into that bucket as sync does
(--s3-endpoint, --ca-cert and --insecure of aggregate apply), its state in
ROOT/.aggregate/targets/; an --sdshare line's DEST is a directory. The file is read again when
it changes (checked every --reload), on SIGHUP, and (a URL) every
--reload with If-None-Match; a file that does not parse is reported and
the Sources in force stay. Adding, changing or removing a line takes
effect without a restart; removing one never deletes its mirror. Replace
the file by writing a new one and renaming it over the old (an editor's
in-place save can be read half written, for one --reload).

A list read from a URL chooses the hosts its Sources are fetched from, so
it is trusted with nothing more: it must be https (--allow-http-sources
accepts http, loopback included), and it may name credential files only
by a path relative to --sources-files-dir DIR, inside it (no "..", no
symbolic link out); without that flag it names no local file at all.

Each Source runs as sync would, into ROOT/DEST with its own state in
ROOT/DEST/.resourcesync: the first run is a baseline, later ones apply
the Change Lists; --max-delete protects every mirror from a Source that
was emptied (by default a set of more than 100 files loses at most half).
--workers Sources run at once; a freed worker goes to the Source due
longest, among those whose host has fewer than --per-host running, so one
host's Sources never flood it and one slow Source holds at most one worker.
A run has a deadline (--run-timeout); a failed run delays that Source's
next one (5 s doubling, up to its interval), never the others'. A Source
runs one run at a time; notifications are applied as they arrive, without
waiting for a worker (they are small, and their point is latency).

The aggregator's own state (schedule, run history, leases) is in
ROOT/.aggregate/aggregate.db, or in PostgreSQL with --store
postgres://...: there several aggregate processes (each its own --node)
split the Sources between them with leases of --lease, and a killed
process's Sources move to the others once its leases expire. A run killed
with the process is recorded as interrupted, never as a success.

--status-addr HOST:PORT serves a page listing every Source (last success,
lag behind the Source, next run, failures and their reasons; sortable),
each Source's own page (as sync --status-addr), /status.json and
Prometheus /metrics. --report FILE.html writes the page, self-contained,
every minute and at exit. --json prints one JSON event per line, each
tagged with its Source ("source": DEST).

Exit status: 0 stopped by Ctrl-C or SIGTERM (--once: every Source in
sync; with a shared --store, every one this node got); 1 (--once) a
Source failed, or this node got none; 2 usage, sources file or state
error.`

// aggregateDescription is the description --help shows; the long text is in the
// help topics (topics.go).
const aggregateDescription = `Keeps many Sources mirrored from one long-running process: the --sources
file lists them, one a line (URL, DEST under --root or s3://BUCKET/PREFIX,
sync's options); each
is synced on its schedule or followed, reported on one status page, and
SDShare collections are merged into one graph store.

Examples:
  resourcesync aggregate --sources sources.txt --root /srv/mirrors
  resourcesync aggregate --sources sources.txt --once --json
  resourcesync aggregate --sources sources.txt --status-addr 127.0.0.1:8094

See also: resourcesync help sources-file, safety.

Exit status: 0 stopped by Ctrl-C or SIGTERM (--once: every Source in sync;
with a shared --store, every one this node got); 1 (--once) a Source failed,
or this node got none; 2 usage, sources file or state error.`

func aggregateCommand() *cli.Command {
	return &cli.Command{
		Name:        "aggregate",
		Usage:       "keep many Sources mirrored from one process (scheduled, followed, reported; SDShare merged into one graph store)",
		UsageText:   "resourcesync aggregate --sources FILE|URL [options]",
		Description: aggregateDescription,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "sources", Usage: "the sources `FILE` or http(s) URL"},
			&cli.BoolFlag{Name: "allow-http-sources", Usage: "accept a --sources URL over plain http"},
			&cli.StringFlag{Name: "sources-files-dir", Usage: "`DIR` whose files a --sources URL may name"},
			&cli.StringFlag{Name: "root", Value: ".", Usage: "the `DIR` every DEST is relative to"},
			&cli.StringFlag{Name: "store", Usage: "state store: bolt:`DIR` or postgres://..."},
			&cli.StringFlag{Name: "node", Usage: "this process's `NAME` in a shared store"},
			&cli.DurationFlag{Name: "lease", Value: 30 * time.Second, Usage: "a node's claim on a Source lasts `D`"},
			&cli.IntFlag{Name: "workers", Value: 4, Usage: "`N` Sources synced at once"},
			&cli.IntFlag{Name: "per-host", Value: 2, Usage: "at most `N` Sources of a host at once"},
			newBWLimitFlag(),
			&cli.IntFlag{Name: "source-workers", Value: 4, Usage: "`N` downloads at once within one Source"},
			&cli.DurationFlag{Name: "poll-interval", Value: time.Hour, Usage: "default `D` between polls of a Source"},
			&cli.DurationFlag{Name: "run-timeout", Value: time.Hour, Usage: "deadline `D` of one run"},
			&cli.DurationFlag{Name: "reload", Value: 5 * time.Second, Usage: "check the sources file every `D`"},
			&cli.BoolFlag{Name: "once", Usage: "run every Source once, then exit (for cron)"},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8093", Usage: "callbacks of --follow lines listen on `HOST:PORT`"},
			&cli.StringFlag{Name: "callback-url", Usage: "public `URL` of the callbacks"},
			&cli.StringFlag{Name: "status-addr", Usage: "serve the status page and /metrics on `HOST:PORT`"},
			&cli.StringFlag{Name: "report", Usage: "write an HTML report to `FILE` every minute"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON events, one a line, tagged by Source"},
			&cli.StringFlag{Name: "graph-store", Usage: "merge SDShare Sources into the store in `DIR`"},
			&cli.StringFlag{Name: "sparql-update", Usage: "merge them through the SPARQL Update `URL` instead"},
			&cli.StringFlag{Name: "sparql-query", Usage: "with --sparql-update: the SPARQL query `URL`"},
			&cli.StringFlag{Name: "sparql-graph-store", Usage: "with --sparql-update: Graph Store Protocol `URL`"},
		}, s3Flags(true)...),
		Action: runAggregate,
	}
}

// aggregateClient makes a Source's client when tests need loopback-only
// dialing; nil: the aggregator's own (the Source's credential files).
var aggregateClient func(s aggregate.Source) (*http.Client, error)

func runAggregate(ctx context.Context, cmd *cli.Command) error {
	// A line whose DEST is a bucket opens it with the command's
	// --s3-endpoint, --ca-cert and --insecure.
	ctx = storageContext(ctx, cmd)
	warnInsecure(cmd)
	if cmd.Args().Len() > 0 {
		return usageError(cmd, "aggregate takes no arguments (the Sources are in --sources)")
	}
	spec := cmd.String("sources")
	if spec == "" {
		return usageError(cmd, "aggregate needs --sources FILE or URL")
	}
	for _, f := range []string{"workers", "per-host", "source-workers"} {
		if n := cmd.Int(f); n < 1 || n > 256 {
			return cli.Exit(fmt.Sprintf("--%s must be between 1 and 256", f), exitUsage)
		}
	}
	for _, f := range []string{"lease", "poll-interval", "run-timeout", "reload"} {
		if cmd.Duration(f) <= 0 {
			return cli.Exit(fmt.Sprintf("--%s must be positive", f), exitUsage)
		}
	}
	if cmd.String("graph-store") != "" && cmd.String("sparql-update") != "" {
		return cli.Exit("--graph-store and --sparql-update exclude each other", exitUsage)
	}
	root, err := filepath.Abs(cmd.String("root"))
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return cli.Exit(fmt.Sprintf("--root: %v", err), exitUsage)
	}
	stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
	var outMu sync.Mutex
	// warn is for what goes wrong (a failed run, a sources file that
	// does not read), say for the rest, which -q silences.
	warn := func(format string, args ...any) {
		if cmd.Bool("json") {
			return
		}
		outMu.Lock()
		fmt.Fprintf(stderr, format+"\n", args...)
		outMu.Unlock()
	}
	say := func(format string, args ...any) {
		if !cmd.Bool("quiet") {
			warn(format, args...)
		}
	}

	// The sources: read once before anything starts, so that a bad file
	// is a usage error rather than an empty aggregator.
	loader := aggregate.NewSourcesLoaderWith(spec, sourcesHTTPClient(), aggregate.RemoteSources{
		AllowHTTP: cmd.Bool("allow-http-sources"),
		FilesDir:  cmd.String("sources-files-dir"),
	})
	srcs, _, err := loader.Load(ctx)
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	for _, s := range srcs {
		if s.Typed != "" {
			warn("%s:%d: taking %s as %s", spec, s.Line, s.Typed, s.URL)
		}
	}

	store, storeName, err := aggstoreurl.Open(ctx, cmd.String("store"), root)
	if err != nil {
		return cli.Exit(fmt.Sprintf("--store: %v", err), exitUsage)
	}
	defer store.Close()

	var gs graphstore.Store
	if cmd.String("graph-store") != "" || cmd.String("sparql-update") != "" {
		gs, err = sdshareStoreOpener(ctx, sdshareStoreSpec{Dir: cmd.String("graph-store"), Update: cmd.String("sparql-update"),
			Query: cmd.String("sparql-query"), GraphStore: cmd.String("sparql-graph-store")})
		if err != nil {
			return cli.Exit(fmt.Sprintf("graph store: %v", err), exitUsage)
		}
		defer gs.Close()
	}

	node := cmd.String("node")
	if node == "" {
		node, _ = os.Hostname()
		if node == "" {
			node = "local"
		}
	}

	var enc *json.Encoder
	if cmd.Bool("json") {
		enc = json.NewEncoder(stdout)
	}
	opt := aggregate.Options{
		Root: root, Store: store, StoreName: storeName, Node: node, LeaseTTL: cmd.Duration("lease"),
		Workers: int(cmd.Int("workers")), PerHost: int(cmd.Int("per-host")), SourceWorkers: int(cmd.Int("source-workers")),
		Interval: cmd.Duration("poll-interval"), Jitter: 0.1, RunTimeout: cmd.Duration("run-timeout"),
		Client: aggregateClient, Bandwidth: bandwidth(cmd), GraphStore: gs, Once: cmd.Bool("once"),
		Events: func(e aggregate.Event) {
			switch {
			case enc != nil:
				outMu.Lock()
				enc.Encode(e)
				outMu.Unlock()
			case e.Kind == aggregate.EventRunEnd && e.Run != nil:
				r := e.Run
				line := fmt.Sprintf("%s: %s %s in %.1f s: %d fetched, %d deleted, %d failed", e.Source, r.Mode, r.State,
					r.End.Sub(r.Start).Seconds(), r.Fetched, r.Deleted, r.Failed)
				if r.Error != "" {
					line += " (" + r.Reason + ": " + r.Error + ")"
					warn("%s", line)
					return
				}
				say("%s", line)
			case e.Kind == aggregate.EventLease && strings.HasPrefix(e.Message, "taken by"):
				// Every Source at the start: only changes of hands are news.
			case e.Kind == aggregate.EventSourcesError:
				warn("%s: %s %s%s", orDefault(e.Source, "sources"), e.Kind, e.Message, prefixed(": ", e.Error))
			case e.Kind == aggregate.EventSourceAdded, e.Kind == aggregate.EventSourceRemoved, e.Kind == aggregate.EventLease:
				say("%s: %s %s%s", orDefault(e.Source, "sources"), e.Kind, e.Message, prefixed(": ", e.Error))
			}
		},
	}

	// Callbacks for --follow Sources.
	var cbSrv *httpserver.Server
	if !opt.Once {
		ln, err := net.Listen("tcp", cmd.String("listen"))
		if err != nil {
			return cli.Exit(fmt.Sprintf("--listen: %v", err), exitUsage)
		}
		opt.CallbackBase = cmd.String("callback-url")
		if opt.CallbackBase == "" {
			opt.CallbackBase = "http://" + ln.Addr().String() + "/"
		}
		defer func() {
			if cbSrv != nil {
				cbSrv.Close()
			}
		}()
		a, err := aggregate.New(opt)
		if err != nil {
			ln.Close()
			return cli.Exit(err.Error(), exitUsage)
		}
		cbSrv = httpserver.New(a.Callbacks(), httpserver.Options{})
		go cbSrv.Serve(ln)
		return runAggregator(ctx, cmd, a, loader, srcs, say)
	}
	a, err := aggregate.New(opt)
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	return runAggregator(ctx, cmd, a, loader, srcs, say)
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// sourcesHTTPClient fetches a --sources URL.
func sourcesHTTPClient() *http.Client {
	return &http.Client{Timeout: time.Minute}
}

func runAggregator(ctx context.Context, cmd *cli.Command, a *aggregate.Aggregator, loader *aggregate.SourcesLoader, srcs []aggregate.Source, say func(string, ...any)) error {
	stderr := cmd.Root().ErrWriter
	a.SetSources(srcs)
	say("aggregating %d Sources into %s (state: %s); stop with Ctrl-C", len(srcs), cmd.String("root"), a.Snapshot().Store)

	// Status page.
	if addr := cmd.String("status-addr"); addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return cli.Exit(fmt.Sprintf("--status-addr: %v", err), exitUsage)
		}
		h := aggstatus.Handler(aggstatus.Options{Snapshot: a.Snapshot, Detail: a.Detail})
		if host, _, _ := net.SplitHostPort(addr); !httpserver.LoopbackHost(host) {
			fmt.Fprintf(stderr, "warning: --status-addr %s: the status page (the Sources' URLs, DESTs, error messages; no credentials) is readable by anyone who can reach this address\n", addr)
		} else {
			h = httpserver.LoopbackHosts(h)
		}
		srv := httpserver.New(h, httpserver.Options{ReadTimeout: time.Minute})
		go srv.Serve(ln)
		defer srv.Close()
		say("status page: http://%s/ (JSON: /status.json, metrics: /metrics)", ln.Addr())
	}

	// Reports every minute and at exit.
	report := cmd.String("report")
	writeAggReport := func() {
		if report == "" {
			return
		}
		if err := aggstatus.WriteReport(report, a.Snapshot()); err != nil {
			fmt.Fprintf(stderr, "--report: %v\n", err)
		}
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var bg sync.WaitGroup
	if !cmd.Bool("once") {
		hup := make(chan os.Signal, 1)
		aggregate.NotifyReload(hup)
		defer signal.Stop(hup)
		every := cmd.Duration("reload")
		if strings.HasPrefix(cmd.String("sources"), "http://") || strings.HasPrefix(cmd.String("sources"), "https://") {
			every *= 12
		}
		bg.Add(1)
		go func() {
			defer bg.Done()
			aggregate.WatchSources(runCtx, loader, every, hup,
				func(ss []aggregate.Source) {
					say("sources reloaded: %d Sources", len(ss))
					a.SetSources(ss)
				},
				func(err error) {
					a.SetSourcesError(err)
				})
		}()
	}
	if report != "" {
		bg.Add(1)
		go func() {
			defer bg.Done()
			t := time.NewTicker(time.Minute)
			defer t.Stop()
			for {
				select {
				case <-runCtx.Done():
					return
				case <-t.C:
					writeAggReport()
				}
			}
		}()
	}
	err := a.Run(runCtx)
	stop()
	bg.Wait()
	writeAggReport()
	if errors.Is(err, aggstore.ErrNodeInUse) {
		return cli.Exit(fmt.Sprintf("--node %s: %v; give each process that shares the store its own --node", a.Snapshot().Node, err), exitUsage)
	}
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	if cmd.Bool("once") {
		var bad []string
		srcs := a.Snapshot().Sources
		elsewhere := 0
		for _, s := range srcs {
			if s.State == aggregate.StateElsewhere && s.Runs == 0 {
				elsewhere++ // another node's (a shared --store): not ours to judge
				continue
			}
			if s.Failures > 0 || s.Runs == 0 {
				bad = append(bad, s.ID+" ("+orDefault(s.Reason, "not run")+")")
			}
		}
		if cmd.Bool("json") {
			// As sync --json: a final summary object.
			snap := a.Snapshot()
			json.NewEncoder(cmd.Root().Writer).Encode(struct {
				Event     string             `json:"event"`
				OK        bool               `json:"ok"`
				NotInSync []string           `json:"not_in_sync,omitempty"`
				Snapshot  aggregate.Snapshot `json:"snapshot"`
			}{"summary", len(bad) == 0 && ctx.Err() == nil, bad, snap})
		}
		if ctx.Err() != nil {
			return cli.Exit("interrupted; the next run resumes where this one stopped", exitProblems)
		}
		if len(bad) > 0 {
			return cli.Exit(fmt.Sprintf("%d of %d Sources not in sync: %s", len(bad), len(srcs), strings.Join(bad, ", ")), exitProblems)
		}
		if elsewhere > 0 && elsewhere == len(srcs) {
			// Nothing ran here: other nodes hold them all, or the store
			// could not be reached to claim any.
			return cli.Exit(fmt.Sprintf("none of the %d Sources was run by node %s (held by other nodes, or the store failed)", len(srcs), a.Snapshot().Node), exitProblems)
		}
		if elsewhere > 0 {
			say("%d Sources left to the other nodes", elsewhere)
		}
		return nil
	}
	say("stopped")
	return nil
}
