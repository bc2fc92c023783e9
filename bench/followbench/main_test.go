package main

import (
	"context"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// TestBenchSmall keeps the bench working: a few changes must all arrive
// by notification. No latency is asserted (the machine is shared).
func TestBenchSmall(t *testing.T) {
	c, _ := testnet.Client(t)
	res, err := Bench(context.Background(), 20, 20, 50, 10*time.Millisecond, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Arrived != 20 || res.ByNotify < 20 {
		t.Fatalf("%+v", res)
	}
	t.Logf("%+v", res)
}
