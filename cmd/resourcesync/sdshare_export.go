package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
)

// sdshareExportHelp is export's part of the help topic sdshare-mirror.
const sdshareExportHelp = `Prints the named graphs of the embedded quad store that
'sdshare sync' and 'sdshare receive' keep (--store DIR; the store is the one
file DIR/graph.db) to stdout.

Without --graph every graph is printed, in IRI order; --graph IRI
(repeatable) prints only those. --format chooses the syntax:

  nt   N-Triples (default): the triples only; graph names are lost when
       several graphs are printed
  nq   N-Quads: each triple with its graph, <s> <p> <o> <g> .
  ttl  Turtle, one document per graph, each after a "# graph <IRI>"
       comment

Blank nodes are written with the store's labels (_:b17), which are the same
in every graph, so graphs printed together never share one by accident.
The store is read in one snapshot per graph; a running 'sdshare sync' holds
the store's lock, so stop it first (or wait: --lock-timeout).

Exit status: 0 printed; 1 the store is damaged; 2 usage, or the store
cannot be opened (missing, locked) or stdout cannot be written.`

// sdshareExportDescription is the description --help shows; the long text is in the
// help topics (topics.go).
const sdshareExportDescription = `Prints the named graphs of the embedded quad store that sdshare sync and
sdshare receive keep (--store DIR) to stdout: every graph, or those named
with --graph, as N-Triples, N-Quads or Turtle.

Examples:
  resourcesync sdshare export --store ./sdshare-store --format nq
  resourcesync sdshare export --graph https://lod.example.org/people > p.nt

See also: resourcesync help sdshare-mirror.

Exit status: 0 printed; 1 the store is damaged; 2 usage, or the store cannot
be opened (missing, locked) or stdout cannot be written.`

func sdshareExportCommand() *cli.Command {
	return &cli.Command{
		Name:        "export",
		Usage:       "print the graphs of an embedded SDShare store",
		UsageText:   "resourcesync sdshare export [options]",
		Description: sdshareExportDescription,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "store", Value: defaultSDShareStore, Usage: "the store `DIR` (its file is DIR/graph.db)"},
			&cli.StringSliceFlag{Name: "graph", Usage: "print only the graph `IRI` (repeatable; default: all)"},
			&cli.StringFlag{Name: "format", Value: "nt", Usage: "`FORMAT` of the output: nt, nq or ttl"},
			&cli.DurationFlag{Name: "lock-timeout", Value: time.Second, Usage: "wait up to `D` for another process to release the store"},
		},
		Action: runSDShareExport,
	}
}

func runSDShareExport(ctx context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() > 0 {
		return cli.Exit(fmt.Sprintf("unexpected argument %q (the store is --store DIR)", cmd.Args().First()), exitUsage)
	}
	format := cmd.String("format")
	if format != "nt" && format != "nq" && format != "ttl" {
		return cli.Exit(fmt.Sprintf("--format %q: want nt, nq or ttl", format), exitUsage)
	}
	path := boltstore.PathIn(graphStoreDir(cmd.String("store")))
	// Open would create an empty store; exporting a store that is not
	// there is a mistake worth saying.
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return cli.Exit(fmt.Sprintf("no store at %s (is --store the directory sdshare sync used?)", path), exitUsage)
		}
		return cli.Exit(err.Error(), exitUsage)
	}
	s, err := boltstore.Open(path, &boltstore.Options{LockTimeout: cmd.Duration("lock-timeout")})
	if err != nil {
		return exportError(err)
	}
	defer s.Close()
	graphs := cmd.StringSlice("graph")
	if len(graphs) == 0 {
		if graphs, err = s.Graphs(ctx); err != nil {
			return exportError(err)
		}
	}
	stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
	bw := bufio.NewWriterSize(stdout, 64<<10)
	total := 0
	for _, g := range graphs {
		n, err := exportGraph(ctx, bw, s, g, format)
		if err != nil {
			return exportError(err)
		}
		if n == 0 {
			fmt.Fprintf(stderr, "graph %s is empty or not in the store\n", g)
		}
		total += n
	}
	if err := bw.Flush(); err != nil {
		return cli.Exit(fmt.Sprintf("writing: %v", err), exitUsage)
	}
	if !cmd.Bool("quiet") {
		fmt.Fprintf(stderr, "exported %d triples of %d graphs from %s\n", total, len(graphs), path)
	}
	return nil
}

// exportGraph writes graph g in format to w and returns its triple count.
func exportGraph(ctx context.Context, w *bufio.Writer, s graphstore.Store, g, format string) (int, error) {
	var tw rdf.Writer
	var err error
	switch format {
	case "nt":
		tw, err = rdf.NewWriter(w, rdf.NTriples)
	case "ttl":
		fmt.Fprintf(w, "# graph %s\n", rdf.IRI(g))
		tw, err = rdf.NewWriter(w, rdf.Turtle)
	}
	if err != nil {
		return 0, err
	}
	gs := " " + rdf.IRI(g).String() + " .\n"
	n := 0
	for t, err := range s.Triples(ctx, g) {
		if err != nil {
			return n, err
		}
		if tw != nil {
			err = tw.Write(t)
		} else { // nq
			_, err = io.WriteString(w, t.S.String()+" "+t.P.String()+" "+t.O.String()+gs)
		}
		if err != nil {
			return n, fmt.Errorf("writing graph %s: %w", g, err)
		}
		n++
	}
	if tw != nil {
		if err := tw.Close(); err != nil {
			return n, fmt.Errorf("writing graph %s: %w", g, err)
		}
	}
	return n, nil
}

func exportError(err error) error {
	if errors.Is(err, graphstore.ErrCorrupt) {
		return cli.Exit(err.Error(), exitProblems)
	}
	return cli.Exit(err.Error(), exitUsage)
}
