package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/progress"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/websub/subscriber"
)

func followFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "follow", Usage: "keep running: subscribe to the Source's change notifications (WebSub) and apply them as they arrive; poll the Change Lists while the hub is unreachable"},
		&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8091", Usage: "with --follow: `HOST:PORT` the notification callback listens on"},
		&cli.StringFlag{Name: "callback-url", Usage: "with --follow: public `URL` of the callback, as the hub reaches it (default http://LISTEN/)"},
		&cli.DurationFlag{Name: "poll-interval", Value: time.Minute, Usage: "with --follow: poll the Change Lists every `D` while the hub is unreachable (and every 10 D anyway)"},
		&cli.DurationFlag{Name: "lease", Value: 24 * time.Hour, Usage: "with --follow: subscription lease to ask the hub for"},
	}
}

// follower keeps a Mirror in step: notifications when the hub delivers,
// Change Lists when it does not.
type follower struct {
	m       *destination.Mirror
	out     io.Writer
	log     *slog.Logger
	catchup chan string
	mu      sync.Mutex
	down    map[string]bool // sets whose hub is unreachable
}

func (f *follower) requestCatchup(why string) {
	select {
	case f.catchup <- why:
	default:
	}
}

func (f *follower) sync(ctx context.Context, why string) {
	rep, err := f.m.Sync(ctx)
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(f.out, "catch-up (%s) failed: %v\n", why, err)
		}
		return
	}
	for _, s := range rep.Sets {
		if s.Fetched+s.Deleted+s.Failed+s.Kept > 0 || s.Gap != "" {
			fmt.Fprintf(f.out, "catch-up (%s): set %s: %s\n", why, s.Set, s.Summary(false))
		}
	}
}

func (f *follower) apply(set string) func(context.Context, subscriber.Notification) error {
	return func(ctx context.Context, n subscriber.Notification) error {
		entries := make([]*rs.Entry, len(n.Entries))
		for i := range n.Entries {
			entries[i] = &n.Entries[i]
		}
		sr, err := f.m.Apply(ctx, set, &n.Head, entries)
		switch {
		case errors.Is(err, destination.ErrNotContiguous):
			fmt.Fprintf(f.out, "notification on %s: %v: catching up from the Change Lists\n", set, err)
			f.requestCatchup("gap in notifications")
			return nil
		case err != nil:
			fmt.Fprintf(f.out, "notification on %s: %v\n", set, err)
			f.requestCatchup("notification failed")
			return err
		}
		if sr.Fetched+sr.Deleted+sr.Failed+sr.Kept > 0 {
			fmt.Fprintf(f.out, "notification on %s (%s after delivery): %s\n", set, time.Since(n.Received).Round(time.Millisecond), sr.Summary(false))
		}
		if sr.Failed > 0 {
			f.requestCatchup("failures")
		}
		return nil
	}
}

func runFollow(ctx context.Context, cmd *cli.Command, source string, opt destination.Options) error {
	out := cmd.Root().Writer
	r := progress.New(cmd.Root().ErrWriter, progress.Quiet)
	defer r.Close()
	opt.Events = r.Handle
	m, err := destination.Open(ctx, source, opt)
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	defer m.Close()
	f := &follower{m: m, out: out, catchup: make(chan string, 1), down: map[string]bool{},
		log: slog.New(slog.NewTextHandler(cmd.Root().ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	f.sync(ctx, "start")

	ln, err := net.Listen("tcp", cmd.String("listen"))
	if err != nil {
		return cli.Exit(fmt.Sprintf("--listen: %v", err), exitUsage)
	}
	cb := cmd.String("callback-url")
	if cb == "" {
		cb = "http://" + ln.Addr().String() + "/"
	}
	if !strings.HasSuffix(cb, "/") {
		cb += "/"
	}
	mux := http.NewServeMux()
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	var subs []*subscriber.Subscriber
	var wg sync.WaitGroup
	runCtx, stopRuns := context.WithCancel(ctx)
	defer stopRuns()
	client := syncClient(2, time.Minute)
	for _, s := range m.Sets() {
		if s.ChangeNotification == "" || s.ChangeNotificationHub == "" {
			fmt.Fprintf(out, "set %s offers no change notifications: polling its Change Lists every %s\n", s.Name, cmd.Duration("poll-interval"))
			f.mu.Lock()
			f.down[s.Name] = true
			f.mu.Unlock()
			continue
		}
		name := s.Name
		sub, err := subscriber.New(subscriber.Config{
			Hub: s.ChangeNotificationHub, Topic: s.ChangeNotification, CallbackURL: cb + name,
			Secret: []byte(subscriber.NewSecret()), LeaseSeconds: int(cmd.Duration("lease").Seconds()),
			Client: client, OnNotification: f.apply(name), Logger: f.log,
			OnHubState: func(up bool, err error) {
				f.mu.Lock()
				f.down[name] = !up
				f.mu.Unlock()
				if up {
					fmt.Fprintf(out, "subscribed to %s at %s\n", s.ChangeNotification, s.ChangeNotificationHub)
					// Changes between the catch-up and the subscription.
					f.requestCatchup("subscribed")
				} else {
					fmt.Fprintf(out, "hub %s unreachable (%v): polling the Change Lists\n", s.ChangeNotificationHub, err)
				}
			},
		})
		if err != nil {
			return cli.Exit(err.Error(), exitUsage)
		}
		defer sub.Close()
		mux.Handle("/"+name, sub.Handler())
		subs = append(subs, sub)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sub.Run(runCtx); err != nil && runCtx.Err() == nil {
				fmt.Fprintf(out, "subscription to %s ended: %v\n", s.ChangeNotification, err)
			}
		}()
	}
	fmt.Fprintf(out, "following %s into %s (callback %s); stop with Ctrl-C\n", source, opt.Dest, cb)

	poll := cmd.Duration("poll-interval")
	t := time.NewTicker(poll)
	defer t.Stop()
	ticks := 0
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case why := <-f.catchup:
			f.sync(ctx, why)
		case <-t.C:
			ticks++
			f.mu.Lock()
			anyDown := false
			for _, d := range f.down {
				anyDown = anyDown || d
			}
			f.mu.Unlock()
			if anyDown || ticks%10 == 0 {
				f.sync(ctx, "poll")
			}
		}
	}
	// Leave politely: end the subscriptions at the hub.
	uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, sub := range subs {
		if err := sub.Unsubscribe(uctx); err != nil {
			fmt.Fprintf(out, "unsubscribe: %v\n", err)
		}
	}
	stopRuns()
	wg.Wait()
	fmt.Fprintln(out, "stopped")
	return nil
}
