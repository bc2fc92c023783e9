package status

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/source/store/memstore"
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
)

// clock is a controlled clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type modelRecord struct {
	seq  uint64
	time time.Time
	kind rs.Change
	path string
	size int64
}

// TestStatusModel: random histories of creates, updates, deletes and
// touches under a controlled clock (hours and days pass between steps);
// after each step the page's figures equal the truth computed from the
// model: resources, total size, journal records, the newest records, the
// changes per hour over the last 24 h and per day over the last 30 days.
// The store is memstore, bolt or pgstore (PostgreSQL when it can be
// started here, bolt otherwise) by seed. Replay a history with STATUSMODEL_SEED=N (STATUSMODEL_STEPS sets its
// length).
func TestStatusModel(t *testing.T) {
	steps := 80
	if s, err := strconv.Atoi(os.Getenv("STATUSMODEL_STEPS")); err == nil && s > 0 {
		steps = s
	}
	var seeds []uint64
	if s := os.Getenv("STATUSMODEL_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seeds = []uint64{n}
	} else {
		base := uint64(time.Now().UnixNano())
		n := 12
		if testing.Short() {
			n = 3
		}
		for i := range n {
			seeds = append(seeds, base+uint64(i))
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if !modelHistory(t, seed, steps) {
				t.Logf("replay: STATUSMODEL_SEED=%d STATUSMODEL_STEPS=%d go test -count=1 -run 'TestStatusModel' ./source/status/", seed, steps)
			}
		})
	}
}

func modelHistory(t *testing.T, seed uint64, steps int) bool {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	ctx := context.Background()
	var st store.Store
	kind := []string{"memstore", "bolt", "pgstore"}[seed%3]
	if kind == "pgstore" && pgtest.Available() != "" {
		kind = "bolt"
	}
	switch kind {
	case "bolt":
		db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		st = db
	case "pgstore":
		db, err := pgstore.Open(ctx, pgtest.Database(t), "s", nil)
		if err != nil {
			t.Fatal(err)
		}
		st = db
	default:
		st = memstore.New().Open("s")
	}
	defer st.Close()
	t.Logf("store %s", kind)
	clk := &clock{t: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(48 * time.Hour))))}
	base := "http://src.test/"
	h := New(Config{BaseURL: base, Sets: []Set{{Name: "s", Store: st, ResourceBase: base + "r/", CapabilityList: base + ".resourcesync/s/capabilitylist.xml"}},
		MaxAge: time.Nanosecond, Wait: 20 * time.Second, BytesInterval: -1, Now: clk.Now})
	defer h.Close()

	inv := map[string]int64{}
	var paths []string // of inv, for random picks
	var jnl []modelRecord
	seq := uint64(0)
	counter := 0
	newPath := func() string {
		counter++
		switch rng.IntN(8) {
		case 0:
			return fmt.Sprintf("odd name %d?#%%.txt", counter)
		case 1:
			return fmt.Sprintf("bad\xff%d.bin", counter)
		}
		return fmt.Sprintf("d%d/f%d.txt", rng.IntN(4), counter)
	}
	remove := func(p string) {
		for i, q := range paths {
			if q == p {
				paths[i] = paths[len(paths)-1]
				paths = paths[:len(paths)-1]
				return
			}
		}
	}
	// A baseline first.
	var bl store.Batch
	bl.Baseline = true
	for range rng.IntN(30) {
		p := newPath()
		sz := rng.Int64N(1 << 20)
		inv[p] = sz
		paths = append(paths, p)
		bl.Changes = append(bl.Changes, store.Change{Kind: rs.Created, Time: clk.Now(), Resource: store.Resource{Path: p, Size: sz, LastMod: clk.Now()}})
	}
	if _, _, err := st.Apply(ctx, bl); err != nil {
		t.Fatal(err)
	}
	ok := true
	for step := range steps {
		switch r := rng.IntN(10); {
		case r < 5:
			clk.Add(time.Duration(rng.Int64N(int64(20 * time.Minute))))
		case r < 8:
			clk.Add(time.Duration(rng.Int64N(int64(5 * time.Hour))))
		case r < 9:
			clk.Add(time.Duration(rng.Int64N(int64(3 * 24 * time.Hour))))
		default:
			clk.Add(time.Duration(rng.Int64N(int64(20 * 24 * time.Hour))))
		}
		now := clk.Now()
		var b store.Batch
		for range rng.IntN(7) {
			c := store.Change{Time: now}
			if len(paths) == 0 || rng.IntN(10) < 4 {
				p := newPath()
				c.Kind, c.Resource = rs.Created, store.Resource{Path: p, Size: rng.Int64N(1 << 20)}
				inv[p] = c.Resource.Size
				paths = append(paths, p)
			} else if p := paths[rng.IntN(len(paths))]; rng.IntN(3) == 0 {
				c.Kind, c.Resource = rs.Deleted, store.Resource{Path: p, Size: inv[p]}
				delete(inv, p)
				remove(p)
			} else {
				c.Kind, c.Resource = rs.Updated, store.Resource{Path: p, Size: rng.Int64N(1 << 20)}
				inv[p] = c.Resource.Size
			}
			c.Resource.LastMod = now
			b.Changes = append(b.Changes, c)
			seq++
			jnl = append(jnl, modelRecord{seq: seq, time: now, kind: c.Kind, path: c.Resource.Path, size: c.Resource.Size})
		}
		if len(paths) > 0 && rng.IntN(4) == 0 && len(b.Changes) == 0 {
			// a stat-only update: no journal record, no size change
			p := paths[rng.IntN(len(paths))]
			res, err := st.Get(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			res.ModTime = now
			b.Touch = []store.Resource{res}
		}
		if len(b.Changes) > 0 || len(b.Touch) > 0 {
			if _, _, err := st.Apply(ctx, b); err != nil {
				t.Fatalf("step %d: apply: %v", step, err)
			}
		}
		pg := get(t, h)
		sp := pg.sets["s"]
		if sp == nil {
			t.Fatalf("step %d: no set on the page", step)
		}
		errorf := func(format string, args ...any) {
			t.Helper()
			ok = false
			t.Errorf("seed %d (%s) step %d at %s: %s", seed, kind, step, now.Format(time.RFC3339), fmt.Sprintf(format, args...))
		}
		var bytes int64
		for _, sz := range inv {
			bytes += sz
		}
		for name, want := range map[string]int64{"resources": int64(len(inv)), "bytes": bytes, "records": int64(len(jnl))} {
			if got := sp.figure(t, name); got != want {
				errorf("%s = %d, want %d", name, got, want)
			}
		}
		// newest records
		var want []newestRow
		for i := len(jnl) - 1; i >= 0 && len(want) < NewestRecords; i-- {
			r := jnl[i]
			want = append(want, newestRow{seq: r.seq, time: web.FormatTime(r.time), kind: string(r.kind), path: strings.ToValidUTF8(r.path, "\uFFFD"),
				url: base + "r/" + scan.EscapePath(r.path), size: r.size})
		}
		if fmt.Sprint(sp.newest) != fmt.Sprint(want) {
			errorf("newest records\n got %v\nwant %v", sp.newest, want)
		}
		// charts
		hour := now.Truncate(time.Hour)
		day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		hourly, daily := make([]int64, 24), make([]int64, 30)
		var h24, d30 int64
		for _, r := range jnl {
			if i := 23 + int(r.time.Truncate(time.Hour).Sub(hour)/time.Hour); i >= 0 && i < 24 {
				hourly[i]++
				h24++
			}
			rd := time.Date(r.time.Year(), r.time.Month(), r.time.Day(), 0, 0, 0, 0, time.UTC)
			if i := 29 + int(rd.Sub(day)/(24*time.Hour)); i >= 0 && i < 30 {
				daily[i]++
				d30++
			}
		}
		if fmt.Sprint(sp.hourly) != fmt.Sprint(hourly) {
			errorf("hourly\n got %v\nwant %v", sp.hourly, hourly)
		}
		if fmt.Sprint(sp.daily) != fmt.Sprint(daily) {
			errorf("daily\n got %v\nwant %v", sp.daily, daily)
		}
		if got := sp.figure(t, "last24h"); got != h24 {
			errorf("last24h = %d, want %d", got, h24)
		}
		if got := sp.figure(t, "last30d"); got != d30 {
			errorf("last30d = %d, want %d", got, d30)
		}
		if !ok {
			return false
		}
	}
	return true
}
