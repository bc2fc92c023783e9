package main

import (
	"fmt"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/internal/testing/sparqltest"
)

// TestAggregateModelPG is TestAggregateModel on PostgreSQL with two
// aggregate nodes (n1 and n2) sharing the store, the root and, for an
// SDShare line (an `sdshare serve` collection), a SPARQL store
// (Virtuoso, internal/testing/sparqltest): every
// action (kill -9 at a random moment or in a run, SIGTERM, SIGHUP,
// restarts) hits one of them at random, and the other keeps running.
// The checks are TestAggregateModel's: at every settle point every
// mirror equals its Source (whichever node holds it, and after each
// takeover; the SDShare line's graph equals its collection), and the run history (all nodes' runs, in the one store)
// agrees with the --json outputs of every incarnation of both nodes. A
// node killed and restarted under its name waits for its predecessor's
// heartbeat to expire (aggregate --node).
//
// One seed of 12 steps in CI (about a minute); more with the variables
// of TestAggregateModel:
//
//	RESOURCESYNC_AGG_MODEL_N=20 go test ./cmd/resourcesync -run '^TestAggregateModelPG$' -count=1 -v -timeout=0
func TestAggregateModelPG(t *testing.T) {
	if testing.Short() {
		t.Skip("model-based test of real processes: runs without -short")
	}
	pgtest.Skip(t)
	sparqltest.Skip(t)
	srv := sparqltest.Shared(t)
	seed := envUint(t, "RESOURCESYNC_AGG_MODEL_SEED", 1)
	n := envUint(t, "RESOURCESYNC_AGG_MODEL_N", 1)
	t.Setenv("RS_MODEL_AGG_LOOPBACK", "1")
	steps := int(envUint(t, "RESOURCESYNC_AGG_MODEL_STEPS", 12))
	for i := range n {
		t.Run(fmt.Sprint("seed=", seed+i), func(t *testing.T) {
			h := newAggHistory(t, seed+i, steps)
			h.pg = pgtest.Database(t)
			srv.Reset(t)
			h.addSDShare(srv)
			h.run()
		})
	}
}
