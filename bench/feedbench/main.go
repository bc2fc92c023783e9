// Command feedbench measures what the change feeds (IIIF Change Discovery
// and LDES, package feed) cost beside the Change Lists they are published
// with: a state of N journal records (updates of a small inventory, so
// the Resource List costs little) is published without feeds (the Change
// Lists), then with them (see Bench); the ratio is the Change Lists' time
// over the feeds' (issue 34 asks ≥ 0.5: feed pages built at least half as
// fast as the same Change Lists), measured in the same process, repeated
// -runs times. A last run with one more page of changes measures an
// incremental run (its cost follows the new changes).
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
	"runtime/pprof"
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
	cpu := flag.String("cpuprofile", "", "write a CPU profile to `FILE`")
	flag.Parse()
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	for range *runs {
		r, err := Bench(context.Background(), *changes)
		if err != nil {
			fmt.Fprintln(os.Stderr, "feedbench:", err)
			return
		}
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
}

const inventory = 1000

// open makes a state with a baseline of inventory files.
func open(ctx context.Context, path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, &bolt.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := store.Batch{Baseline: true, Meta: map[string][]byte{store.MetaBaseline: store.FormatBaseline(t0)}}
	for i := range inventory {
		b.Changes = append(b.Changes, store.Change{Kind: rs.Created, Time: t0, Resource: res(i, "0", t0)})
	}
	if _, _, err := db.Apply(ctx, b); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func res(i int, body string, t time.Time) store.Resource {
	return store.Resource{Path: fmt.Sprintf("dir/file-%05d.txt", i%inventory), Size: int64(len(body)),
		SHA256: sha256.Sum256([]byte(body)), Type: "text/plain", LastMod: t, ModTime: t}
}

// change appends n updates to the journal, from t on.
func change(ctx context.Context, db *bolt.DB, n int, t time.Time) error {
	var b store.Batch
	for i := range n {
		b.Changes = append(b.Changes, store.Change{Kind: rs.Updated, Time: t.Add(time.Duration(i) * time.Millisecond),
			Resource: res(i, strconv.Itoa(i), t)})
		if len(b.Changes) == 1000 || i == n-1 {
			if _, _, err := db.Apply(ctx, b); err != nil {
				return err
			}
			b.Changes = b.Changes[:0]
		}
	}
	return nil
}

// Bench runs one comparison with n journal records: a state with a
// baseline is published with its feeds (both begin, at the baseline);
// then n changes are journaled and published without feeds (the Change
// Lists of the n records), again without feeds (what a run with nothing
// to do costs), then with feeds: the feeds' time (the pages of the n
// records) is the last run's less the rerun's.
func Bench(ctx context.Context, n int) (Result, error) {
	res := Result{Changes: n}
	tmp, err := os.MkdirTemp("", "feedbench")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	db, err := open(ctx, filepath.Join(tmp, "state.db"))
	if err != nil {
		return res, err
	}
	defer db.Close()
	cfg := publish.Config{BaseURL: "http://127.0.0.1:1/", Out: filepath.Join(tmp, "out"), Logger: quiet,
		Now: func() time.Time { return now }, NoCompanions: true,
		Sets: []publish.Set{{Name: "s", Store: db, ResourceBase: "http://127.0.0.1:1/r/"}}}
	timed := func(feeds bool) (time.Duration, error) {
		cfg.Feeds = feeds
		start := time.Now()
		_, err := publish.Publish(ctx, cfg)
		return time.Since(start), err
	}
	if _, err := timed(true); err != nil {
		return res, err
	}
	if err := change(ctx, db, n, now.Add(time.Hour)); err != nil {
		return res, err
	}
	now = now.Add(2 * time.Hour)
	lists, err := timed(false)
	if err != nil {
		return res, err
	}
	rerun, err := timed(false)
	if err != nil {
		return res, err
	}
	withFeeds, err := timed(true)
	if err != nil {
		return res, err
	}
	res.ChangeListsS, res.WithFeedsS = lists.Seconds(), withFeeds.Seconds()
	res.FeedsS = (withFeeds - rerun).Seconds()
	if res.FeedsS > 0 {
		res.Ratio = res.ChangeListsS / res.FeedsS
	}
	// An incremental run: one more page of changes.
	if err := change(ctx, db, 1000, now); err != nil {
		return res, err
	}
	inc, err := timed(true)
	if err != nil {
		return res, err
	}
	res.IncrementalMs = float64(inc.Microseconds()) / 1000
	return res, nil
}
