package hubstoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// t0 is a fixed time with microseconds, as every store keeps them.
var t0 = time.Date(2026, 3, 1, 12, 30, 45, 123456000, time.UTC)

func sub(key, topic string) hubstore.Subscription {
	return hubstore.Subscription{Key: key, Topic: topic, Callback: "https://sub.example/" + key, Secret: "s-" + key,
		Lease: 3600, Expires: t0.Add(time.Hour)}
}

func entry(body string) hubstore.Entry {
	return hubstore.Entry{Published: t0, ContentType: "application/xml", HubURL: "https://hub.example/",
		Links: []string{`<https://src.example/cl.xml>; rel="resourcesync"`}, Body: []byte(body)}
}

// must is used as must(f())(t): Go passes a multi-value call only as the
// whole argument list.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func subsOf(t *testing.T, s hubstore.Store, topic string) []hubstore.Subscription {
	t.Helper()
	var out []hubstore.Subscription
	for r, err := range s.Subscriptions(context.Background(), topic) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func keysOf(rs []hubstore.Subscription) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Key
	}
	return out
}

func sameTime(a, b time.Time) bool {
	return a.Equal(b) && a.Location() == b.Location() || a.IsZero() && b.IsZero()
}

// Run checks every method's contract on fresh stores from open (one per
// subtest). open registers the store's Close with t.Cleanup or the test
// closes it; closing twice must be harmless.
func Run(t *testing.T, open func(t *testing.T) hubstore.Store) {
	ctx := context.Background()

	t.Run("AppendHeadEntries", func(t *testing.T) {
		s := open(t)
		for i := 1; i <= 5; i++ {
			if seq := must(s.Append(ctx, "https://a.example/t", entry(fmt.Sprint("a", i))))(t); seq != uint64(i) {
				t.Fatalf("append %d: seq %d", i, seq)
			}
		}
		if seq := must(s.Append(ctx, "https://b.example/t", entry("b1")))(t); seq != 1 {
			t.Fatalf("other topic starts at %d", seq)
		}
		if h := must(s.Head(ctx, "https://a.example/t"))(t); h != 5 {
			t.Fatalf("head %d", h)
		}
		if h := must(s.Head(ctx, "https://none.example/"))(t); h != 0 {
			t.Fatalf("head of unknown topic %d", h)
		}
		heads := must(s.Heads(ctx))(t)
		if len(heads) != 2 || heads["https://a.example/t"] != 5 || heads["https://b.example/t"] != 1 {
			t.Fatalf("heads %v", heads)
		}
		es := must(s.Entries(ctx, "https://a.example/t", 1, 2))(t)
		if len(es) != 2 || es[0].Seq != 2 || es[1].Seq != 3 || string(es[0].Body) != "a2" {
			t.Fatalf("entries after 1, max 2: %+v", es)
		}
		e := es[0]
		want := entry("a2")
		if !sameTime(e.Published, want.Published) || e.ContentType != want.ContentType || e.HubURL != want.HubURL ||
			!slices.Equal(e.Links, want.Links) {
			t.Fatalf("entry round trip: %+v", e)
		}
		if es := must(s.Entries(ctx, "https://a.example/t", 3, 100))(t); len(es) != 2 || es[1].Seq != 5 {
			t.Fatalf("entries after 3: %d", len(es))
		}
		if es := must(s.Entries(ctx, "https://a.example/t", 5, 10))(t); len(es) != 0 {
			t.Fatalf("entries after head: %d", len(es))
		}
		if es := must(s.Entries(ctx, "https://none.example/", 0, 10))(t); len(es) != 0 {
			t.Fatalf("entries of unknown topic: %d", len(es))
		}
		if _, err := s.Entries(ctx, "https://a.example/t", 0, 0); !errors.Is(err, hubstore.ErrInvalid) {
			t.Fatalf("max 0: %v", err)
		}
		if _, err := s.Append(ctx, "", entry("x")); !errors.Is(err, hubstore.ErrInvalid) {
			t.Fatalf("empty topic: %v", err)
		}
		// Empty body, no links, zero time survive.
		seq := must(s.Append(ctx, "https://c.example/", hubstore.Entry{ContentType: "text/plain"}))(t)
		es = must(s.Entries(ctx, "https://c.example/", 0, 1))(t)
		if len(es) != 1 || es[0].Seq != seq || len(es[0].Body) != 0 || len(es[0].Links) != 0 || !es[0].Published.IsZero() {
			t.Fatalf("empty entry: %+v", es)
		}
	})

	t.Run("EntriesPages", func(t *testing.T) {
		s := open(t)
		const n = 1200
		for i := 1; i <= n; i++ {
			must(s.Append(ctx, "https://a.example/", entry(fmt.Sprint(i))))(t)
		}
		var after uint64
		for after < n {
			es := must(s.Entries(ctx, "https://a.example/", after, 500))(t)
			if len(es) == 0 || len(es) > 500 {
				t.Fatalf("page after %d: %d entries", after, len(es))
			}
			for _, e := range es {
				if e.Seq != after+1 || string(e.Body) != fmt.Sprint(e.Seq) {
					t.Fatalf("after %d got seq %d body %q", after, e.Seq, e.Body)
				}
				after = e.Seq
			}
		}
	})

	t.Run("Prune", func(t *testing.T) {
		s := open(t)
		for i := 1; i <= 10; i++ {
			must(s.Append(ctx, "https://a.example/", entry(fmt.Sprint(i))))(t)
		}
		must(s.Append(ctx, "https://b.example/", entry("b")))(t)
		total := 0
		for {
			n := must(s.Prune(ctx, "https://a.example/", 7))(t)
			if n == 0 {
				break
			}
			total += n
		}
		if total != 6 {
			t.Fatalf("pruned %d, want 6", total)
		}
		es := must(s.Entries(ctx, "https://a.example/", 0, 100))(t)
		if len(es) != 4 || es[0].Seq != 7 {
			t.Fatalf("after prune: %d entries, first %v", len(es), es)
		}
		if h := must(s.Head(ctx, "https://a.example/"))(t); h != 10 {
			t.Fatalf("head after prune %d", h)
		}
		// Prune everything: the head stays and the next seq follows it.
		for must(s.Prune(ctx, "https://a.example/", 11))(t) > 0 {
		}
		if seq := must(s.Append(ctx, "https://a.example/", entry("11")))(t); seq != 11 {
			t.Fatalf("append after full prune: seq %d", seq)
		}
		if es := must(s.Entries(ctx, "https://b.example/", 0, 10))(t); len(es) != 1 {
			t.Fatal("pruning one topic touched another")
		}
		if n := must(s.Prune(ctx, "https://none.example/", 100))(t); n != 0 {
			t.Fatalf("prune unknown topic: %d", n)
		}
	})

	t.Run("ConcurrentAppend", func(t *testing.T) {
		s := open(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		seen := map[uint64]bool{}
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 25 {
					seq, err := s.Append(ctx, "https://a.example/", entry(fmt.Sprint(g, i)))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seen[seq] = true
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for i := uint64(1); i <= 100; i++ {
			if !seen[i] {
				t.Fatalf("seq %d missing (gap or duplicate)", i)
			}
		}
	})

	t.Run("Subscriptions", func(t *testing.T) {
		s := open(t)
		if _, err := s.GetSubscription(ctx, "k1"); !errors.Is(err, hubstore.ErrNotFound) {
			t.Fatalf("get missing: %v", err)
		}
		r := sub("k1", "https://a.example/")
		r.Cursor, r.Attempt, r.FirstFail, r.LastError, r.NextAt = 7, 2, t0, "boom", t0.Add(time.Minute)
		ok(t, s.PutSubscription(ctx, r))
		got := must(s.GetSubscription(ctx, "k1"))(t)
		if got.Key != r.Key || got.Topic != r.Topic || got.Callback != r.Callback || got.Secret != r.Secret ||
			got.Lease != r.Lease || !sameTime(got.Expires, r.Expires) || got.Cursor != 7 || got.Attempt != 2 ||
			!sameTime(got.FirstFail, t0) || got.LastError != "boom" || !sameTime(got.NextAt, r.NextAt) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
		}
		r.Secret = "new"
		ok(t, s.PutSubscription(ctx, r))
		if got := must(s.GetSubscription(ctx, "k1"))(t); got.Secret != "new" {
			t.Fatal("put did not replace")
		}
		ok(t, s.DeleteSubscription(ctx, "k1"))
		if _, err := s.GetSubscription(ctx, "k1"); !errors.Is(err, hubstore.ErrNotFound) {
			t.Fatalf("get deleted: %v", err)
		}
		ok(t, s.DeleteSubscription(ctx, "k1"))
		if err := s.PutSubscription(ctx, hubstore.Subscription{Topic: "t"}); !errors.Is(err, hubstore.ErrInvalid) {
			t.Fatalf("empty key: %v", err)
		}
	})

	t.Run("SubscriptionsIteration", func(t *testing.T) {
		s := open(t)
		const n = 700 // more than any sensible page
		var want, wantB []string
		for i := range n {
			topic := "https://a.example/"
			if i%3 == 0 {
				topic = "https://b.example/"
			}
			k := fmt.Sprintf("%s\x00k%04d", topic, (i*7919)%n)
			ok(t, s.PutSubscription(ctx, sub(k, topic)))
			want = append(want, k)
			if i%3 == 0 {
				wantB = append(wantB, k)
			}
		}
		slices.Sort(want)
		slices.Sort(wantB)
		if got := keysOf(subsOf(t, s, "")); !slices.Equal(got, want) {
			t.Fatalf("all: %d keys, want %d in order", len(got), len(want))
		}
		if got := keysOf(subsOf(t, s, "https://b.example/")); !slices.Equal(got, wantB) {
			t.Fatalf("topic b: %d keys, want %d", len(got), len(wantB))
		}
		if got := subsOf(t, s, "https://none.example/"); len(got) != 0 {
			t.Fatalf("unknown topic: %d", len(got))
		}
		i := 0
		for range s.Subscriptions(ctx, "") {
			if i++; i == 10 {
				break // stopping early must not panic or leak
			}
		}
		if c := must(s.CountSubscriptions(ctx, "https://b.example/"))(t); c != len(wantB) {
			t.Fatalf("count b: %d", c)
		}
		if c := must(s.Counts(ctx))(t); c.Subscriptions != n {
			t.Fatalf("counts %+v", c)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		var err error
		for _, e := range s.Subscriptions(cctx, "") {
			if e != nil {
				err = e
				break
			}
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("iterating with a cancelled context: %v", err)
		}
	})

	t.Run("SubscribeUnsubscribe", func(t *testing.T) {
		s := open(t)
		topic := "https://a.example/"
		for range 3 {
			must(s.Append(ctx, topic, entry("x")))(t)
		}
		j := must(s.AddJob(ctx, hubstore.Job{Key: "k1", Host: "sub.example:443", Mode: "subscribe", Topic: topic, NextAt: t0}, 0, 0))(t)
		r := sub("k1", topic)
		r.Cursor, r.Attempt = 1, 5 // ignored for a new subscription
		got := must(s.Subscribe(ctx, j.ID, r, 0))(t)
		if got.Cursor != 3 || got.Attempt != 0 || got.Secret != r.Secret {
			t.Fatalf("new subscription: %+v", got)
		}
		if c := must(s.Counts(ctx))(t); c.Jobs != 0 || c.Subscriptions != 1 {
			t.Fatalf("job not deleted: %+v", c)
		}
		must(s.Claim(ctx, "n1", time.Minute, 10))(t)
		if refused := must(s.UpdateCursors(ctx, "n1", []hubstore.CursorUpdate{{Key: "k1", Cursor: 3, Attempt: 2, LastError: "e"}}))(t); len(refused) != 0 {
			t.Fatalf("refused %v", refused)
		}
		// Renewal keeps the delivery state, changes the rest.
		must(s.Append(ctx, topic, entry("y")))(t)
		r.Secret, r.Expires = "s2", t0.Add(2*time.Hour)
		got = must(s.Subscribe(ctx, 999, r, 0))(t)
		if got.Cursor != 3 || got.Attempt != 2 || got.LastError != "e" || got.Secret != "s2" || !sameTime(got.Expires, r.Expires) {
			t.Fatalf("renewed: %+v", got)
		}
		// The per-topic limit applies to new subscriptions only.
		if _, err := s.Subscribe(ctx, 0, r, 1); err != nil {
			t.Fatalf("renewal at the limit: %v", err)
		}
		j2 := must(s.AddJob(ctx, hubstore.Job{Key: "k2", Mode: "subscribe", Topic: topic}, 0, 0))(t)
		if _, err := s.Subscribe(ctx, j2.ID, sub("k2", topic), 1); !errors.Is(err, hubstore.ErrTopicFull) {
			t.Fatalf("beyond the limit: %v", err)
		}
		if c := must(s.Counts(ctx))(t); c.Jobs != 0 || c.Subscriptions != 1 {
			t.Fatalf("topic full must delete the job and add nothing: %+v", c)
		}
		j3 := must(s.AddJob(ctx, hubstore.Job{Key: "k1", Mode: "unsubscribe", Topic: topic}, 0, 0))(t)
		ok(t, s.Unsubscribe(ctx, j3.ID, "k1"))
		if c := must(s.Counts(ctx))(t); c.Jobs != 0 || c.Subscriptions != 0 {
			t.Fatalf("after unsubscribe: %+v", c)
		}
		ok(t, s.Unsubscribe(ctx, 12345, "absent"))
	})

	t.Run("Jobs", func(t *testing.T) {
		s := open(t)
		var ids []uint64
		for i := range 4 {
			j := must(s.AddJob(ctx, hubstore.Job{Key: fmt.Sprint("k", i%2), Host: fmt.Sprint("h", i%2, ":80"), Mode: "subscribe",
				Topic: "https://a.example/", Callback: "http://h/cb", Secret: "x", Lease: 60, VerifyToken: "tok", HasToken: true, NextAt: t0}, 0, 0))(t)
			if len(ids) > 0 && j.ID <= ids[len(ids)-1] {
				t.Fatalf("ids not increasing: %v then %d", ids, j.ID)
			}
			ids = append(ids, j.ID)
		}
		if _, err := s.AddJob(ctx, hubstore.Job{Key: "k9", Host: "h9:80"}, 4, 0); !errors.Is(err, hubstore.ErrTooManyJobs) {
			t.Fatalf("total limit: %v", err)
		}
		if _, err := s.AddJob(ctx, hubstore.Job{Key: "k9", Host: "h0:80"}, 0, 2); !errors.Is(err, hubstore.ErrTooManyJobs) {
			t.Fatalf("host limit: %v", err)
		}
		must(s.AddJob(ctx, hubstore.Job{Key: "k9", Host: "h9:80", NextAt: t0.Add(time.Hour)}, 5, 2))(t)
		var all []hubstore.Job
		for j, err := range s.Jobs(ctx) {
			ok(t, err)
			all = append(all, j)
		}
		if len(all) != 5 || all[0].ID != ids[0] || all[0].VerifyToken != "tok" || !all[0].HasToken || !sameTime(all[0].NextAt, t0) {
			t.Fatalf("jobs: %+v", all)
		}
		// Due: the lowest-ID job of each key whose time has come.
		due, next := must2(t)(s.ClaimJobs(ctx, "n1", t0, time.Minute, 10))
		if len(due) != 2 || due[0].ID != ids[0] || due[1].ID != ids[1] {
			t.Fatalf("due: %+v", due)
		}
		if !sameTime(next, t0.Add(time.Hour)) {
			t.Fatalf("next %v", next)
		}
		// Held by n1: not for n2; n1 gets them again.
		if due, _ := must2(t)(s.ClaimJobs(ctx, "n2", t0, time.Minute, 10)); len(due) != 0 {
			t.Fatalf("n2 got jobs n1 holds: %+v", due)
		}
		if due, _ := must2(t)(s.ClaimJobs(ctx, "n1", t0, time.Minute, 1)); len(due) != 1 || due[0].ID != ids[0] {
			t.Fatalf("n1 again, max 1: %+v", due)
		}
		// Rescheduling releases the job.
		j := all[0]
		j.Attempts, j.NextAt = 1, t0.Add(time.Second)
		ok(t, s.UpdateJob(ctx, j))
		due, _ = must2(t)(s.ClaimJobs(ctx, "n2", t0.Add(2*time.Second), time.Minute, 10))
		if len(due) != 1 || due[0].ID != ids[0] || due[0].Attempts != 1 {
			t.Fatalf("n2 after reschedule: %+v", due)
		}
		ok(t, s.DeleteJob(ctx, ids[0]))
		ok(t, s.DeleteJob(ctx, ids[0]))
		// The next job of key k0 becomes due (for whoever is free).
		due, _ = must2(t)(s.ClaimJobs(ctx, "n2", t0, time.Minute, 10))
		if len(due) != 1 || due[0].ID != ids[2] {
			t.Fatalf("after delete: %+v", due)
		}
		if err := s.UpdateJob(ctx, hubstore.Job{ID: 9999, Key: "x"}); !errors.Is(err, hubstore.ErrNotFound) {
			t.Fatalf("update missing: %v", err)
		}
		if _, _, err := s.ClaimJobs(ctx, "n1", t0, time.Minute, 0); !errors.Is(err, hubstore.ErrInvalid) {
			t.Fatalf("max 0: %v", err)
		}
	})

	t.Run("ClaimsOneHandle", func(t *testing.T) {
		s := open(t)
		testClaims(t, s, s)
	})

	t.Run("DeadLetters", func(t *testing.T) {
		s := open(t)
		ok(t, s.PutSubscription(ctx, sub("k1", "https://a.example/")))
		must(s.Claim(ctx, "n1", time.Minute, 10))(t)
		d := hubstore.DeadLetter{Topic: "https://a.example/", Callback: "https://sub.example/k1", Seq: 4, Published: t0,
			ContentType: "application/xml", HubURL: "https://hub.example/", Links: []string{"<x>; rel=y"}, Body: []byte("<b/>"),
			Attempts: 9, FirstFail: t0, LastError: "503", At: t0.Add(time.Hour)}
		d1 := must(s.AddDeadLetter(ctx, "n1", d, hubstore.CursorUpdate{Key: "k1", Cursor: 4}))(t)
		d2 := must(s.AddDeadLetter(ctx, "n1", d, hubstore.CursorUpdate{Key: "k1", Cursor: 5}))(t)
		if d1.ID == 0 || d2.ID <= d1.ID {
			t.Fatalf("ids %d %d", d1.ID, d2.ID)
		}
		if r := must(s.GetSubscription(ctx, "k1"))(t); r.Cursor != 5 {
			t.Fatalf("cursor %d after dead letters", r.Cursor)
		}
		if _, err := s.AddDeadLetter(ctx, "n2", d, hubstore.CursorUpdate{Key: "k1", Cursor: 9}); !errors.Is(err, hubstore.ErrNotHolder) {
			t.Fatalf("dead letter by a non-holder: %v", err)
		}
		got := must(s.GetDeadLetter(ctx, d1.ID))(t)
		if got.Seq != 4 || !bytes.Equal(got.Body, d.Body) || !slices.Equal(got.Links, d.Links) || !sameTime(got.At, d.At) ||
			got.LastError != "503" || got.Attempts != 9 || !sameTime(got.Published, t0) {
			t.Fatalf("dead letter round trip: %+v", got)
		}
		var ids []uint64
		for d, err := range s.DeadLetters(ctx) {
			ok(t, err)
			ids = append(ids, d.ID)
		}
		if !slices.Equal(ids, []uint64{d1.ID, d2.ID}) {
			t.Fatalf("list %v", ids)
		}
		if c := must(s.Counts(ctx))(t); c.DeadLetters != 2 {
			t.Fatalf("counts %+v", c)
		}
		ok(t, s.DeleteDeadLetter(ctx, d1.ID))
		if err := s.DeleteDeadLetter(ctx, d1.ID); !errors.Is(err, hubstore.ErrNotFound) {
			t.Fatalf("delete twice: %v", err)
		}
		if _, err := s.GetDeadLetter(ctx, d1.ID); !errors.Is(err, hubstore.ErrNotFound) {
			t.Fatalf("get deleted: %v", err)
		}
	})

	t.Run("Watch", func(t *testing.T) {
		s := open(t)
		testWatch(t, s, s)
	})

	t.Run("Model", func(t *testing.T) { s := open(t); runModel(t, s, s) })

	t.Run("Closed", func(t *testing.T) {
		s := open(t)
		ch := must(s.Watch(ctx))(t)
		ok(t, s.Close())
		select {
		case _, open := <-ch:
			for open {
				_, open = <-ch
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Watch channel not closed by Close")
		}
		if _, err := s.Append(ctx, "https://a.example/", entry("x")); !errors.Is(err, hubstore.ErrClosed) {
			t.Fatalf("append after close: %v", err)
		}
		if _, err := s.GetSubscription(ctx, "k"); !errors.Is(err, hubstore.ErrClosed) {
			t.Fatalf("get after close: %v", err)
		}
		if _, err := s.Claim(ctx, "n", time.Second, 1); !errors.Is(err, hubstore.ErrClosed) {
			t.Fatalf("claim after close: %v", err)
		}
		if _, err := s.Watch(ctx); !errors.Is(err, hubstore.ErrClosed) {
			t.Fatalf("watch after close: %v", err)
		}
		s.Close() // twice is harmless
	})
}

func must2(t *testing.T) func([]hubstore.Job, time.Time, error) ([]hubstore.Job, time.Time) {
	return func(j []hubstore.Job, n time.Time, err error) ([]hubstore.Job, time.Time) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return j, n
	}
}
