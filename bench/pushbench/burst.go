package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// BurstResult is what a burst cost the watching Source: n new files
// written at once into a watched collection, until all are journaled.
type BurstResult struct {
	Files int `json:"files"`
	// CPUms is this process's CPU time from the first write until every
	// file is journaled: the watch loop, its scans and the publishing,
	// and the writer's too when WriterInProcess (tests; the command
	// writes from a child process, whose CPU is not counted).
	CPUms           float64 `json:"cpu_ms"`
	WriterInProcess bool    `json:"writer_in_process"`
	// Wall is from the first write until every file is journaled.
	WallMs float64 `json:"wall_ms"`
	// Updates is how many updates journaled part of the burst.
	Updates int `json:"updates"`
}

// Burst writes n new files at once into a watched collection of files
// files (spread over 20 directories, as Bench's) and measures what the
// watch loop spent to journal them. With external, a child process
// (this command with -burst-writer) writes them.
func Burst(ctx context.Context, n, files int, debounce time.Duration, external bool) (*BurstResult, error) {
	root, err := os.MkdirTemp("", "pushbench-burst-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	dir := filepath.Join(root, "collection")
	if err := writeFiles(dir, 0, files); err != nil {
		return nil, err
	}
	res := &BurstResult{Files: n, WriterInProcess: !external}

	var mu sync.Mutex
	journaled, updates := 0, 0
	all := make(chan struct{})
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	cfg := source.Config{BaseURL: "http://127.0.0.1/", Sets: []source.SetConfig{{Name: "default", Dir: dir}}, StateDir: filepath.Join(root, "state"),
		ChangeListPeriod: time.Hour, Logger: quiet,
		OnUpdate: func(_ context.Context, _ string, _ store.Store, from, to uint64) {
			mu.Lock()
			defer mu.Unlock()
			updates++
			if journaled < n && journaled+int(to-from) >= n {
				close(all)
			}
			journaled += int(to - from)
		}}
	src, err := source.Open(cfg)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if _, err := src.Update(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, source.RunOptions{Watch: true, Debounce: debounce}) }()
	defer func() { cancel(); <-done }()
	time.Sleep(200 * time.Millisecond) // the watches are in place

	start, c1 := time.Now(), cpuTime()
	if external {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, exe, "-burst-writer", dir, "-burst-from", fmt.Sprint(files), "-burst", fmt.Sprint(n))
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("burst writer: %w", err)
		}
	} else if err := writeFiles(dir, files, files+n); err != nil {
		return nil, err
	}
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		return nil, fmt.Errorf("burst: %d of %d files journaled after 5 minutes", journaled, n)
	}
	res.WallMs, res.CPUms = ms(time.Since(start)), ms(cpuTime()-c1)
	mu.Lock()
	res.Updates = updates
	mu.Unlock()
	return res, nil
}

// writeFiles writes files from to to-1 of Bench's layout under dir.
func writeFiles(dir string, from, to int) error {
	for i := from; i < to; i++ {
		p := filepath.Join(dir, filepath.FromSlash(fmt.Sprintf("%02d/f%05d.txt", i%20, i)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(fmt.Sprint("v0 ", i)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
