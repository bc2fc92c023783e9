package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/cmd/resourcesync/internal/progress"
	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/status"
	"github.com/resourcesync-go/resourcesync/internal/httpserver"
	"github.com/resourcesync-go/resourcesync/storage"
)

// syncHelp is the help topic mirroring (with syncMoreHelp).
const syncHelp = `Mirrors a ResourceSync Source into DEST and keeps it in step.

SOURCE is the Source's base URL, its /.well-known/resourcesync, a Source
Description, a Capability List, or a Resource List / Change List given
directly. Discovery also follows Link headers, <link rel="resourcesync"> in
HTML and Sitemap: lines in robots.txt. A document named explicitly (a
.xml/.gz file or a .well-known/resourcesync) that cannot be fetched is an
error: only a base URL or a web page is searched beside. SOURCE may also be
an IIIF Change Discovery collection or page, or an LDES (its EventStream or
a node): the objects its activities or members name are mirrored, and each
run reads only what is newer than the last.

The first run makes a baseline copy (from a Resource Dump when one is
offered, then the Resource List, caught up with the Change Lists written
after it; from a resourcesync serve, whose bulk GET is faster and verified
alike, without the dump unless --dumps); later runs apply the Change Lists
published since the last synchronized point. A gap (the Source no longer
lists changes this copy needs, or answers 404 for the Change List it
advertises) is reported and repaired against the current Resource List. A
Change List that cannot be read during a baseline (a 5xx after the retries)
does not stop it: the Resource List's snapshot is installed, the checkpoint
stops at the list's "at", and the run exits 1 naming the Change List; the
next run catches up from the Change Lists once they answer.
--audit re-hashes DEST and compares it with the Source (add --repair to fix
what differs).

Resources land at DEST/<path of the URI relative to the Source's base>; URIs
outside the Source's authority or that would map outside DEST are refused,
and so are redirects and rel="duplicate" locations that leave the Source's
scheme, host and port (unless --allow-host names their host): that resource
fails, or discovery stops, with "redirect to URL leaves the Source's
authority". Resources whose URIs are on a host --allow-host names (a CDN, a
storage host) are mirrored too, into DEST/_hosts/<host>[_<port>]/<path>
(the host in lower case, the port unless it is the scheme's default, e.g.
DEST/_hosts/cdn.example.org_8443/img/a.png), and deleted, audited and
owned like the Source's own. While --allow-host is given, DEST/_hosts is
reserved: a resource of the Source itself that would map there is refused. A request whose response stalls for --timeout, or whose body
trickles in below --min-rate, is abandoned and retried. When the Source's
documents name another host than SOURCE (localhost for 127.0.0.1, a
proxy's public name), the run stops and names the --base URL that makes
them the Source's own.
The length and the strongest offered digest (sha-256, else sha-1, else md5;
--verify all: every offered one) are verified while the body streams, what
was computed is recorded for later audits, files are installed with a rename, and state lives in DEST/.resourcesync (locked, so
two runs cannot overlap). Only files this tool wrote are ever deleted: a
file already in DEST with the Source's bytes is adopted but never deleted,
one with other bytes is not overwritten (reported as a failure). URIs are
compared in RFC 3986 normal form (/a%41 is /aA); two that are not equivalent
but map to one file are refused.`

// syncSafetyHelp is sync's part of the help topic "safety".
const syncSafetyHelp = `--max-delete N|P% caps the files one run deletes in a set (the baseline's
files no longer listed, Change List deletions, --audit --repair's extras;
with --follow, each notification plus the set's deletions of the last hour):
by default half of a set of more than 100 files; -1 or 100%: no limit.
Beyond it nothing is deleted in that set, the run exits 1 naming the flag
and the counts, and the checkpoint stays before the deletions, so that the
next run with a higher limit applies them. The limit counts against the set
as it was before the run added files, and a refusal stands (against that
size) until a run allows the deletions or the Source takes them back.

A Source that starts afresh (a DIR served again after it was emptied or
unmounted, its state inside it lost too) names under half of the mirror's
files and its Change Lists begin after the mirror's checkpoint: nothing is
deleted, whatever the set's size, and the run exits 1 naming
--allow-reset, which lets the mirror follow the new Source (deletions
still within --max-delete). A Source that deleted its files lists the
deletions and is followed as usual.`

// syncMoreHelp is the rest of the help topic "mirroring".
const syncMoreHelp = `A resource that changes or goes away at the Source while a run fetches
it (a 404, or bytes that no longer match the list) is judged against
what the Source says then (the Change Lists since, or the Resource List
again, read for a few seconds while it catches up): its newer version is
fetched, or it is deleted when the Source now says so; it is reported as
vanished, and is no failure. A 404 or a mismatch that the Source's later
state does not explain still fails the run.

--follow keeps running after the first sync: it subscribes to each set's
change-notification channel at the Source's WebSub hub (callback on --listen,
by default an ephemeral loopback port so that several followers run side by
side, or as --callback-url, which listens on 127.0.0.1:8091 unless --listen
says otherwise), applies every notification through the same planner and
fetcher, catches up from the Change Lists after a gap, a restart or while the
hub is unreachable (every --poll-interval), renews the lease, and
unsubscribes on Ctrl-C. A hub that refuses the callback address (hub and
serve refuse loopback and private ones unless started with
--allow-private-callbacks) is reported as such, with that remedy or a
public --callback-url; the Change Lists are polled meanwhile. Without
--callback-url and --listen, a set whose Source offers the live push over
WebSocket (serve does) is followed through it instead: no callback, so a
mirror behind NAT gets push too; it reconnects and catches up after a drop.

--status-addr HOST:PORT serves a live status page while the command runs
(most useful with --follow): per set the checkpoint the state records, the
lag behind the Source, the last changes applied, the failures with their
reasons, files and bytes per minute over the last hour, totals, uptime,
and whether changes arrive by notification (with the lease's end) or by
polling; the same figures are at /status.json. The page is read-only and
holds no credentials, but it names the Source, DEST and error messages:
an address other than loopback is served (with a warning), so choose it
knowingly. --report FILE.html writes the same page, self-contained (no
script, nothing to load), when the run ends, atomically (with --follow,
also every minute and at exit).

Exit status: 0 DEST is in sync (--follow: also when stopped by Ctrl-C or
SIGTERM); 1 the run finished with failures (or, with --audit, differences)
or was interrupted (Ctrl-C, SIGTERM); 2 usage, discovery or state error,
including a Source that does not answer within --timeout.`

// syncDescription is the description --help shows; the long text is in the
// help topics (topics.go).
const syncDescription = `Mirrors a ResourceSync Source into DEST and keeps it in step: a baseline
copy, then the Change Lists since; --audit compares, --follow applies
notifications as they arrive. Only files it wrote are ever deleted, at most
--max-delete a run.

Examples:
  resourcesync sync https://data.example.org/ ./mirror
  resourcesync sync --dry-run https://data.example.org/ ./mirror
  resourcesync sync --follow --status-addr 127.0.0.1:8092 https://ex.org/ m/

See also: resourcesync help mirroring, safety, authentication.

Exit status: 0 DEST is in sync; 1 failures (with --audit: differences) or
interrupted; 2 usage, discovery or state error.`

func syncCommand() *cli.Command {
	return &cli.Command{
		Name:        "sync",
		Usage:       "mirror a ResourceSync Source into a directory (baseline, incremental, audit)",
		UsageText:   "resourcesync sync [options] SOURCE DEST|s3://BUCKET/PREFIX",
		Description: syncDescription,
		Flags: append(append([]cli.Flag{
			&cli.BoolFlag{Name: "baseline", Usage: "force a baseline from the current Resource List"},
			&cli.BoolFlag{Name: "audit", Usage: "only compare DEST with the Source (exit 1 if differ)"},
			&cli.BoolFlag{Name: "repair", Usage: "with --audit: fix what differs"},
			&cli.IntFlag{Name: "workers", Value: 8, Usage: "`N` concurrent downloads"},
			&cli.FloatFlag{Name: "rate", Usage: "at most `R` requests per second per host"},
			&cli.BoolFlag{Name: "no-delete", Usage: "keep files whose resources the Source deleted"},
			&cli.StringFlag{Name: "max-delete", Usage: "delete at most `N` (or P%) files of a set in a run"},
			&cli.BoolFlag{Name: "allow-reset", Usage: "follow a Source that started afresh (help safety)"},
			&cli.BoolFlag{Name: "force", Usage: "replace files not written here (help mirroring)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "touch nothing; list what would be done"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON events, one a line, and a summary"},
			&cli.StringFlag{Name: "set", Usage: "synchronize only the set `NAME`"},
			&cli.StringFlag{Name: "state", Usage: "a bucket DEST's state `DIR` (default: one per bucket)"},
			&cli.StringFlag{Name: "base-url", Usage: "the Source's base `URL` (default: discovered)"},
			&cli.BoolFlag{Name: "no-dumps", Usage: "never use Resource Dumps for a baseline"},
			&cli.BoolFlag{Name: "dumps", Usage: "take a Resource Dump even where a bulk GET is faster"},
			&cli.StringFlag{Name: "verify", Value: "strongest", Usage: "`WHICH` digests to check: strongest or all"},
			&cli.BoolFlag{Name: "fsync", Usage: "fsync every file before its rename"},
			&cli.DurationFlag{Name: "timeout", Value: 60 * time.Second, Usage: "retry a request silent for `D`"},
			newBWLimitFlag(),
			&RateFlag{Name: "min-rate", Value: 1024, Usage: "retry a download below `RATE` bytes/s"},
			&cli.DurationFlag{Name: "min-rate-window", Value: 30 * time.Second, Usage: "average --min-rate over `D`"},
			&cli.StringSliceFlag{Name: "allow-host", Usage: "also fetch from `HOST[:PORT]` (repeatable)"},
			&cli.StringFlag{Name: "progress", Value: "auto", Usage: "`HOW`: auto, bars, lines or quiet"},
			&cli.StringFlag{Name: "status-addr", Usage: "serve a live status page on `HOST:PORT`"},
			&cli.StringFlag{Name: "report", Usage: "write an HTML report to `FILE` at the end"},
		}, append(filterFlags(), followFlags()...)...), append(clientFlags(), s3Flags(false)...)...),
		Action: runSync,
	}
}

// syncClient is the HTTP client of sync; tests replace it.
var syncClient = func(workers int, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          4 * workers,
		MaxIdleConnsPerHost:   2 * workers,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: timeout,
		TLSHandshakeTimeout:   timeout,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: tr}
}

func runSync(ctx context.Context, cmd *cli.Command) error {
	args := cmd.Args().Slice()
	if len(args) != 2 {
		return usageError(cmd, "sync needs SOURCE and DEST")
	}
	if cmd.Bool("dumps") && cmd.Bool("no-dumps") {
		return usageError(cmd, "--dumps and --no-dumps: give one")
	}
	if cmd.Bool("baseline") && cmd.Bool("audit") {
		return cli.Exit("--baseline and --audit exclude each other", exitUsage)
	}
	if cmd.Bool("repair") && !cmd.Bool("audit") {
		return cli.Exit("--repair goes with --audit", exitUsage)
	}
	if v := cmd.String("verify"); v != "all" && v != "strongest" {
		return cli.Exit("--verify must be all or strongest", exitUsage)
	}
	if cmd.Float("min-rate") < 0 || cmd.Duration("min-rate-window") <= 0 {
		return cli.Exit("--min-rate must be at least 0 and --min-rate-window positive", exitUsage)
	}
	workers := int(cmd.Int("workers"))
	if workers < 1 || workers > 256 {
		return cli.Exit("--workers must be between 1 and 256", exitUsage)
	}
	mode, err := progress.ParseMode(cmd.String("progress"))
	if err != nil || mode == progress.JSON {
		return cli.Exit("--progress must be auto, bars, lines or quiet (--json prints JSON events)", exitUsage)
	}
	auth, err := clientAuth(cmd)
	if err != nil {
		return err
	}
	// The credentials travel in the client from here on; SOURCE keeps no
	// password that could be printed.
	args[0] = auth.Source(sourceArg(cmd, args[0]))
	client, err := auth.Client(syncClient(workers, cmd.Duration("timeout")))
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	if cmd.Bool("quiet") {
		mode = progress.Quiet
	}
	stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
	var r *progress.Renderer
	if cmd.Bool("json") {
		r = progress.New(stdout, progress.JSON)
	} else {
		r = progress.New(stderr, mode)
	}
	audit := &auditTable{max: 10000}
	maxDelete := destination.DeleteLimit{}
	if cmd.IsSet("max-delete") {
		if maxDelete, err = destination.ParseDeleteLimit(cmd.String("max-delete")); err != nil {
			r.Close()
			return cli.Exit(err.Error(), exitUsage)
		}
	}
	include, err := commandFilter(cmd)
	if err != nil {
		r.Close()
		return err
	}
	var dry *dryRunList
	if cmd.Bool("dry-run") && !cmd.Bool("json") {
		dry = &dryRunList{w: stdout}
	}
	rec, stopStatus, err := startStatus(cmd, args)
	if err != nil {
		r.Close()
		return err
	}
	defer stopStatus()
	dest, tg, err := openSyncDest(ctx, cmd, args[1], stderr)
	if err != nil {
		r.Close()
		return err
	}
	if tg != nil {
		defer tg.Close()
	}
	opt := destination.Options{
		Dest:          dest,
		Target:        tg,
		Client:        client,
		Workers:       workers,
		RatePerHost:   cmd.Float("rate"),
		NoDelete:      cmd.Bool("no-delete"),
		MaxDelete:     maxDelete,
		AllowReset:    cmd.Bool("allow-reset"),
		DryRun:        cmd.Bool("dry-run"),
		Repair:        cmd.Bool("repair"),
		Set:           cmd.String("set"),
		Base:          cmd.String("base-url"),
		NoDump:        cmd.Bool("no-dumps"),
		PreferDump:    cmd.Bool("dumps"),
		FsyncEach:     cmd.Bool("fsync"),
		VerifyAll:     cmd.String("verify") == "all",
		StallTimeout:  cmd.Duration("timeout"),
		MinRate:       cmd.Float("min-rate"),
		MinRateWindow: cmd.Duration("min-rate-window"),
		AllowHosts:    cmd.StringSlice("allow-host"),
		Include:       include,
		Force:         cmd.Bool("force"),
		Events: func(e destination.Event) {
			e = redactEvent(auth, e)
			r.Handle(e)
			audit.add(e)
			if dry != nil {
				dry.Handle(e)
			}
			if rec != nil {
				rec.Handle(e)
			}
		},
	}
	switch {
	case cmd.Bool("baseline"):
		opt.Mode = destination.ModeBaseline
	case cmd.Bool("audit"):
		opt.Mode = destination.ModeAudit
	}
	if cmd.Bool("follow") {
		if opt.Mode != destination.ModeAuto || opt.DryRun || cmd.Bool("json") {
			return cli.Exit("--follow does not go with --baseline, --audit, --dry-run or --json", exitUsage)
		}
		r.Close()
		return runFollow(ctx, cmd, args[0], opt, rec, auth)
	}
	rep, err := destination.Sync(ctx, args[0], opt)
	r.Close()
	redactReport(auth, rep)
	if rep != nil && rec != nil {
		rec.SetBase(rep.Base)
	}
	reportErr := writeReport(cmd, rec)
	// Interrupted means Ctrl-C or SIGTERM (this command's context), not a
	// request that timed out, which also wraps context.DeadlineExceeded.
	interrupted := err != nil && ctx.Err() != nil
	ok := err == nil && rep.OK(opt.Mode == destination.ModeAudit, opt.Repair)
	if cmd.Bool("json") {
		json.NewEncoder(stdout).Encode(struct {
			Event  string              `json:"event"`
			OK     bool                `json:"ok"`
			Error  string              `json:"error,omitempty"`
			Report *destination.Report `json:"report,omitempty"`
		}{"summary", ok, auth.Redact(errString(err)), rep})
	} else if rep != nil {
		state := "in sync"
		switch {
		case interrupted:
			state = "interrupted"
		case err != nil:
			state = "NOT in sync"
		case opt.DryRun:
			state = "unchanged (dry run)"
		case !ok:
			state = "NOT in sync"
		}
		printReport(stdout, rep, audit, opt, state)
	}
	switch {
	case interrupted:
		return cli.Exit("interrupted; the next run resumes where this one stopped", exitProblems)
	case err != nil:
		return cli.Exit(auth.Redact(err.Error())+credentialsHint(auth, err, args[0]), exitUsage)
	case reportErr != nil:
		return cli.Exit(reportErr.Error(), exitUsage)
	case !ok:
		return cli.Exit(refusedDeletes(rep), exitProblems)
	}
	return nil
}

// refusedDeletes says which sets' deletions --max-delete or a Source
// that started afresh refused ("" if none).
func refusedDeletes(rep *destination.Report) string {
	var b strings.Builder
	for _, s := range rep.Sets {
		if s.DeleteRefused > 0 {
			fmt.Fprintf(&b, "set %s: refused to delete %d of %d files (more than --max-delete %s); run again with --max-delete 100%% (or a higher limit) to apply them\n", s.Set, s.DeleteRefused, s.DeleteRefusedOf, s.MaxDelete)
		}
		if s.ResetRefused > 0 {
			fmt.Fprintf(&b, "set %s: refused to delete the %d files mirrored: %s; if the Source was replaced on purpose, run again with --allow-reset\n", s.Set, s.ResetRefused, s.Reset)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// startStatus makes the status recorder when --status-addr or --report
// asks for one (nil otherwise: the events go nowhere else) and starts the
// status server; stop ends it.
func startStatus(cmd *cli.Command, args []string) (rec *status.Recorder, stop func(), err error) {
	addr, report := cmd.String("status-addr"), cmd.String("report")
	stop = func() {}
	if addr == "" && report == "" {
		return nil, stop, nil
	}
	if report != "" {
		if fi, err := os.Stat(filepath.Dir(report)); err != nil || !fi.IsDir() {
			return nil, stop, cli.Exit(fmt.Sprintf("--report: %s: no such directory", filepath.Dir(report)), exitUsage)
		}
	}
	command := "sync"
	for _, f := range []string{"follow", "baseline", "audit", "repair", "dry-run"} {
		if cmd.Bool(f) {
			command += " --" + f
		}
	}
	rec = status.New(status.Options{Source: args[0], Dest: args[1], Command: command})
	if addr == "" {
		return rec, stop, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, stop, cli.Exit(fmt.Sprintf("--status-addr: %v", err), exitUsage)
	}
	errw := cmd.Root().ErrWriter
	handler := rec.Handler()
	if host, _, _ := net.SplitHostPort(addr); !httpserver.LoopbackHost(host) {
		fmt.Fprintf(errw, "warning: --status-addr %s: the status page (the Source's URLs, DEST, error messages; no credentials) is readable by anyone who can reach this address\n", addr)
	} else {
		handler = httpserver.LoopbackHosts(handler) // against DNS rebinding
	}
	srv := httpserver.New(handler, httpserver.Options{ReadTimeout: time.Minute})
	go srv.Serve(ln)
	fmt.Fprintf(errw, "status page: http://%s/ (JSON: http://%s/status.json)\n", ln.Addr(), ln.Addr())
	return rec, func() { srv.Close() }, nil
}

// writeReport writes --report, when asked.
func writeReport(cmd *cli.Command, rec *status.Recorder) error {
	path := cmd.String("report")
	if path == "" || rec == nil {
		return nil
	}
	if err := rec.WriteReport(path); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// auditTable keeps the audit results that are not in sync, for the table
// printed at the end.
type auditTable struct {
	mu      sync.Mutex
	max     int
	rows    []destination.Event
	dropped int
}

func (a *auditTable) add(e destination.Event) {
	if e.Kind != destination.EventAudit || e.Status == destination.AuditInSync {
		return
	}
	a.mu.Lock()
	if len(a.rows) < a.max {
		a.rows = append(a.rows, e)
	} else {
		a.dropped++
	}
	a.mu.Unlock()
}

// printReport prints the audit table, the failures, one summary line per
// set and the final state line (the progress display does not print the
// set summaries, so each is printed once).
func printReport(w io.Writer, rep *destination.Report, audit *auditTable, opt destination.Options, state string) {
	if len(audit.rows) > 0 {
		sort.Slice(audit.rows, func(i, k int) bool { return audit.rows[i].Path < audit.rows[k].Path })
		fmt.Fprintf(w, "%-13s %s\n", "STATUS", "PATH")
		for _, e := range audit.rows {
			fmt.Fprintf(w, "%-13s %s\n", e.Status, e.Path)
		}
		if audit.dropped > 0 {
			fmt.Fprintf(w, "... and %d more\n", audit.dropped)
		}
	}
	for _, s := range rep.Sets {
		if len(s.Failures) > 0 {
			fmt.Fprintf(w, "set %s: %d failures:\n", s.Set, s.Failed)
			for _, f := range s.Failures[:min(len(s.Failures), 20)] {
				fmt.Fprintf(w, "  %s: %s\n", f.URI, f.Error)
			}
		}
	}
	for _, s := range rep.Sets {
		fmt.Fprintf(w, "set %s: %s\n", s.Set, s.Summary(opt.DryRun))
	}
	fmt.Fprintf(w, "%s: %s (%.1f s, %d retries)\n", rep.Dest, state, rep.Seconds, rep.Retries)
}

// genericTarget, set by TestModelTarget's child processes, writes even a
// local DEST through the storage.Target path (storage/local), so that the
// model test's kill -9 steps exercise the path a bucket takes.
var genericTarget bool

// openSyncDest opens DEST: a local directory is the Destination's own
// (its state inside it), returned as a path; any other location
// (s3://BUCKET/PREFIX) is opened as a storage.Target, its state in --state
// DIR or, by default, in a directory under the user's state directory
// named after the location, said on stderr when it is made.
func openSyncDest(ctx context.Context, cmd *cli.Command, loc string, stderr io.Writer) (string, storage.Target, error) {
	if storage.IsLocal(loc) && !genericTarget {
		// A path, file:///path or file:path: one grammar (storage.LocalPath).
		dir, err := storage.LocalPath(loc)
		if err != nil {
			return "", nil, cli.Exit(fmt.Sprintf("DEST %s: %v", loc, err), exitUsage)
		}
		loc = dir
		if cmd.IsSet("state") {
			return "", nil, cli.Exit("--state goes with a bucket DEST; a directory keeps its state in DEST/"+destination.StateDirName, exitUsage)
		}
		return loc, nil, nil
	}
	tg, err := storage.OpenTarget(storageContext(ctx, cmd), loc)
	if err != nil {
		return "", nil, cli.Exit(fmt.Sprintf("DEST %s: %v", loc, err), exitUsage)
	}
	dir := cmd.String("state")
	if dir == "" {
		if dir, err = defaultTargetState(tg.Location()); err != nil {
			tg.Close()
			return "", nil, cli.Exit(fmt.Sprintf("no --state DIR for %s: %v", tg.Location(), err), exitUsage)
		}
		if _, err := os.Stat(filepath.Join(dir, destination.StateDirName)); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "state of the mirror %s kept in %s (--state DIR to choose)\n", tg.Location(), dir)
		}
	}
	return dir, tg, nil
}

// defaultTargetState is the state directory of a mirror into a storage
// location: $XDG_STATE_HOME/resourcesync/mirrors/NAME (~/.local/state
// where it is not set; the user's configuration directory on macOS and
// Windows), NAME the location made a file name and a short digest of it,
// so that two locations never share a state.
func defaultTargetState(loc string) (string, error) { return userStateDir("mirrors", loc) }

// userStateDir is $XDG_STATE_HOME/resourcesync/KIND/NAME (~/.local/state
// where it is not set; the user's configuration directory on macOS and
// Windows), NAME the location made a file name and a short digest of it
// (storage.FileName): where the state of a location that has no directory
// of its own is kept by default (a bucket mirror: "mirrors"; a bucket
// Source: "sources").
func userStateDir(kind, loc string) (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		switch runtime.GOOS {
		case "darwin", "windows", "ios", "plan9":
			d, err := os.UserConfigDir()
			if err != nil {
				return "", err
			}
			base = d
		default:
			home, err := os.UserHomeDir()
			if err != nil {
				return "", err
			}
			base = filepath.Join(home, ".local", "state")
		}
	}
	return filepath.Join(base, "resourcesync", kind, storage.FileName(loc)), nil
}
