package pgstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

const helperEnv = "PGSTORE_TEST_LEADER_URL"

// TestHelperLeader is the other process of TestLeaderKilled: it leads the
// set, says so on stdout, and writes journal records until it is killed.
func TestHelperLeader(t *testing.T) {
	u := os.Getenv(helperEnv)
	if u == "" {
		t.Skip("helper process of TestLeaderKilled")
	}
	ctx := context.Background()
	s, err := pgstore.Open(ctx, u, "killed", nil)
	if err != nil {
		t.Fatal(err)
	}
	lost, _, err := s.Lead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("LED")
	for i := 0; ; i++ {
		select {
		case <-lost:
			t.Fatal("lost the role")
		default:
		}
		if _, _, err := s.Apply(ctx, store.Batch{Changes: []store.Change{change(s, rs.Created, fmt.Sprintf("helper/%06d", i))}}); err != nil {
			t.Fatal(err)
		}
		if i == 20 {
			fmt.Println("WROTE")
		}
	}
}

// change is a change at max(now, the journal's last datetime).
func change(s store.Store, kind rs.Change, p string) store.Change {
	st, _ := s.Stats(context.Background())
	now := time.Now().UTC()
	if now.Before(st.LastTime) {
		now = st.LastTime
	}
	return store.Change{Kind: kind, Time: now, Resource: storetest.Res(p, p)}
}

// TestLeaderKilled: the leader is another process, killed with SIGKILL
// while it writes; this process takes the role within seconds and the
// journal continues without a gap or a duplicate.
func TestLeaderKilled(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	u := pgtest.Database(t)
	s := open(t, u, "killed")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLeader$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"="+u)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	waitFor := func(word string) {
		t.Helper()
		for lines.Scan() {
			if strings.TrimSpace(lines.Text()) == word {
				return
			}
		}
		t.Fatalf("helper exited before %s", word)
	}
	waitFor("LED")
	got := make(chan error, 1)
	var lost <-chan struct{}
	go func() {
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		var err error
		lost, _, err = s.Lead(lctx)
		got <- err
	}()
	waitFor("WROTE")
	select {
	case err := <-got:
		t.Fatalf("led while the helper holds the role: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	killed := time.Now()
	cmd.Wait()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no takeover within 5s of the leader's SIGKILL")
	}
	took := time.Since(killed)
	before, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before.LastSeq < 21 {
		t.Fatalf("the helper wrote %d records, want > 20", before.LastSeq)
	}
	for i := range 5 {
		first, last, err := s.Apply(ctx, store.Batch{Changes: []store.Change{change(s, rs.Created, fmt.Sprintf("new/%d", i))}})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && first != before.LastSeq+1 || last != first {
			t.Errorf("apply %d after the takeover: seqs %d..%d after last %d", i, first, last, before.LastSeq)
		}
	}
	if err := storetest.CheckReplay(ctx, s); err != nil {
		t.Error(err)
	}
	var seqs, distinct int64
	if err := s.Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT seq) FROM rs_journal`).Scan(&seqs, &distinct); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Stats(ctx); seqs != int64(st.LastSeq) || distinct != seqs || st.FirstSeq != 1 {
		t.Errorf("journal: %d rows, %d seqs, stats %+v", seqs, distinct, st)
	}
	select {
	case <-lost:
		t.Error("lost closed")
	default:
	}
	t.Logf("takeover %v after SIGKILL; the helper had written %d records", took.Round(time.Millisecond), before.LastSeq)
}

// TestLeadLost: a holder whose connection is terminated learns it on lost
// within a few seconds, and the role goes to the other Store.
func TestLeadLost(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	u := pgtest.Database(t)
	a, b := open(t, u, "lost"), open(t, u, "lost")
	lost, release, err := a.Lead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	var n int
	if err := b.Pool().QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminating the holder: %d backends, %v", n, err)
	}
	start := time.Now()
	select {
	case <-lost:
		t.Logf("lost closed %v after the holder's backend was terminated", time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("lost not closed within 5s")
	}
	lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, rel, err := b.Lead(lctx)
	if err != nil {
		t.Fatal(err)
	}
	// The former holder is fenced: its writes are refused while it has
	// not led again.
	if _, _, err := a.Apply(ctx, store.Batch{Changes: []store.Change{change(a, rs.Created, "stale")}}); !errors.Is(err, store.ErrLocked) {
		t.Errorf("Apply of the former holder: %v, want ErrLocked", err)
	} else {
		t.Log(err)
	}
	if _, _, err := b.Apply(ctx, store.Batch{Changes: []store.Change{change(b, rs.Created, "fresh")}}); err != nil {
		t.Errorf("Apply of the new holder: %v", err)
	}
	rel()
	release() // after a loss: a no-op, no panic
	if _, _, err := b.Apply(ctx, store.Batch{Changes: []store.Change{change(b, rs.Created, "after release")}}); err != nil {
		t.Errorf("Apply after release: %v", err)
	}
}

// TestWatchReconnect: when the LISTEN connection breaks, Watch listens
// again and sends one value (commits may have been missed), then goes on.
func TestWatchReconnect(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	u := pgtest.Database(t)
	a, b := open(t, u, "w"), open(t, u, "w")
	ch, err := b.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	expect := func(what string) {
		t.Helper()
		select {
		case _, ok := <-ch:
			if !ok {
				t.Fatalf("%s: channel closed", what)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no value within 5s", what)
		}
	}
	var n int
	if err := a.Pool().QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminating the listener: %d backends, %v", n, err)
	}
	expect("after the listener's connection broke")
	time.Sleep(100 * time.Millisecond)
	select {
	case <-ch:
	default:
	}
	if err := a.PutMeta(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	expect("PutMeta after the reconnection")
}
