//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/server"
)

// stepServeDir measures sdshare/server on a directory collection: the
// dataset in one file beside a file of one resource. It opens it (the
// baseline: parse, sort, graph file on disk, inventory), reads a
// fragment, then changes the small file and reloads: a reload parses
// the changed file only and compares its resources only, so its time
// follows the change, not the collection. One child: its peak RSS is
// the server's (the graph on disk, not in memory).
const stepServeDir = "server-dir"

func serveDirStep(ctx context.Context, sp Spec) ([]Result, error) {
	dir := filepath.Join(sp.Dir, stepServeDir)
	coll := filepath.Join(dir, "collection")
	os.RemoveAll(dir)
	if err := os.MkdirAll(coll, 0o755); err != nil {
		return nil, err
	}
	if err := os.Link(filepath.Join(sp.Dir, fileNT), filepath.Join(coll, "big.nt")); err != nil {
		return nil, err
	}
	small := filepath.Join(coll, "small.nt")
	write := func(v int) error {
		return os.WriteFile(small, fmt.Appendf(nil, "<http://example.org/small> <http://example.org/v> \"%d\" .\n", v), 0o644)
	}
	if err := write(0); err != nil {
		return nil, err
	}
	n := int64(resources(sp.Triples) * perResource)
	t, cpu := time.Now(), selfCPU()
	srv, err := server.Open(ctx, server.Config{
		BaseURL:     "http://127.0.0.1/sdshare/",
		StateDir:    filepath.Join(dir, "state"),
		Collections: []server.CollectionConfig{{Name: "bench", Path: coll}},
		Rescan:      -1,
		Log:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		NoSync:      sp.NoSync,
	})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	open := Result{What: "sdshare server: open a directory collection (graph on disk, baseline)", Triples: n}
	open.finish(time.Since(t))
	open.CPUSec = selfCPU() - cpu // this phase's, not the step's
	c := srv.Collection("bench")
	if b, err := c.FragmentNT(ctx, "http://example.org/small"); err != nil || len(b) == 0 {
		return nil, fmt.Errorf("fragment: %q %v", b, err)
	}
	// The small file's mtime must be out of the racy window (a file
	// modified just before it was read is read again at the next load).
	time.Sleep(2100 * time.Millisecond)
	if err := write(1); err != nil {
		return nil, err
	}
	t, cpu = time.Now(), selfCPU()
	rep, err := c.Load(ctx, false)
	if err != nil {
		return nil, err
	}
	if rep.Updated != 1 || rep.Created+rep.Deleted != 0 {
		return nil, fmt.Errorf("reload after a one-resource change: %+v", rep)
	}
	re := Result{What: "sdshare server: reload after a one-resource change (same collection)", Triples: n, Fragments: 1}
	re.finish(time.Since(t))
	re.CPUSec = selfCPU() - cpu
	// On a shared machine the wall times wait for a CPU: the CPU ratio
	// is the steadier figure.
	re.Note = fmt.Sprintf("%.3f of the open's time, %.3f of its CPU", re.Seconds/open.Seconds, re.CPUSec/max(open.CPUSec, 1e-9))
	b, err := c.Fragment(ctx, "http://example.org/small", rdf.NTriples)
	if err != nil || len(b) == 0 {
		return nil, fmt.Errorf("fragment after the change: %q %v", b, err)
	}
	return []Result{open, re}, nil
}
