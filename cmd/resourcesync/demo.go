package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/cmd/resourcesync/internal/progress"
	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/httpserver"
	"github.com/resourcesync-go/resourcesync/source"
)

// demoHelp is demo's description.
const demoHelp = `Runs the whole cycle on loopback, with nothing to set up: generates a small
collection, publishes it with a Source on 127.0.0.1, mirrors it into a second
directory (baseline), changes the collection (creates, updates, deletes,
renames), mirrors again (incremental, from the Change Lists), audits the
mirror, and checks byte for byte that the two directories are identical.
Everything happens in a temporary directory that is removed afterwards,
unless --dir is given.

Examples:
  resourcesync demo
  resourcesync demo --files 5000 --dir ./demo`

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:        "demo",
		Usage:       "publish a generated collection on loopback, mirror it, change it, mirror and audit again",
		UsageText:   "resourcesync demo [--files N] [--dir DIR]",
		Description: demoHelp,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "files", Value: 500, Usage: "`N` files in the generated collection"},
			&cli.StringFlag{Name: "dir", Usage: "keep the collection, the mirror and the state in `DIR`", TakesFile: true},
		},
		Action: runDemo,
	}
}

func runDemo(ctx context.Context, cmd *cli.Command) error {
	w := cmd.Root().Writer
	n := int(cmd.Int("files"))
	if n < 10 {
		return cli.Exit("--files must be at least 10", exitUsage)
	}
	root := cmd.String("dir")
	if root == "" {
		tmp, err := os.MkdirTemp("", "resourcesync-demo-")
		if err != nil {
			return cli.Exit(err.Error(), exitUsage)
		}
		defer os.RemoveAll(tmp)
		root = tmp
	}
	coll, mirror := filepath.Join(root, "collection"), filepath.Join(root, "mirror")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	write := func(rel string) error {
		p := filepath.Join(coll, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		b := make([]byte, 200+rng.IntN(20000))
		for i := range b {
			b[i] = "abcdefghijklmnopqrstuvwxyz \n"[rng.IntN(28)]
		}
		return os.WriteFile(p, b, 0o644)
	}
	for i := range n {
		if err := write(fmt.Sprintf("records/%02d/item-%04d.txt", i%20, i)); err != nil {
			return cli.Exit(err.Error(), exitUsage)
		}
	}
	fmt.Fprintf(w, "1. Generated a collection of %d files in %s\n", n, coll)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	base := "http://" + ln.Addr().String() + "/"
	src, err := source.Open(source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "demo", Dir: coll}},
		StateDir: filepath.Join(root, "source-state"), ChangeListPeriod: time.Hour, Dumps: true,
		Logger: discardLogger()})
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	defer src.Close()
	if _, err := src.Update(ctx); err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	srv := httpserver.New(src.Handler(nil), httpserver.Options{})
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Fprintf(w, "2. Serving it as a ResourceSync Source at %s (Source Description at %s.well-known/resourcesync)\n", base, base)

	client := syncClient(8, time.Minute)
	failed := false
	step := func(label string, opt destination.Options) *destination.Report {
		opt.Dest, opt.Client = mirror, client
		r := progress.New(cmd.Root().ErrWriter, progress.Quiet)
		opt.Events = r.Handle
		rep, err := destination.Sync(ctx, base, opt)
		r.Close()
		if err != nil {
			fmt.Fprintf(w, "   %s: %v\n", label, err)
			failed = true
			return nil
		}
		for _, s := range rep.Sets {
			fmt.Fprintf(w, "   %s\n", s.Summary(false))
		}
		if !rep.OK(opt.Mode == destination.ModeAudit, opt.Repair) {
			failed = true
		}
		return rep
	}
	fmt.Fprintf(w, "3. First sync into %s: a baseline\n", mirror)
	step("baseline", destination.Options{})

	// Change the collection: creates, updates, deletes, renames.
	for i := range 10 {
		write(fmt.Sprintf("records/new/item-%04d.txt", n+i))
		write(fmt.Sprintf("records/%02d/item-%04d.txt", i%20, i))
	}
	for i := 10; i < 15; i++ {
		os.Remove(filepath.Join(coll, "records", fmt.Sprintf("%02d", i%20), fmt.Sprintf("item-%04d.txt", i)))
	}
	for i := 15; i < 18; i++ {
		old := filepath.Join(coll, "records", fmt.Sprintf("%02d", i%20), fmt.Sprintf("item-%04d.txt", i))
		os.Rename(old, filepath.Join(coll, "records", fmt.Sprintf("renamed-%04d.txt", i)))
	}
	time.Sleep(10 * time.Millisecond)
	if _, err := src.Update(ctx); err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	fmt.Fprintln(w, "4. Changed the collection: 10 created, 10 updated, 5 deleted, 3 renamed; the Source recorded them in its Change List")
	fmt.Fprintln(w, "5. Second sync: incremental, from the Change Lists")
	step("incremental", destination.Options{})
	fmt.Fprintln(w, "6. Audit: every file re-hashed and compared with the Source")
	step("audit", destination.Options{Mode: destination.ModeAudit})

	same, diff := sameFiles(coll, mirror)
	if same {
		fmt.Fprintf(w, "7. Byte-for-byte comparison of %s and %s: identical\n", coll, mirror)
	} else {
		fmt.Fprintf(w, "7. Byte-for-byte comparison: DIFFERENT (%s)\n", diff)
		failed = true
	}
	fmt.Fprintf(w, "\nOn your own data:\n  resourcesync serve --addr 127.0.0.1:8080 DIR\n  resourcesync sync http://127.0.0.1:8080/ MIRROR\n  resourcesync sync --audit http://127.0.0.1:8080/ MIRROR\n  open http://127.0.0.1:8080/.resourcesync/ in a browser: the Source's status; its documents are pages too\n")
	if failed {
		return cli.Exit("demo: the mirror is not in sync", exitProblems)
	}
	return nil
}

// sameFiles compares two trees (the mirror's state directory aside).
func sameFiles(a, b string) (bool, string) {
	seen := 0
	err := filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		x, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		y, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil || !bytes.Equal(x, y) {
			return fmt.Errorf("%s differs", rel)
		}
		seen++
		return nil
	})
	if err != nil {
		return false, err.Error()
	}
	count := 0
	filepath.WalkDir(b, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == destination.StateDirName {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() {
			count++
		}
		return nil
	})
	if count != seen {
		return false, fmt.Sprintf("%d files in the mirror, %d in the collection", count, seen)
	}
	return true, ""
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
