// Command feedbench measures what the change feeds (IIIF Change Discovery
// and LDES, package feed) cost beside the Change Lists they are published
// with: two identical states of N journal records (updates of a small
// inventory, so the Resource List costs nothing), one published without
// feeds (the Change Lists), one with; the feeds' time is the difference,
// and the ratio is the Change Lists' time over it (issue 34 asks ≥ 0.5:
// feed pages built at least half as fast as the same Change Lists). Both
// runs in the same process, one after the other, repeated -runs times.
// A second pass with one more page of changes measures an incremental
// run (its cost follows the new changes).
//
//	go run ./bench/feedbench [-changes 200000] [-runs 3]
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
)

// Result is one run's figures.
type Result struct {
	Changes       int     `json:"changes"`
	ChangeListsS  float64 `json:"changelists_s"`
	WithFeedsS    float64 `json:"with_feeds_s"`
	FeedsS        float64 `json:"feeds_s"`
	Ratio         float64 `json:"ratio"` // Change Lists time over feeds time
	IncrementalMs float64 `json:"incremental_feeds_ms"`
}

func main() {
	changes := flag.Int("changes", 200000, "journal records")
	runs := flag.Int("runs", 3, "repetitions")
	flag.Parse()
	for range *runs {
		r, err := Bench(context.Background(), *changes)
		if err != nil {
			fmt.Fprintln(os.Stderr, "feedbench:", err)
			os.Exit(1)
		}
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
}

const inventory = 1000

// fill makes a state of n journal records: updates of inventory files.
func fill(ctx context.Context, path string, n int) (*bolt.DB, error) {
	db, err := bolt.Open(path, &bolt.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b store.Batch
	for i := range n {
		kind := rs.Updated
		if i < inventory {
			kind = rs.Created
		}
		body := strconv.Itoa(i)
		r := store.Resource{Path: fmt.Sprintf("dir/file-%05d.txt", i%inventory), Size: int64(len(body)),
			SHA256: sha256.Sum256([]byte(body)), Type: "text/plain", LastMod: t0, ModTime: t0}
		b.Changes = append(b.Changes, store.Change{Kind: kind, Time: t0.Add(time.Duration(i) * time.Millisecond), Resource: r})
		if len(b.Changes) == 1000 || i == n-1 {
			if _, _, err := db.Apply(ctx, b); err != nil {
				db.Close()
				return nil, err
			}
			b.Changes = b.Changes[:0]
		}
	}
	return db, nil
}

// Bench runs one comparison with n journal records.
func Bench(ctx context.Context, n int) (Result, error) {
	res := Result{Changes: n}
	tmp, err := os.MkdirTemp("", "feedbench")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	run := func(name string, feeds bool) (time.Duration, *bolt.DB, publish.Config, error) {
		db, err := fill(ctx, filepath.Join(tmp, name+".db"), n)
		if err != nil {
			return 0, nil, publish.Config{}, err
		}
		cfg := publish.Config{BaseURL: "http://127.0.0.1:1/", Out: filepath.Join(tmp, name), Logger: quiet,
			Now: func() time.Time { return now }, NoCompanions: true, Feeds: feeds,
			Sets: []publish.Set{{Name: "s", Store: db, ResourceBase: "http://127.0.0.1:1/r/"}}}
		start := time.Now()
		_, err = publish.Publish(ctx, cfg)
		return time.Since(start), db, cfg, err
	}
	d1, db1, _, err := run("lists", false)
	if err != nil {
		return res, err
	}
	db1.Close()
	d2, db2, cfg, err := run("feeds", true)
	if err != nil {
		return res, err
	}
	defer db2.Close()
	res.ChangeListsS, res.WithFeedsS = d1.Seconds(), d2.Seconds()
	res.FeedsS = (d2 - d1).Seconds()
	if res.FeedsS > 0 {
		res.Ratio = res.ChangeListsS / res.FeedsS
	}
	// An incremental run: one more page of changes.
	t := now.Add(time.Hour)
	var b store.Batch
	for i := range 1000 {
		body := "inc" + strconv.Itoa(i)
		r := store.Resource{Path: fmt.Sprintf("dir/file-%05d.txt", i%inventory), Size: int64(len(body)),
			SHA256: sha256.Sum256([]byte(body)), Type: "text/plain", LastMod: t, ModTime: t}
		b.Changes = append(b.Changes, store.Change{Kind: rs.Updated, Time: t, Resource: r})
	}
	if _, _, err := db2.Apply(ctx, b); err != nil {
		return res, err
	}
	cfg.Feeds = true
	start := time.Now()
	if _, err := publish.Publish(ctx, cfg); err != nil {
		return res, err
	}
	res.IncrementalMs = float64(time.Since(start).Microseconds()) / 1000
	return res, nil
}
