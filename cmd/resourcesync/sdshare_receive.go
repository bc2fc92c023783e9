package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/httpserver"
	"github.com/resourcesync-go/resourcesync/sdshare/push"
)

// sdshareReceiveHelp is the help topic sdshare-push.
const sdshareReceiveHelp = `Receives SDShare Push requests and applies them to an RDF store.

A sender POSTs each changed fragment to http://ADDR/?resource=R[&graph=G]
with the fragment as the body (Content-Type application/n-triples,
text/turtle or application/rdf+xml; an empty body, still with its
Content-Type, means R was deleted). The receiver replaces R's statements
and the blank nodes they reach with the fragment, in one transaction, and
answers 200 only once the store committed; 4xx means the request is wrong
and will stay wrong (no resource, R not a subject of the body, unknown
format, body larger than --max-bytes; see SAFETY), 5xx that it may be sent
again (503 with Retry-After: the receiver is busy). Applying a fragment
twice is applying it once. A body may batch several fragments: repeat resource once
per fragment; the body is split by subject closure.

Order: a sender should send the instant of the change in the header
SDShare-Updated (RFC 3339) or its stream's sequence number in
SDShare-Sequence. The receiver records the newest per resource in
DIR/sdshare-receive.order (--state; default the --store directory, or
./sdshare-state with --sparql-update) and acknowledges an older fragment
without applying it, so a late duplicate never undoes a newer change.

Requests without graph go to --graph (400 when it is not set). GET /ping
answers pong, GET /status counts the pushes applied, deleted, stale and
refused. Ctrl-C or SIGTERM stops the receiver after the requests in
progress.

SAFETY
   Without --auth-token-file, anyone who can reach --addr can replace or
   delete any resource's statements in the store. On a loopback address
   that is the programs of this machine, and the web pages its browsers
   open: those are stopped by what follows. On any other address it is the
   whole network: give --auth-token-file there (the receiver warns at
   start when it listens beyond loopback without it), and HTTPS in front.
   - A request from a web page of another origin (Origin, "null" too, or
     Sec-Fetch-Site other than same-origin) gets 403; a CORS preflight is
     never allowed (405). On loopback without a token, so does a request
     whose Host is not 127.0.0.1, [::1] or localhost (a page whose own
     name was made to resolve here: DNS rebinding).
   - Only RDF types are taken (415 otherwise), an empty deleting body
     included: a page may send a form, text/plain or no Content-Type
     anywhere without asking. text/plain, N-Triples' old type, is refused
     too unless the receiver requires a token (then every push is
     authenticated, which a page cannot forge) or --allow-text-plain is
     given for old senders.
   - SDShare-Updated more than --max-clock-skew after this machine's clock
     is refused (400) and not recorded: recorded, a forged instant in 2262
     would make every later genuine push of the resource stale. So is
     SDShare-Sequence above 2^63-1, or more than --max-sequence-gap past
     the highest its graph admitted. A graph's first is held to the same
     gap from 0 (a sender long under way: raise the gap), unless the
     receiver requires a token: then it is taken as it comes. A sender
     whose clock runs ahead is refused until this clock catches up; sdshare
     serve --push retries it at its longest interval.
   - Each push reserves its Content-Length (--max-bytes when chunked) times
     40 (the memory a push takes per byte of body, measured) in
     --max-memory before its body is read; a push that does not fit beside
     those in progress gets 503 with Retry-After: 2 (sdshare serve --push
     waits that long), its body then read and discarded (no memory): a
     sender that writes its whole body before it reads gets the 503, not a
     connection reset. A push alone is always taken. A denser body
     (Turtle's object lists) takes more as its statements are read, up
     to --max-memory (413 beyond it).
   The refusals are logged (stderr) and counted at GET /status.

Exit status: 0 stopped by a signal; 2 usage, store or listen error.`

// sdshareReceiveDescription is the description --help shows; the long text is in the
// help topics (topics.go).
const sdshareReceiveDescription = `Receives SDShare Push requests (POST ?resource=R[&graph=G], the fragment as
the body) and applies each to an RDF store in one transaction; a late
duplicate never undoes a newer change. Without --auth-token-file anyone who
reaches --addr can change the store: read resourcesync help sdshare-push.

Examples:
  resourcesync sdshare receive --store ./sdshare-store --graph https://ex.org/g
  resourcesync sdshare receive --addr 0.0.0.0:8950 --auth-token-file tokens \
      --sparql-update http://127.0.0.1:3030/ds/update

See also: resourcesync help sdshare-push, authentication,
connections.

Exit status: 0 stopped by a signal; 2 usage, store or listen error.`

func sdshareReceiveCommand() *cli.Command {
	return &cli.Command{
		Name:        "receive",
		Usage:       "apply SDShare Push fragments POSTed to this endpoint to an RDF store",
		UsageText:   "resourcesync sdshare receive [options]",
		Description: sdshareReceiveDescription,
		Flags: append(sdshareStoreFlags(),
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8950", Usage: "listen on `HOST:PORT`"},
			&cli.StringFlag{Name: "graph", Usage: "graph `IRI` of requests without a graph"},
			&cli.StringFlag{Name: "state", Usage: "state `DIR`: each resource's order"},
			&SizeFlag{Name: "max-bytes", Value: push.DefaultMaxBytes, Usage: "refuse bodies over `SIZE` (413)"},
			&SizeFlag{Name: "max-memory", Value: push.DefaultMemoryBudget, Usage: "bound the pushes' memory to about `SIZE`"},
			&cli.DurationFlag{Name: "max-clock-skew", Value: push.DefaultMaxClockSkew, Usage: "refuse SDShare-Updated over `D` ahead (400)"},
			&cli.Uint64Flag{Name: "max-sequence-gap", Value: push.DefaultMaxSequenceGap, Usage: "refuse SDShare-Sequence over `N` past the highest"},
			&cli.BoolFlag{Name: "allow-text-plain", Usage: "take text/plain as N-Triples without a token"},
			serverAuthFlags(false)[0],
			maxConnsFlag(),
		),
		Action: runSDShareReceive,
	}
}

// receiveServerOptions are the receiver's connection limits: the
// project's defaults, which CONNECTIONS documents (10 s for the request
// headers, as every server), and a ReadTimeout for --max-bytes. A
// variable so that a test can shorten them.
var receiveServerOptions = func(maxBytes int64) httpserver.Options {
	return httpserver.Options{ReadTimeout: httpserver.ReadTimeoutFor(maxBytes)}
}

func runSDShareReceive(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 0 {
		return usageError(cmd, "sdshare receive takes no arguments")
	}
	if g := cmd.String("graph"); g != "" && !absoluteIRI(g) {
		return cli.Exit("--graph must be an absolute IRI", exitUsage)
	}
	if cmd.Int64("max-bytes") <= 0 {
		return cli.Exit("--max-bytes must be positive", exitUsage)
	}
	if cmd.Int64("max-memory") <= 0 || cmd.Duration("max-clock-skew") <= 0 || cmd.Uint64("max-sequence-gap") == 0 {
		return cli.Exit("--max-memory, --max-clock-skew and --max-sequence-gap must be positive", exitUsage)
	}
	au, err := serverAuth(cmd, "sdshare receive")
	if err != nil {
		return err
	}
	store, stateDir, err := openSDShareStore(ctx, cmd)
	if err != nil {
		return err
	}
	defer store.Close()
	order, err := push.OpenOrder(filepath.Join(stateDir, push.OrderFile), false)
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	defer order.Close()
	ln, err := net.Listen("tcp", cmd.String("addr"))
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	stderr := cmd.Root().ErrWriter
	rv := &push.Receiver{
		Store:        store,
		DefaultGraph: cmd.String("graph"),
		MaxBytes:     cmd.Int64("max-bytes"),
		Order:        order,
		// With a token every push that gets here is authenticated:
		// a page's simple request cannot carry one.
		AllowTextPlain: cmd.Bool("allow-text-plain") || au != nil,
		MaxClockSkew:   cmd.Duration("max-clock-skew"),
		MaxSequenceGap: cmd.Uint64("max-sequence-gap"),
		// A first sequence number as it comes only from authenticated
		// senders: from anyone, one push of 2^63-1 freezes a resource.
		TrustFirstSequence: au != nil,
		MemoryBudget:       cmd.Int64("max-memory"),
		// Without a token on loopback, the pushes come from this
		// machine: a Host naming another is a DNS-rebinding page.
		LoopbackOnly: au == nil && httpserver.ListensOnLoopback(ln),
		Logf: func(format string, args ...any) {
			fmt.Fprintf(stderr, "sdshare receive: "+format+"\n", args...)
		},
	}
	// Only the pushes change the store; GET and HEAD answer a fixed text.
	readOnly := func(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }
	srv := httpserver.New(au.Handler(rv, readOnly), serverOptions(cmd, receiveServerOptions(cmd.Int64("max-bytes"))))
	if !cmd.Bool("quiet") {
		fmt.Fprintf(stderr, "sdshare receive: listening on http://%s/\n", ln.Addr())
	}
	if au == nil && !httpserver.ListensOnLoopback(ln) {
		fmt.Fprintf(stderr, "sdshare receive: WARNING: %s is not a loopback address and no --auth-token-file is given: anyone who can reach it can replace or delete any statement in the store (see SAFETY in --help)\n", ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return cli.Exit(err.Error(), exitUsage)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return cli.Exit(err.Error(), exitUsage)
	}
	return nil
}
