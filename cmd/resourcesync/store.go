package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/stateurl"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/store/storeurl"
)

// storeHelp is the help topic state on the --store of serve, publish,
// simulate and oai serve.
const storeHelp = `

STATE STORE (--store URL)
   bolt:PATH        the embedded store (the default): each set's state in
                    PATH/SET/state.db, one process at a time. Without --store,
                    PATH is --state; with --store bolt:PATH and no --state,
                    --state is PATH.
   postgres://USER@HOST:PORT/DB?sslmode=...  (or postgresql://)
                    one PostgreSQL database, sets namespaced by name; the
                    schema is created or migrated on start. Several processes
                    may serve the same DIR (shared storage) and the same
                    --base-url behind a load balancer: replicas. One holds each
                    set's scanner role (scans, journals, decides the documents)
                    and another takes it over within seconds when it dies; every
                    replica renders the same documents (byte for byte) from the
                    database into its own --state (required with serve), which
                    must be local to each replica. Resource Dumps, Change
                    Dumps and the archives are off with a shared store: their
                    files exist only where they were written. Change
                    notifications are sent by the leader only; the replicas'
                    embedded hubs are nodes of one hub cluster on the same
                    database, so a subscription made through any replica gets
                    what the leader publishes (or give --hub URL, --no-hub).
   A replica whose DIR is empty while the database holds resources (a share
   not mounted) refuses to scan, rather than delete every resource, and
   gives the scanner role to another replica for 30 s.
   publish on a shared store takes the scanner role of every set for its run
   (it waits up to 30 s for a holder, e.g. a serve replica, and fails after).
   --state still holds the local files (the documents) with either store.
   A password in the URL is visible to every local user (ps): give the URL
   in $RESOURCESYNC_STORE instead, or the password in $PGPASSWORD or
   ~/.pgpass. Messages never show it.`

// applyStore sets cfg's store from --store (see storeHelp).
func applyStore(cmd *cli.Command, cfg *source.Config) error {
	u := cmd.String("store")
	if u == "" {
		return nil
	}
	su, err := storeurl.Parse(u)
	switch {
	case errors.Is(err, storeurl.ErrNoPath):
		return cli.Exit("--store bolt:PATH: no PATH", exitUsage)
	case err != nil:
		return cli.Exit(fmt.Sprintf("--store %q: want bolt:PATH or postgres://...", redactURL(u)), exitUsage)
	case !su.Embedded():
		cfg.OpenStore = su.Open
	case !cmd.IsSet("state"):
		cfg.StateDir = su.Dir
	default:
		cfg.Exclude = append(cfg.Exclude, su.Dir)
		cfg.OpenStore = su.Open
	}
	return nil
}

func isPostgresURL(u string) bool { return stateurl.IsPostgres(u) }

// redactURL hides the passwords of a store URL for messages.
func redactURL(u string) string { return storeurl.Redact(u) }
