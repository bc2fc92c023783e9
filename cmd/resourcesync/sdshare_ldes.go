package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/destination/discover"
	"github.com/resourcesync-go/resourcesync/destination/feedsync"
	"github.com/resourcesync-go/resourcesync/internal/origin"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/ldesgraph"
)

// ldesGetter is the Getter an LDES is read with by sdshare sync: the
// mirror's document Getter (retries, size limit, stall and rate limits),
// asking for Turtle, held to the stream's origin and --allow-host.
func ldesGetter(cmd *cli.Command, c *http.Client, stream string) (*discover.Getter, error) {
	pol, err := origin.New(stream, cmd.StringSlice("allow-host"))
	if err != nil {
		return nil, err
	}
	return &discover.Getter{Client: c, Accept: feedsync.AcceptLDES, Origin: pol, CheckURLs: true, UserAgent: "resourcesync-sdshare",
		StallTimeout: cmd.Duration("timeout"), MinRate: cmd.Float("min-rate"), MinRateWindow: cmd.Duration("min-rate-window")}, nil
}

// isLDES tells whether the document at u is an LDES (discover.FeedKind):
// sdshare sync then keeps its members in the store (sdshare/ldesgraph)
// instead of reading an SDShare overview.
func isLDES(ctx context.Context, g *discover.Getter, u string) bool {
	r, err := g.Get(ctx, u)
	if err != nil {
		return false
	}
	defer r.Close()
	head := make([]byte, discover.FeedHead)
	n, _ := io.ReadFull(r, head)
	return discover.FeedKind(head[:n]) == discover.FeedLDES
}

// runSDShareLDES brings store up to date with the LDES at stream, once or,
// with --follow, every --poll-interval; the position is kept in stateDir.
func runSDShareLDES(ctx context.Context, cmd *cli.Command, g *discover.Getter, store graphstore.Store, stateDir, stream string, stdout, stderr io.Writer) error {
	get := func(ctx context.Context, u string) (feedsync.Fetched, error) {
		r, err := g.Get(ctx, u)
		if err != nil {
			return feedsync.Fetched{}, err
		}
		return feedsync.Fetched{ReadCloser: r, URL: r.URL, Header: r.Header}, nil
	}
	once := func() error {
		pos, err := ldesgraph.LoadPosition(stateDir, stream)
		if err != nil {
			return err
		}
		rep, err := ldesgraph.Apply(ctx, store, get, stream, pos, feedsync.Options{Warn: func(m string) {
			fmt.Fprintln(stderr, "sdshare sync: warning:", sdshareClean(m))
		}})
		if err != nil {
			return err
		}
		if err := ldesgraph.SavePosition(stateDir, stream, rep.Position); err != nil {
			return err
		}
		if !cmd.Bool("quiet") {
			fmt.Fprintf(stderr, "sdshare sync %s: LDES: %d graphs replaced, %d dropped, %d skipped, until %s\n",
				sdshareClean(stream), rep.Replaced, rep.Dropped, rep.Skipped, formatT(rep.Position.Until))
		}
		return nil
	}
	for {
		err := once()
		if err != nil {
			fmt.Fprintln(stderr, "sdshare sync:", sdshareClean(err.Error()))
		}
		if !cmd.Bool("follow") {
			if err != nil {
				return cli.Exit("", exitProblems)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil
			}
			return cli.Exit("", exitProblems)
		case <-time.After(cmd.Duration("poll-interval")):
		}
	}
}
