package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/cmd/resourcesync/internal/progress"
	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/follow"
	"github.com/resourcesync-go/resourcesync/destination/status"
	"github.com/resourcesync-go/resourcesync/internal/httpclient"
	"github.com/resourcesync-go/resourcesync/internal/httpserver"
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

func runFollow(ctx context.Context, cmd *cli.Command, source string, opt destination.Options, rec *status.Recorder, auth *httpclient.Auth) error {
	out := cmd.Root().Writer
	r := progress.New(cmd.Root().ErrWriter, progress.Quiet)
	defer r.Close()
	opt.Events = func(e destination.Event) {
		e = redactEvent(auth, e)
		r.Handle(e)
		if rec != nil {
			rec.Handle(e)
		}
	}
	m, err := destination.Open(ctx, source, opt)
	if err != nil {
		if rerr := writeReport(cmd, rec); rerr != nil {
			fmt.Fprintln(cmd.Root().ErrWriter, rerr)
		}
		return cli.Exit(auth.Redact(err.Error())+credentialsHint(auth, err, source), exitUsage)
	}
	defer m.Close()
	if rec != nil {
		rec.SetBase(m.Base())
	}
	if cmd.String("report") != "" {
		// Rewritten every minute while following, and at exit.
		stopReports := make(chan struct{})
		reportsDone := make(chan struct{})
		go func() {
			defer close(reportsDone)
			t := time.NewTicker(time.Minute)
			defer t.Stop()
			for {
				select {
				case <-stopReports:
					return
				case <-t.C:
					if err := writeReport(cmd, rec); err != nil {
						fmt.Fprintln(cmd.Root().ErrWriter, err)
					}
				}
			}
		}()
		defer func() {
			close(stopReports)
			<-reportsDone
			if err := writeReport(cmd, rec); err != nil {
				fmt.Fprintln(cmd.Root().ErrWriter, err)
			}
		}()
	}
	ln, err := net.Listen("tcp", cmd.String("listen"))
	if err != nil {
		return cli.Exit(fmt.Sprintf("--listen: %v", err), exitUsage)
	}
	cb := cmd.String("callback-url")
	if cb == "" {
		cb = "http://" + ln.Addr().String() + "/"
	}
	mux := http.NewServeMux()
	srv := httpserver.New(mux, httpserver.Options{})
	go srv.Serve(ln)
	defer srv.Close()
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintln(out, auth.Redact(fmt.Sprintf(format, args...)))
		mu.Unlock()
	}
	say("following %s into %s (callback %s); stop with Ctrl-C", source, opt.Dest, cb)
	// The hub's requests carry credentials only when given for its origin.
	hubClient, err := auth.Client(syncClient(2, time.Minute))
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	err = follow.Run(ctx, m, follow.Options{Mux: mux, CallbackBase: cb, Client: hubClient,
		PollInterval: cmd.Duration("poll-interval"), Lease: cmd.Duration("lease"), Say: say,
		Logger: commandLogger(cmd, redactWriter{auth, cmd.Root().ErrWriter}, slog.LevelWarn)})
	if err != nil {
		return cli.Exit(auth.Redact(err.Error()), exitUsage)
	}
	say("stopped")
	return nil
}
