package hubstoretest

import (
	"context"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// RunDurable checks that what was committed survives closing and
// reopening: newState makes a fresh place (a directory, a database) and
// returns a function that opens it.
func RunDurable(t *testing.T, newState func(t *testing.T) (open func() hubstore.Store)) {
	ctx := context.Background()
	open := newState(t)
	s := open()
	for range 3 {
		must(s.Append(ctx, "https://a.example/", entry("x")))(t)
	}
	must(s.Prune(ctx, "https://a.example/", 3))(t)
	ok(t, s.PutSubscription(ctx, sub("k1", "https://a.example/")))
	must(s.Claim(ctx, "A", time.Minute, 10))(t)
	must(s.UpdateCursors(ctx, "A", []hubstore.CursorUpdate{{Key: "k1", Cursor: 2, Attempt: 1, LastError: "e"}}))(t)
	j := must(s.AddJob(ctx, hubstore.Job{Key: "k2", Host: "h:80", Mode: "subscribe", Topic: "https://a.example/", NextAt: t0}, 0, 0))(t)
	d := must(s.AddDeadLetter(ctx, "A", hubstore.DeadLetter{Topic: "https://a.example/", Seq: 1, Body: []byte("b")},
		hubstore.CursorUpdate{Key: "k1", Cursor: 2}))(t)
	ok(t, s.Close())

	s = open()
	defer s.Close()
	if h := must(s.Head(ctx, "https://a.example/"))(t); h != 3 {
		t.Fatalf("head after reopen %d", h)
	}
	if es := must(s.Entries(ctx, "https://a.example/", 0, 10))(t); len(es) != 1 || es[0].Seq != 3 {
		t.Fatalf("entries after reopen: %+v", es)
	}
	if seq := must(s.Append(ctx, "https://a.example/", entry("y")))(t); seq != 4 {
		t.Fatalf("seq after reopen %d", seq)
	}
	if r := must(s.GetSubscription(ctx, "k1"))(t); r.Cursor != 2 || r.Attempt != 0 || r.Secret != "s-k1" {
		t.Fatalf("subscription after reopen: %+v", r)
	}
	var jobs []hubstore.Job
	for j, err := range s.Jobs(ctx) {
		ok(t, err)
		jobs = append(jobs, j)
	}
	if len(jobs) != 1 || jobs[0].ID != j.ID || jobs[0].Host != "h:80" {
		t.Fatalf("jobs after reopen: %+v", jobs)
	}
	if j2 := must(s.AddJob(ctx, hubstore.Job{Key: "k3", Host: "h:80"}, 0, 0))(t); j2.ID <= j.ID {
		t.Fatalf("job id reused after reopen: %d", j2.ID)
	}
	if got := must(s.GetDeadLetter(ctx, d.ID))(t); string(got.Body) != "b" {
		t.Fatalf("dead letter after reopen: %+v", got)
	}
}
