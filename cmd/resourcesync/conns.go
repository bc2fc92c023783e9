package main

import (
	"fmt"
	"net/url"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/httpserver"
	"github.com/urfave/cli/v3"
)

// maxConnsFlag caps a server's open connections (internal/httpserver).
func maxConnsFlag() cli.Flag {
	return &cli.IntFlag{Name: "max-conns", Usage: "at most `N` connections", DefaultText: "from ulimit -n"}
}

// serverOptions returns o with the --max-conns of cmd (0 when cmd has no
// such flag: the default).
//
// A server with a public URL flag (--base-url, the hub's --url) that
// listens on loopback also answers only to a Host naming this machine or
// that URL's host: a DNS-rebinding page cannot read or drive it
// (httpserver.LoopbackHosts).
func serverOptions(cmd *cli.Command, o httpserver.Options) httpserver.Options {
	for _, f := range cmd.Flags {
		switch name := f.Names()[0]; name {
		case "max-conns":
			o.MaxConns = int(cmd.Int("max-conns"))
		case "base-url", "url":
			o.PublicHosts = []string{}
			if u, err := url.Parse(cmd.String(name)); err == nil && u.Host != "" {
				o.PublicHosts = append(o.PublicHosts, u.Host)
			}
		}
	}
	return o
}

// connsHelp is the CONNECTIONS section of the help topic connections;
// body says how long a request body may take in all (a line of its own).
func connsHelp(body string) string {
	return fmt.Sprintf(`

CONNECTIONS
   A connection idle between requests is closed after %s; request
   headers must arrive within %s; a request body may pause %s at most
   between bytes.
   %s
   A response takes as long as the client keeps reading: it fails when the
   client takes nothing for %s. At most --max-conns connections are open
   (default: half of what the descriptor limit, ulimit -n, leaves after 64,
   between 16 and 4096: 480 for 1024). At the cap a new client takes the
   place of the connection idle the longest (between requests, or still
   sending its request); when every connection is busy with a request it
   waits until one ends.`,
		dur(httpserver.DefaultIdleTimeout), dur(httpserver.DefaultReadHeaderTimeout), dur(httpserver.DefaultReadStall), body, dur(httpserver.DefaultWriteStall))
}

// bodyWithin says how long a body may take in all.
func bodyWithin(d time.Duration) string {
	return "A request body must be complete within " + dur(d) + "."
}

// bodyAtRate says how long a body of up to the flag's bytes may take.
func bodyAtRate(flag string) string {
	return fmt.Sprintf("A request body must be complete within a minute plus the time %s\n   bytes take at %d KiB/s.", flag, httpserver.MinBodyRate>>10)
}

// dur writes d for a person: "1 minute", "30 s".
func dur(d time.Duration) string {
	switch {
	case d == time.Minute:
		return "1 minute"
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return d.String()
}

// hostGuardHelp ends the CONNECTIONS section of a server whose public URL
// is flag (serverOptions' DNS-rebinding guard).
func hostGuardHelp(flag string) string {
	return "\n   On a loopback address it answers only a Host that names this machine\n" +
		"   (127.0.0.1, [::1], localhost) or the host of " + flag + "; any other gets\n" +
		"   421, so a web page whose name is rebound to 127.0.0.1 cannot read or\n" +
		"   drive it (behind a reverse proxy: set " + flag + " to the public URL)."
}
