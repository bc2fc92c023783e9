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
		&cli.BoolFlag{Name: "follow", Usage: "keep running, applying change notifications"},
		&cli.StringFlag{Name: "listen", Usage: "the callback listens on `HOST:PORT`", DefaultText: "ephemeral; 127.0.0.1:8091 with --callback-url"},
		&cli.StringFlag{Name: "callback-url", Usage: "public `URL` of the callback"},
		&cli.DurationFlag{Name: "poll-interval", Value: time.Minute, Usage: "poll the Change Lists every `D`"},
		&cli.DurationFlag{Name: "lease", Value: 24 * time.Hour, Usage: "subscription lease `D` to ask for"},
	}
}

// followListen is the address the callback listens on: --listen, or
// without it an ephemeral loopback port (the hub is told the real one:
// the callback URL is made from the listener's address), so that several
// followers run side by side; with --callback-url (a proxy in front, set
// up for a known port) the fixed 127.0.0.1:8091.
func followListen(listen, callbackURL string) (addr, cb string) {
	switch {
	case listen != "":
		return listen, callbackURL
	case callbackURL != "":
		return "127.0.0.1:8091", callbackURL
	}
	return "127.0.0.1:0", ""
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
	listen, cb := followListen(cmd.String("listen"), cmd.String("callback-url"))
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return cli.Exit(fmt.Sprintf("--listen: %v", err), exitUsage)
	}
	shown := cb // as printed and on the status page
	if cb == "" {
		cb = "http://" + ln.Addr().String() + "/"
		shown = cb
		if !cmd.IsSet("listen") {
			shown += ", an ephemeral port: give --listen HOST:PORT for a fixed one"
		}
	}
	if rec != nil {
		rec.SetCallback(shown)
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
	dest := opt.Dest
	if opt.Target != nil {
		dest = opt.Target.Location()
	}
	say("following %s into %s (callback %s); stop with Ctrl-C", source, dest, shown)
	// The hub's requests carry credentials only when given for its origin.
	hubClient, err := auth.Client(syncClient(2, time.Minute))
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	// Without a callback set up for the hub (--callback-url, or --listen
	// on an address the hub reaches), a Source's live push (WebSocket)
	// replaces its hub: it needs no callback, so it works behind NAT.
	push := cmd.String("callback-url") == "" && !cmd.IsSet("listen")
	err = follow.Run(ctx, m, follow.Options{Mux: mux, CallbackBase: cb, Client: hubClient, Push: push,
		PollInterval: cmd.Duration("poll-interval"), Lease: cmd.Duration("lease"), Say: say,
		Logger: commandLogger(cmd, redactWriter{auth, cmd.Root().ErrWriter}, slog.LevelWarn)})
	if err != nil {
		return cli.Exit(auth.Redact(err.Error()), exitUsage)
	}
	say("stopped")
	return nil
}
