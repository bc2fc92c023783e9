package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/sdshare/client"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/graphstoreurl"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/sparql"
)

// sdshareSyncHelp is the help topic sdshare-mirror (with sdshareExportHelp).
const sdshareSyncHelp = `Keeps an RDF store in step with an SDShare 1.0 server.

OVERVIEW_URL is the server's overview feed. Every collection it lists (or
only those named with --collection) is kept in one named graph of the
store: by default the graph named by the collection feed's URL, or the IRI
given with --graph KEY=IRI (KEY is the collection's title or its collection
feed URL; repeatable).

The first run loads each collection's newest snapshot (its chunks when the
server offers a chunked snapshot; a 202 Accepted is waited on until the
--max-wait deadline) and sets the collection's t to the snapshot's updated instant.
Every run then reads the fragments feed since t, following its next pages,
and applies the fragments in updated order, each in one transaction: the
resource's statements and the blank nodes they reach are deleted, the
fragment inserted with fresh blank nodes; an empty fragment deletes the
resource. t advances when a page is applied, never past an entry that
failed (that entry is asked for again next time). t lives in the state
file DIR/sdshare-client.state (--state, default: the --store directory, or
./sdshare-state with --sparql-update); it survives restarts and kill -9,
since applying a fragment again is harmless. An entry or snapshot dated
more than 5 minutes in the future is applied but taken as dated at the
feed's updated (or now), with a warning, so that it cannot stop t. Every
request (feeds, snapshots, chunks, fragments) is abandoned and retried
when no bytes arrive for --timeout or its body is slower than --min-rate,
as in sync. Every request, and every redirect, stays on the overview
feed's scheme, host and port unless --allow-host names another host: a
link or redirect elsewhere fails, naming the URL. A fragment that carries
statements about another resource than its entry's (besides the blank
nodes that resource reaches) is refused, nothing of it applied, as
sdshare receive refuses it. A run follows at most 1,048,576 feed pages
and reads at most 4 GiB of feed documents (64 MiB a page; URLs up to
64 KiB); the next run goes on from t.

The store is the embedded durable quad store in --store DIR (default
./sdshare-store), or any SPARQL 1.1 Update endpoint (--sparql-update, with
--sparql-query for reads and --sparql-graph-store for the Graph Store
Protocol where the server has one).

A snapshot longer than --max-snapshot-bytes (default 4 GiB, counted after
a gzip Content-Encoding is decoded; a gzip body may expand at most
200-fold past its first 16 MiB) fails and leaves the graph as it was. The
RDF readers refuse a document that makes them keep more than 64 MiB of
prefixes, namespaces, base IRIs or open statements.

OVERVIEW_URL may instead be an LDES (its EventStream or a node): each
member's latest version goes into the named graph of what it is a version
of, a deletion drops that graph, and the next run reads only newer members.

--follow keeps running and polls every --poll-interval. Progress goes to stderr,
one line per collection step; --json prints one JSON event per line and a
final summary object on stdout.

Exit status: 0 every collection is in step; 1 some fragment or collection
failed (or the run was interrupted); 2 usage, discovery (the overview feed
cannot be read or lists no collection) or state error.`

// sdshareSyncDescription is the description --help shows; the long text is in the
// help topics (topics.go).
const sdshareSyncDescription = `Keeps an RDF store (--store DIR, or a SPARQL 1.1 Update endpoint) in step
with an SDShare 1.0 server: the first run loads each collection's snapshot
into its own named graph, later runs apply the fragments changed since.

Examples:
  resourcesync sdshare sync https://lod.example.org/sdshare/
  resourcesync sdshare sync --follow \
      --sparql-update http://127.0.0.1:3030/ds/update \
      https://lod.example.org/sdshare/

See also: resourcesync help sdshare-mirror, authentication.

Exit status: 0 every collection is in step; 1 some fragment or collection
failed (or the run was interrupted); 2 usage, discovery or state error.`

func sdshareSyncCommand() *cli.Command {
	return &cli.Command{
		Name:        "sync",
		Usage:       "keep an RDF store in step with an SDShare server's feeds",
		UsageText:   "resourcesync sdshare sync [options] OVERVIEW_URL",
		Description: sdshareSyncDescription,
		Flags: append(append(sdshareStoreFlags(), clientFlags()...),
			&cli.StringFlag{Name: "state", Usage: "state `DIR`: t per collection"},
			&cli.StringSliceFlag{Name: "graph", Usage: "keep collection `KEY=IRI` in graph IRI (repeatable)"},
			&cli.StringSliceFlag{Name: "collection", Usage: "sync only the collection `NAME` (repeatable)"},
			&cli.BoolFlag{Name: "follow", Usage: "keep running, polling every --poll-interval"},
			&cli.DurationFlag{Name: "poll-interval", Value: time.Minute, Usage: "with --follow: poll every `D`"},
			&cli.DurationFlag{Name: "timeout", Value: 60 * time.Second, Usage: "retry a request silent for `D`"},
			newBWLimitFlag(),
			&RateFlag{Name: "min-rate", Value: 1024, Usage: "retry a download below `RATE` bytes/s"},
			&cli.DurationFlag{Name: "min-rate-window", Value: 30 * time.Second, Usage: "average --min-rate over `D`"},
			&cli.DurationFlag{Name: "max-wait", Value: client.DefaultMaxWait, Usage: "wait at most `D` for a document being prepared"},
			&SizeFlag{Name: "max-snapshot-bytes", Value: client.DefaultMaxSnapshotBytes, Usage: "refuse a snapshot longer than `SIZE`"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON events, one a line, and a summary"},
			&cli.StringSliceFlag{Name: "allow-host", Usage: "also fetch from `HOST[:PORT]` (repeatable)"},
		),
		Action: runSDShareSync,
	}
}

// sdshareHTTPClient is the HTTP client of sdshare sync; tests replace it.
var sdshareHTTPClient = func(timeout time.Duration) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: timeout,
		TLSHandshakeTimeout:   timeout,
	}}
}

func runSDShareSync(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 1 {
		return usageError(cmd, "sdshare sync needs OVERVIEW_URL")
	}
	overview := sourceArg(cmd, cmd.Args().First())
	if cmd.Duration("poll-interval") <= 0 || cmd.Duration("max-wait") <= 0 {
		return cli.Exit("--poll-interval and --max-wait must be positive", exitUsage)
	}
	if cmd.Int64("max-snapshot-bytes") <= 0 {
		return cli.Exit("--max-snapshot-bytes must be positive", exitUsage)
	}
	if cmd.Float("min-rate") < 0 || cmd.Duration("min-rate-window") <= 0 {
		return cli.Exit("--min-rate must be at least 0 and --min-rate-window positive", exitUsage)
	}
	graphs := map[string]string{}
	for _, kv := range cmd.StringSlice("graph") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || !absoluteIRI(v) {
			return cli.Exit(fmt.Sprintf("--graph %q: want KEY=IRI with an absolute IRI", kv), exitUsage)
		}
		graphs[k] = v
	}
	only := map[string]bool{}
	for _, c := range cmd.StringSlice("collection") {
		only[c] = true
	}
	auth, err := clientAuth(cmd)
	if err != nil {
		return err
	}
	overview = auth.Source(overview) // the password travels in the client, never printed
	httpClient, err := auth.Client(sdshareHTTPClient(cmd.Duration("timeout")))
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	store, stateDir, err := openSDShareStore(ctx, cmd)
	if err != nil {
		return err
	}
	defer store.Close()
	// Every line and JSON object is one Write: redacted whole.
	stdout, stderr := io.Writer(redactWriter{auth, cmd.Root().Writer}), io.Writer(redactWriter{auth, cmd.Root().ErrWriter})
	if lg, err := ldesGetter(cmd, httpClient, overview); err == nil && isLDES(ctx, lg, overview) {
		return runSDShareLDES(ctx, cmd, lg, store, stateDir, overview, stdout, stderr)
	}
	state, err := client.OpenState(stateDir)
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	defer state.Close()

	asJSON, quiet := cmd.Bool("json"), cmd.Bool("quiet")
	var mu sync.Mutex
	cfg := client.Config{
		Overview:   overview,
		Store:      store,
		State:      state,
		HTTPClient: httpClient,
		MaxWait:    cmd.Duration("max-wait"),
		UserAgent:  "resourcesync-sdshare",
		AllowHosts: cmd.StringSlice("allow-host"),
		// The same stall and rate limits as sync, on every request.
		StallTimeout:  cmd.Duration("timeout"),
		MinRate:       cmd.Float("min-rate"),
		MinRateWindow: cmd.Duration("min-rate-window"),
		Graph: func(c client.Collection) string {
			if g, ok := graphs[c.CollectionFeed]; ok {
				return g
			}
			return graphs[c.Title]
		},
		Events: func(e client.Event) {
			mu.Lock()
			defer mu.Unlock()
			if asJSON {
				json.NewEncoder(stdout).Encode(struct {
					Type string `json:"event"`
					client.Event
				}{"progress", e})
				return
			}
			// -q: only the failures and warnings.
			quietKind := e.Kind == "discovered" || e.Kind == "snapshot" || e.Kind == "page"
			if line := sdshareEventLine(e); line != "" && !(quiet && quietKind) {
				fmt.Fprintln(stderr, line)
			}
		},
	}
	cfg.MaxSnapshotBytes = cmd.Int64("max-snapshot-bytes") // decoded bytes: a gzip body's expansion counts
	if len(only) > 0 {
		cfg.Only = func(c client.Collection) bool { return only[c.Title] || only[c.CollectionFeed] }
	}
	if cmd.Bool("follow") {
		var last error
		err := client.Follow(ctx, cfg, cmd.Duration("poll-interval"), func(rep *client.Report, err error) {
			mu.Lock()
			defer mu.Unlock()
			last = err
			printSDShareSummary(stdout, stderr, asJSON, rep, err, false)
		})
		if errors.Is(err, context.Canceled) && last == nil {
			return nil // Ctrl-C is how a follower stops
		}
		return cli.Exit("", exitProblems)
	}
	rep, err := client.Sync(ctx, cfg)
	interrupted := ctx.Err() != nil
	printSDShareSummary(stdout, stderr, asJSON, rep, err, interrupted)
	if h := credentialsHint(auth, err, overview); h != "" && !asJSON {
		fmt.Fprintln(stderr, strings.TrimPrefix(h, "\n"))
	}
	switch {
	case interrupted:
		return cli.Exit("", exitProblems)
	case errors.Is(err, client.ErrDiscovery), errors.Is(err, client.ErrStateCorrupt):
		return cli.Exit("", exitUsage)
	case err != nil:
		return cli.Exit("", exitUsage)
	case !rep.OK():
		return cli.Exit("", exitProblems)
	}
	return nil
}

func sdshareEventLine(e client.Event) string {
	p := "sdshare sync " + sdshareClean(e.Collection) + ": "
	t := ""
	if !e.T.IsZero() {
		t = ", t=" + e.T.Format(time.RFC3339Nano)
	}
	switch e.Kind {
	case "discovered":
		if e.T.IsZero() {
			return p + "new, loading a snapshot"
		}
		return p + "fragments since " + e.T.Format(time.RFC3339Nano)
	case "snapshot":
		return p + fmt.Sprintf("snapshot loaded, %d triples%s", e.Triples, t)
	case "page":
		return p + fmt.Sprintf("page of %d fragments applied%s", e.Fragments, t)
	case "fragment-failed":
		return p + "failed " + sdshareClean(e.URL) + ": " + sdshareClean(e.Err)
	case "future-updated":
		return p + "warning: " + sdshareClean(e.URL) + ": " + sdshareClean(e.Err)
	case "failed":
		return p + "failed: " + sdshareClean(e.Err)
	}
	return ""
}

// clean replaces control characters of text that comes from the server.
func sdshareClean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

func printSDShareSummary(stdout, stderr io.Writer, asJSON bool, rep *client.Report, err error, interrupted bool) {
	ok := err == nil && rep != nil && rep.OK() && !interrupted
	if asJSON {
		json.NewEncoder(stdout).Encode(struct {
			Event  string         `json:"event"`
			OK     bool           `json:"ok"`
			Error  string         `json:"error,omitempty"`
			Report *client.Report `json:"report,omitempty"`
		}{"summary", ok, errString(err), rep})
		return
	}
	if err != nil {
		fmt.Fprintln(stderr, "sdshare sync:", sdshareClean(err.Error()))
	}
	if rep == nil {
		return
	}
	for _, c := range rep.Collections {
		state := "in step"
		if c.Err != "" || c.FailureCount() > 0 {
			state = "NOT in step"
		}
		if interrupted {
			state = "interrupted"
		}
		fmt.Fprintf(stderr, "sdshare sync %s: %s: graph <%s>, %d fragments applied (%d deletions) on %d pages, %d failed, t=%s\n",
			sdshareClean(c.Collection.Title), state, sdshareClean(c.Graph), c.Applied, c.Deleted, c.Pages, c.FailureCount(), formatT(c.T))
	}
}

func formatT(t time.Time) string {
	if t.IsZero() {
		return "unset"
	}
	return t.Format(time.RFC3339Nano)
}

func absoluteIRI(s string) bool {
	i := strings.IndexByte(s, ':')
	return i > 0 && !strings.ContainsAny(s, " <>\"{}|\\^`")
}

// sdshareStoreFlags are the flags that choose the graph store (shared by
// sync and receive).
func sdshareStoreFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "store", Usage: "the embedded quad store in `DIR` (default ./sdshare-store)"},
		&cli.StringFlag{Name: "sparql-update", Usage: "write through the SPARQL 1.1 Update `URL` instead"},
		&cli.StringFlag{Name: "sparql-query", Usage: "with --sparql-update: the SPARQL query `URL`"},
		&cli.StringFlag{Name: "sparql-graph-store", Usage: "with --sparql-update: Graph Store Protocol `URL`"},
	}
}

const defaultSDShareStore = "sdshare-store"

// sdshareStateDir is --state, defaulting to the store directory.
func sdshareStateDir(cmd *cli.Command) string {
	if d := cmd.String("state"); d != "" {
		return d
	}
	if cmd.String("sparql-update") != "" {
		return "sdshare-state"
	}
	return graphStoreDir(orDefault(cmd.String("store"), defaultSDShareStore))
}

// graphStoreDir is the directory of the graph store URL u (u itself when
// it does not parse: opening the store reports that).
func graphStoreDir(u string) string {
	if gu, err := graphstoreurl.Parse(u); err == nil {
		return gu.Dir
	}
	return u
}

// openSDShareStore opens the store the flags choose, and returns it with
// the state directory (created).
func openSDShareStore(ctx context.Context, cmd *cli.Command) (graphstore.Store, string, error) {
	s, err := openGraphStore(ctx, cmd)
	if err != nil {
		return nil, "", err
	}
	dir := sdshareStateDir(cmd)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.Close()
		return nil, "", cli.Exit(err.Error(), exitUsage)
	}
	return s, dir, nil
}

func openGraphStore(ctx context.Context, cmd *cli.Command) (graphstore.Store, error) {
	upd := cmd.String("sparql-update")
	if upd != "" && cmd.String("store") != "" {
		return nil, cli.Exit("--store and --sparql-update exclude each other", exitUsage)
	}
	if upd == "" && (cmd.String("sparql-query") != "" || cmd.String("sparql-graph-store") != "") {
		return nil, cli.Exit("--sparql-query and --sparql-graph-store go with --sparql-update", exitUsage)
	}
	for _, u := range []string{upd, cmd.String("sparql-query"), cmd.String("sparql-graph-store")} {
		if p, err := url.Parse(u); u != "" && (err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "") {
			return nil, cli.Exit(fmt.Sprintf("SPARQL endpoint %q: want an http(s) URL", u), exitUsage)
		}
	}
	s, err := sdshareStoreOpener(ctx, sdshareStoreSpec{
		Dir:        orDefault(cmd.String("store"), defaultSDShareStore),
		Update:     upd,
		Query:      cmd.String("sparql-query"),
		GraphStore: cmd.String("sparql-graph-store"),
	})
	if err != nil {
		return nil, cli.Exit(err.Error(), exitUsage)
	}
	return s, nil
}

func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

type sdshareStoreSpec struct {
	Dir                       string // embedded store directory (when Update is "")
	Update, Query, GraphStore string // SPARQL endpoints
}

// sdshareStoreOpener opens the store a spec names.
var sdshareStoreOpener = func(ctx context.Context, spec sdshareStoreSpec) (graphstore.Store, error) {
	if spec.Update != "" {
		// A snapshot load is one long request: no header timeout here.
		return sparql.New(sparql.Endpoints{Update: spec.Update, Query: orDefault(spec.Query, spec.Update), GraphStore: spec.GraphStore}, sdshareHTTPClient(0)), nil
	}
	return graphstoreurl.Open(ctx, spec.Dir)
}
