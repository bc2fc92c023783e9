package main

import (
	"context"
	"testing"
)

// TestBenchSmall keeps the bench working; no speed is asserted (the
// machine is shared).
func TestBenchSmall(t *testing.T) {
	r, err := Bench(context.Background(), 3000)
	if err != nil {
		t.Fatal(err)
	}
	if r.ChangeListsS <= 0 || r.WithFeedsS <= 0 {
		t.Fatalf("%+v", r)
	}
	t.Logf("%+v", r)
}
