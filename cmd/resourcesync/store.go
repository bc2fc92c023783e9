package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
)

// storeHelp is the part of serve's, publish's and simulate's help on --store.
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
	switch {
	case u == "":
		return nil
	case strings.HasPrefix(u, "bolt:"):
		path := strings.TrimPrefix(u, "bolt:")
		if path == "" {
			return cli.Exit("--store bolt:PATH: no PATH", exitUsage)
		}
		if !cmd.IsSet("state") {
			cfg.StateDir = path
			return nil
		}
		cfg.Exclude = append(cfg.Exclude, path)
		cfg.OpenStore = func(_ context.Context, set string) (store.Store, error) {
			sd := filepath.Join(path, set)
			if err := os.MkdirAll(sd, 0o755); err != nil {
				return nil, err
			}
			return bolt.Open(filepath.Join(sd, "state.db"), nil)
		}
		return nil
	case isPostgresURL(u):
		cfg.OpenStore = func(ctx context.Context, set string) (store.Store, error) { return openPostgres(ctx, u, set) }
		return nil
	default:
		return cli.Exit(fmt.Sprintf("--store %q: want bolt:PATH or postgres://...", redactURL(u)), exitUsage)
	}
}

func isPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// redactURL hides the passwords of a store URL for messages: the
// userinfo's, the password= and sslpassword= query parameters' (pgx reads
// both), and those of a key=value connection string. It errs on the side
// of hiding: the userinfo ends at the last '@' (a password may hold '/',
// '?' or '@'), and a query that does not parse is hidden whole.
func redactURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return kvPassword.ReplaceAllString(u, "${1}xxxxx")
	}
	userinfo := ""
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		userinfo, rest = rest[:at+1], rest[at+1:]
		if user, _, hasPW := strings.Cut(userinfo, ":"); hasPW {
			userinfo = user + ":xxxxx@"
		}
	}
	rest, query, hasQuery := strings.Cut(rest, "?")
	out := scheme + "://" + userinfo + rest
	if !hasQuery {
		return out
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return out + "?xxxxx"
	}
	for k := range q {
		if l := strings.ToLower(k); l == "password" || l == "sslpassword" {
			q[k] = []string{"xxxxx"}
		}
	}
	return out + "?" + q.Encode()
}

// kvPassword is a password in a key=value connection string.
var kvPassword = regexp.MustCompile(`(?i)(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)
