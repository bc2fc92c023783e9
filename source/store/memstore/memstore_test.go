package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/memstore"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New().Open("set") })
}

func TestSharedHandles(t *testing.T) {
	ctx := context.Background()
	db := memstore.New()
	a, b, other := db.Open("s"), db.Open("s"), db.Open("other")
	defer a.Close()
	defer b.Close()
	defer other.Close()

	w, err := b.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Apply(ctx, store.Batch{Changes: []store.Change{{Kind: rs.Created, Time: storetest.T0, Resource: storetest.Res("x", "X")}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w:
	case <-time.After(5 * time.Second):
		t.Fatal("Watch: no signal after a commit by another handle")
	}
	if _, err := b.Get(ctx, "x"); err != nil {
		t.Errorf("commit by a not visible to b: %v", err)
	}
	if st, _ := other.Stats(ctx); st.Resources != 0 {
		t.Errorf("another set sees the commit: %+v", st)
	}

	lostA, releaseA, err := a.Lead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Another set leads independently.
	if _, rel, err := other.Lead(ctx); err != nil {
		t.Fatal(err)
	} else {
		rel()
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	if _, _, err := b.Lead(short); err == nil {
		t.Fatal("b leads while a holds the role")
	}
	cancel()
	releaseA()
	select {
	case <-lostA:
		t.Error("lost closed by release")
	default:
	}
	lostB, _, err := b.Lead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// a waits; closing b (a crash) closes lostB and hands the role over.
	got := make(chan error, 1)
	go func() { _, _, err := a.Lead(ctx); got <- err }()
	b.Close()
	select {
	case <-lostB:
	case <-time.After(5 * time.Second):
		t.Fatal("lost not closed by Close")
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a does not lead after b closed")
	}
	select {
	case _, ok := <-w:
		if ok {
			<-w // a pending signal, then closed
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch channel not closed by Close")
	}
}

func TestShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (a, b store.Shared) {
		db := memstore.New()
		return db.Open("set"), db.Open("set")
	})
}
