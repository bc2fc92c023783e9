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

const sdshareReceiveHelp = `Receives SDShare Push requests and applies them to an RDF store.

A sender POSTs each changed fragment to http://ADDR/?resource=R[&graph=G]
with the fragment as the body (Content-Type application/n-triples,
text/plain, text/turtle or application/rdf+xml; an empty body means R was
deleted). The receiver replaces R's statements and the blank nodes they
reach with the fragment, in one transaction, and answers 200 only once the
store committed; 4xx means the request is wrong and will stay wrong (no
resource, R not a subject of the body, unknown format, body larger than
--max-bytes), 5xx that it may be sent again. Applying a fragment twice is
applying it once. A body may batch several fragments: repeat resource once
per fragment; the body is split by subject closure.

Order: a sender should send the instant of the change in the header
SDShare-Updated (RFC 3339) or its stream's sequence number in
SDShare-Sequence. The receiver records the newest per resource in
DIR/sdshare-receive.order (--state; default the --store directory, or
./sdshare-state with --sparql-update) and acknowledges an older fragment
without applying it, so a late duplicate never undoes a newer change.

Requests without graph go to --graph (400 when it is not set). GET /ping
answers pong. Ctrl-C or SIGTERM stops the receiver after the requests in
progress.

Exit status: 0 stopped by a signal; 2 usage, store or listen error.`

func sdshareReceiveCommand() *cli.Command {
	return &cli.Command{
		Name:        "receive",
		Usage:       "apply SDShare Push fragments POSTed to this endpoint to an RDF store",
		UsageText:   "resourcesync sdshare receive [--addr HOST:PORT] [--graph IRI] [--state DIR] --store DIR | --sparql-update URL [--sparql-query URL]",
		Description: sdshareReceiveHelp + sdshareReceiveAuthHelp,
		Flags: append(sdshareStoreFlags(),
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8950", Usage: "listen on `HOST:PORT`"},
			&cli.StringFlag{Name: "graph", Usage: "the graph `IRI` of requests without a graph parameter"},
			&cli.StringFlag{Name: "state", Usage: "keep the per-resource order record in `DIR` (default: the --store directory, or ./sdshare-state with --sparql-update)"},
			&cli.Int64Flag{Name: "max-bytes", Value: push.DefaultMaxBytes, Usage: "refuse bodies longer than `N` bytes (413)"},
			serverAuthFlags(false)[0],
		),
		Action: runSDShareReceive,
	}
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
		Logf: func(format string, args ...any) {
			fmt.Fprintf(stderr, "sdshare receive: "+format+"\n", args...)
		},
	}
	// Only the pushes change the store; GET and HEAD answer a fixed text.
	readOnly := func(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }
	srv := httpserver.New(au.Handler(rv, readOnly), serverOptions(cmd, httpserver.Options{ReadHeaderTimeout: 30 * time.Second, ReadTimeout: httpserver.ReadTimeoutFor(cmd.Int64("max-bytes"))}))
	fmt.Fprintf(stderr, "sdshare receive: listening on http://%s/\n", ln.Addr())
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
