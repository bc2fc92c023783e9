package main

import (
	"context"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// TestBenchSmall keeps the bench working: every change must arrive over
// both channels. No latency is asserted (the machine is shared).
func TestBenchSmall(t *testing.T) {
	c, _ := testnet.Client(t)
	res, err := Bench(context.Background(), 20, 50, 50, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Push.Arrived != 20 || res.WebSub.Arrived != 20 {
		t.Fatalf("%+v", res)
	}
	t.Logf("%+v", res)
}
