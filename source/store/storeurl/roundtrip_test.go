package storeurl_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/locationtest"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/storeurl"
)

// TestRoundTrip: every spelling of a store location opens, keeps what was
// written across a close, and opens the same state again.
func TestRoundTrip(t *testing.T) {
	forms := append(locationtest.Local(t), locationtest.Mem())
	t.Run("pg", func(t *testing.T) {
		locationtest.RoundTrip(t, []locationtest.Form{locationtest.Postgres(t)}, openSet, write, read)
	})
	locationtest.RoundTrip(t, forms, openSet, write, read)
}

func openSet(ctx context.Context, loc string) (store.Store, error) {
	return storeurl.Open(ctx, loc, "s")
}

func write(t *testing.T, s store.Store) {
	if err := s.PutMeta(context.Background(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, s store.Store) {
	if v, err := s.GetMeta(context.Background(), "k"); err != nil || !bytes.Equal(v, []byte("v")) {
		t.Fatalf("read back %q, %v", v, err)
	}
}

// TestUnknownScheme: an unknown scheme names the known ones; no error
// shows a password.
func TestUnknownScheme(t *testing.T) {
	locationtest.Unknown(t, func(ctx context.Context, loc string) error {
		st, err := storeurl.Open(ctx, loc, "s")
		if err == nil {
			st.Close()
		}
		return err
	}, storeurl.ErrScheme, []string{"bolt", "file", "mem", "postgres", "postgresql"})
}

// TestMemForms: mem:NAME and mem://NAME name one state; another NAME
// another.
func TestMemForms(t *testing.T) {
	ctx := context.Background()
	a, err := storeurl.Open(ctx, "mem:TestMemForms", "s")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	write(t, a)
	b, err := storeurl.Open(ctx, "mem://TestMemForms", "s")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	read(t, b)
	c, err := storeurl.Open(ctx, "mem:TestMemForms-other", "s")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, err := c.GetMeta(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another name holds %q, %v", v, err)
	}
}
