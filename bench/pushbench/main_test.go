package main

import (
	"context"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// TestBenchSmall keeps the bench working: every change must arrive over
// both channels. No latency is asserted (the machine is shared).
func TestBenchSmall(t *testing.T) {
	c, _ := testnet.Client(t)
	res, err := Bench(context.Background(), 20, 50, 50, 20*time.Millisecond, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Push.Arrived != 20 || res.WebSub.Arrived != 20 {
		t.Fatalf("%+v", res)
	}
	t.Logf("%+v", res)
}

// TestBurstSmall keeps the burst measurement working: every file of the
// burst is journaled.
func TestBurstSmall(t *testing.T) {
	res, err := Burst(context.Background(), 200, 50, 20*time.Millisecond, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Updates < 1 {
		t.Fatalf("%+v", res)
	}
	t.Logf("%+v", res)
}
