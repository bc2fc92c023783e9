package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/memstore"
)

// TestAppendGaplessAcrossNodes appends to one topic from two nodes and
// several goroutines each: the numbers are exactly 1..n, and keyset pages
// read them back in order.
func TestAppendGaplessAcrossNodes(t *testing.T) {
	pgtest.Skip(t)
	url := pgtest.Database(t)
	a, b := openT(t, url), openT(t, url)
	ctx := context.Background()
	const topic, workers, each = "https://a.example/t", 8, 40
	var mu sync.Mutex
	var seqs []uint64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		s := a
		if w%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				seq, err := s.Append(ctx, topic, hubstore.Entry{ContentType: "text/plain", Body: []byte(fmt.Sprint(w, "-", i))})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				seqs = append(seqs, seq)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.Sort(seqs)
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Fatalf("seq %d at %d: numbers are not 1..%d without gaps or repeats", s, i, workers*each)
		}
	}
	var read []uint64
	for after := uint64(0); ; {
		page, err := b.Entries(ctx, topic, after, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			read = append(read, e.Seq)
		}
		after = page[len(page)-1].Seq
	}
	if !slices.Equal(read, seqs) {
		t.Fatalf("read back %d entries, want %d in order", len(read), len(seqs))
	}
}

// TestWatchSurvivesBrokenConnection kills the listening session on the
// server: the watcher is signalled once (what was missed), and later
// commits are seen again after the reconnect.
func TestWatchSurvivesBrokenConnection(t *testing.T) {
	pgtest.Skip(t)
	url := pgtest.Database(t)
	s, other := openT(t, url), openT(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recv := func(want hubstore.Event, what string) {
		t.Helper()
		for {
			select {
			case ev, ok := <-w:
				if !ok {
					t.Fatalf("%s: watch channel closed", what)
				}
				if ev&want == want {
					return
				}
			case <-ctx.Done():
				t.Fatalf("%s: no event %b", what, want)
			}
		}
	}
	if _, err := other.Append(ctx, "https://a.example/", hubstore.Entry{ContentType: "text/plain"}); err != nil {
		t.Fatal(err)
	}
	recv(hubstore.EventEntries, "append before the break")
	pid := s.lis.backendPID()
	if pid == 0 {
		t.Fatal("listener not connected")
	}
	var killed bool
	if err := other.pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int32(pid)).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminating the listener: %v %v", killed, err)
	}
	recv(allEvents, "resignal after reconnecting")
	for s.lis.backendPID() == 0 || s.lis.backendPID() == pid {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := other.AddJob(ctx, hubstore.Job{Key: "k", Host: "h:80", Mode: "subscribe", Topic: "https://a.example/"}, 0, 0); err != nil {
		t.Fatal(err)
	}
	recv(hubstore.EventJobs, "job after the reconnect")
}

// TestQueriesUseIndexes explains the requests of the hot paths with
// sequential scans disabled: a plan that still scans a table has no index
// to use.
func TestQueriesUseIndexes(t *testing.T) {
	pgtest.Skip(t)
	s := openT(t, pgtest.Database(t))
	ctx := context.Background()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	k, topic := b("t\x00c"), b("t")
	now := time.Now()
	for _, q := range []struct {
		name, sql string
		args      []any
	}{
		{"append", appendSQL, []any{topic, ts(now), b("text/plain"), b(""), bl(nil), []byte("x"), "1"}},
		{"head", `SELECT head FROM hub_topics WHERE topic = $1`, []any{topic}},
		{"entries", `SELECT e.seq FROM hub_entries e WHERE e.topic_id = (SELECT id FROM hub_topics WHERE topic = $1) AND e.seq > $2 ORDER BY e.seq LIMIT $3`, []any{topic, 3, 10}},
		{"get subscription", `SELECT ` + subCols + ` FROM hub_subs WHERE key = $1`, []any{k}},
		{"subscriptions page", `SELECT ` + subCols + ` FROM hub_subs WHERE topic = $1 AND key > $2 ORDER BY key LIMIT $3`, []any{topic, k, 256}},
		{"count per topic", `SELECT count(*) FROM (SELECT 1 FROM hub_subs WHERE topic = $1 LIMIT $2) x`, []any{topic, 100}},
		{"update cursors", updateSQL, []any{"A", [][]byte{k}, []int64{1}, []int32{0}, []any{nil}, [][]byte{b("")}, []any{nil}}},
		{"renew", `UPDATE hub_subs SET lease_until = now() + $2 * interval '1 microsecond' WHERE holder = $1 AND lease_until > now()`, []any{"A", 1000}},
		{"take", `UPDATE hub_subs SET holder = $1, lease_until = now() + $2 * interval '1 microsecond'
WHERE key IN (SELECT key FROM hub_subs WHERE lease_until <= now() ORDER BY lease_until LIMIT $3 FOR UPDATE SKIP LOCKED)`, []any{"A", 1000, 10}},
		{"held", `SELECT ` + subCols + ` FROM hub_subs WHERE holder = $1 AND lease_until > now() ORDER BY key`, []any{"A"}},
		{"nodes alive", `SELECT count(*) FROM hub_nodes WHERE lease_until > now()`, nil},
		{"jobs per host", `SELECT count(*) FROM (SELECT 1 FROM hub_jobs WHERE host = $1 LIMIT $2) x`, []any{b("h:80"), 100}},
		{"claim jobs", `SELECT j.id FROM hub_jobs j WHERE j.next_at <= $3 AND ` + jobFree + ` AND ` + firstOfKey + ` ORDER BY j.id LIMIT $2 FOR UPDATE SKIP LOCKED`, []any{"A", 10, ts(now)}},
		{"next job", `SELECT j.next_at FROM hub_jobs j WHERE ` + jobFree + ` AND ` + firstOfKey + ` AND j.id <> ALL($2) ORDER BY j.next_at LIMIT 1`, []any{"A", []int64{}}},
		{"dead letters page", `SELECT ` + deadCols + ` FROM hub_dead WHERE id > $1 ORDER BY id LIMIT $2`, []any{0, 64}},
	} {
		var plan []byte
		if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+q.sql, q.args...).Scan(&plan); err != nil {
			t.Errorf("%s: %v", q.name, err)
			continue
		}
		if testing.Verbose() {
			t.Logf("%s: %s", q.name, planSummary(plan))
		}
		if strings.Contains(string(plan), `"Seq Scan"`) {
			t.Errorf("%s scans a table:\n%s", q.name, plan)
		}
	}
}

// planSummary lists a plan's nodes with their index conditions.
func planSummary(plan []byte) string {
	var v []struct{ Plan map[string]any }
	if json.Unmarshal(plan, &v) != nil || len(v) == 0 {
		return string(plan)
	}
	var out []string
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		s := fmt.Sprint(n["Node Type"])
		if ix, ok := n["Index Name"]; ok {
			s += fmt.Sprintf(" %v [%v]", ix, n["Index Cond"])
		}
		out = append(out, s)
		if ps, ok := n["Plans"].([]any); ok {
			for _, p := range ps {
				if m, ok := p.(map[string]any); ok {
					walk(m)
				}
			}
		}
	}
	walk(v[0].Plan)
	return strings.Join(out, "; ")
}

// TestClaimsDisjointUnderContention has two nodes claim the same
// subscriptions at once, again and again: no subscription is ever held by
// both (SKIP LOCKED), and together they hold all of them.
func TestClaimsDisjointUnderContention(t *testing.T) {
	pgtest.Skip(t)
	url := pgtest.Database(t)
	a, b := openT(t, url), openT(t, url)
	ctx := context.Background()
	const n = 300
	for i := range n {
		k := fmt.Sprintf("https://a.example/\x00https://cb.example/%03d", i)
		if err := a.PutSubscription(ctx, hubstore.Subscription{Key: k, Topic: "https://a.example/", Callback: k[18:], Lease: 60}); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 5 {
		var wg sync.WaitGroup
		var ca, cb hubstore.Claims
		var ea, eb error
		wg.Add(2)
		go func() { defer wg.Done(); ca, ea = a.Claim(ctx, "A", time.Minute, n/2+10) }()
		go func() { defer wg.Done(); cb, eb = b.Claim(ctx, "B", time.Minute, n/2+10) }()
		wg.Wait()
		if ea != nil || eb != nil {
			t.Fatal(ea, eb)
		}
		held := map[string]string{}
		for _, s := range ca.Held {
			held[s.Key] = "A"
		}
		for _, s := range cb.Held {
			if held[s.Key] != "" {
				t.Fatalf("round %d: %q held by A and B", round, s.Key)
			}
			held[s.Key] = "B"
		}
		if round == 0 && len(held) != n {
			t.Fatalf("round %d: %d of %d held", round, len(held), n)
		}
		// In round 0 the claim that commits second may have started
		// before the first committed and count one node; both are alive
		// from round 1 on.
		if ca.Subscriptions != n || (round > 0 && (ca.Nodes != 2 || cb.Nodes != 2)) {
			t.Fatalf("round %d: counts %d subscriptions, %d nodes", round, ca.Subscriptions, cb.Nodes)
		}
		// Give some back, as a node above its fair share does.
		if err := a.Release(ctx, "A", keys(ca.Held[:len(ca.Held)/3])...); err != nil {
			t.Fatal(err)
		}
	}
}

func keys(ss []hubstore.Subscription) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Key
	}
	return out
}

// TestImport copies a populated state (memstore) into an empty database
// with COPY and reads it back through the interface; a second import is
// refused.
func TestImport(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	src := memstore.Open()
	defer src.Close()
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 123456000, time.UTC)
	for i := range 600 {
		topic := fmt.Sprintf("https://a.example/%d", i%3)
		if _, err := src.Append(ctx, topic, hubstore.Entry{Published: t0, ContentType: "application/xml", Links: []string{"<x>; rel=\"y\""}, Body: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Prune(ctx, "https://a.example/0", 50); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		k := fmt.Sprintf("https://a.example/0\x00https://cb.example/%d", i)
		if err := src.PutSubscription(ctx, hubstore.Subscription{Key: k, Topic: "https://a.example/0", Callback: "https://cb.example/" + fmt.Sprint(i),
			Secret: "s\x00\xff", Lease: 60, Expires: t0, Cursor: uint64(i), LastError: "e"}); err != nil {
			t.Fatal(err)
		}
	}
	j, err := src.AddJob(ctx, hubstore.Job{Key: "k", Host: "h:80", Mode: "subscribe", Topic: "https://a.example/0", NextAt: t0}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Claim(ctx, "A", time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	first := fmt.Sprintf("https://a.example/0\x00https://cb.example/%d", 0)
	d, err := src.AddDeadLetter(ctx, "A", hubstore.DeadLetter{Topic: "https://a.example/0", Seq: 7, Body: []byte("b"), At: t0}, hubstore.CursorUpdate{Key: first, Cursor: 7})
	if err != nil {
		t.Fatal(err)
	}

	dst := openT(t, pgtest.Database(t))
	st, err := dst.Import(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if st != (ImportStats{Topics: 3, Entries: 551, Subscriptions: 300, Jobs: 1, DeadLetters: 1}) {
		t.Fatalf("imported %+v", st)
	}
	heads, err := dst.Heads(ctx)
	if err != nil || len(heads) != 3 || heads["https://a.example/0"] != 200 {
		t.Fatalf("heads %v %v", heads, err)
	}
	es, err := dst.Entries(ctx, "https://a.example/0", 0, 1)
	if err != nil || len(es) != 1 || es[0].Seq != 50 || !es[0].Published.Equal(t0) || len(es[0].Links) != 1 {
		t.Fatalf("first entry %+v %v", es, err)
	}
	if seq, err := dst.Append(ctx, "https://a.example/0", hubstore.Entry{ContentType: "text/plain"}); err != nil || seq != 201 {
		t.Fatalf("append after import: %d %v", seq, err)
	}
	want, _ := src.GetSubscription(ctx, first)
	got, err := dst.GetSubscription(ctx, first)
	if err != nil || got != want {
		t.Fatalf("subscription %+v, want %+v (%v)", got, want, err)
	}
	if c, err := dst.Counts(ctx); err != nil || c != (hubstore.Counts{Subscriptions: 300, Jobs: 1, DeadLetters: 1}) {
		t.Fatalf("counts %+v %v", c, err)
	}
	if gd, err := dst.GetDeadLetter(ctx, d.ID); err != nil || string(gd.Body) != "b" {
		t.Fatalf("dead letter %+v %v", gd, err)
	}
	j2, err := dst.AddJob(ctx, hubstore.Job{Key: "k2", Host: "h:80", Mode: "subscribe", Topic: "https://a.example/0"}, 0, 0)
	if err != nil || j2.ID <= j.ID {
		t.Fatalf("job after import: %d (imported %d) %v", j2.ID, j.ID, err)
	}
	if _, err := dst.Import(ctx, src); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("second import: %v", err)
	}
}
