package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/internal/httpclient"
	"github.com/resourcesync-go/resourcesync/internal/redact"
)

// clientHelp is the clients' part of the help topic authentication (sync,
// validate, sdshare sync): one text for the one set of flags.
const clientHelp = `

PROTECTED SOURCES AND TLS
   Credentials go only to the origin (scheme, host and port) they belong
   to, on every request to it, redirects included; never to another origin
   (a redirect, a rel="duplicate" location, a host allowed with
   --allow-host, a WebSub hub), unless .netrc names that host:
   - user:password@ in the URL given on the command line: HTTP basic to
     that URL's origin (the password is removed from every URL printed);
   - --header 'Name: value' and --bearer-token-file FILE (or $` + httpclient.EnvBearerToken + `):
     sent to the origins of the URLs given on the command line;
   - ~/.netrc (or $NETRC, or --netrc-file FILE): HTTP basic for each
     "machine" it names (any port); its "default" entry only for the
     URLs given on the command line.
   When several apply, --header wins over the bearer token, which wins over
   basic; URL userinfo wins over .netrc.
   --ca-cert FILE adds the PEM certificates in FILE to the system's trusted
   roots; --insecure skips certificate verification (warned on every run).
   A certificate that does not verify fails at once (never retried) and
   the message names these flags; so does an https:// URL of a server that
   does not speak TLS there. Secrets (passwords, tokens, header
   values, token-like query parameters such as token= or api_key=) are
   replaced by REDACTED in every message, --json event, status page and
   report.`

// clientFlags are the flags of every command that fetches from a Source.
func clientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "header", Usage: "send `'Name: value'` to the Source (repeatable)"},
		&cli.StringFlag{Name: "bearer-token-file", Usage: "token from `FILE` (or $" + httpclient.EnvBearerToken + ")"},
		&cli.StringFlag{Name: "netrc-file", Usage: "HTTP basic credentials from `FILE` (default ~/.netrc)"},
		&cli.StringFlag{Name: "ca-cert", Usage: "also trust the CA certificates in the PEM `FILE`"},
		&cli.BoolFlag{Name: "insecure", Usage: "do not verify server certificates (warned)"},
	}
}

// clientAuth builds the credentials and TLS settings from clientFlags and
// warns about --insecure; an error is a usage error.
func clientAuth(cmd *cli.Command) (*httpclient.Auth, error) {
	netrc := cmd.String("netrc-file")
	if netrc == "" && os.Getenv("NETRC") == "" {
		// ~/.netrc was not asked for: one this tool cannot read must not
		// stop the mirroring of a public Source.
		netrc = httpclient.NetrcPath()
		if _, err := httpclient.ReadNetrc(netrc); err != nil {
			fmt.Fprintf(cmd.Root().ErrWriter, "warning: %v: ignored\n", err)
			netrc = ""
		}
	} else if netrc == "" {
		netrc = httpclient.NetrcPath()
	}
	a, err := httpclient.New(httpclient.Options{
		Headers:         cmd.StringSlice("header"),
		BearerTokenFile: cmd.String("bearer-token-file"),
		BearerToken:     os.Getenv(httpclient.EnvBearerToken),
		NetrcFile:       netrc,
		CACertFile:      cmd.String("ca-cert"),
		Insecure:        cmd.Bool("insecure"),
		Bandwidth:       bandwidth(cmd), // --bwlimit where the command has it
	})
	if err != nil {
		return nil, cli.Exit(err.Error(), exitUsage)
	}
	if a.Insecure() {
		fmt.Fprintln(cmd.Root().ErrWriter, "warning: --insecure: server certificates are not verified; anyone on the path can read and alter what is fetched")
	}
	return a, nil
}

// sourceArg takes a SOURCE typed without its scheme as https://, as curl
// and wget do (the rule is httpclient.AssumeHTTPS's), and says so on
// stderr; a name that exists here as a file or directory stays as typed.
func sourceArg(cmd *cli.Command, arg string) string {
	u, ok := httpclient.AssumeHTTPS(arg)
	if !ok {
		return arg
	}
	if _, err := os.Lstat(arg); err == nil {
		return arg
	}
	fmt.Fprintf(cmd.Root().ErrWriter, "taking %s as %s\n", redact.String(arg), redact.String(u))
	return u
}

// redactEvent removes secrets from the texts of a sync event before it
// reaches any output (progress, --json, status page, report).
func redactEvent(a *httpclient.Auth, e destination.Event) destination.Event {
	e.Set, e.URI, e.Message, e.Error = a.Redact(e.Set), a.Redact(e.URI), a.Redact(e.Message), a.Redact(e.Error)
	if e.Checkpoint != nil {
		cp := *e.Checkpoint // the engine's own: not changed in place
		cp.Set, cp.CapabilityList = a.Redact(cp.Set), a.Redact(cp.CapabilityList)
		e.Checkpoint = &cp
	}
	return e
}

// redactReport removes secrets from a sync report before it is printed.
func redactReport(a *httpclient.Auth, rep *destination.Report) {
	if rep == nil {
		return
	}
	rep.Source, rep.Base = a.Redact(rep.Source), a.Redact(rep.Base)
	for _, s := range rep.Sets {
		s.Set, s.Gap = a.Redact(s.Set), a.Redact(s.Gap)
		s.Checkpoint.Set, s.Checkpoint.CapabilityList = a.Redact(s.Checkpoint.Set), a.Redact(s.Checkpoint.CapabilityList)
		for i := range s.Failures {
			s.Failures[i].URI, s.Failures[i].Error = a.Redact(s.Failures[i].URI), a.Redact(s.Failures[i].Error)
		}
	}
}

// redactWriter redacts each Write, for loggers that write one record per
// call (log/slog).
type redactWriter struct {
	a *httpclient.Auth
	w io.Writer
}

func (r redactWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, r.a.Redact(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// credentialsHint returns, for an error that is (or holds) a 401 or 403
// answer, a sentence that says which credentials the server refused, or
// that none were given and how to give them; "" for another error. target
// is the URL asked for when the error does not name one.
func credentialsHint(a *httpclient.Auth, err error, target string) string {
	var se interface{ StatusCode() int }
	if err == nil || !errors.As(err, &se) || (se.StatusCode() != http.StatusUnauthorized && se.StatusCode() != http.StatusForbidden) {
		return ""
	}
	var st *httperr.StatusError
	if errors.As(err, &st) && st.URL != "" {
		target = st.URL
	}
	if given := a.Given(target); given != "" {
		return "\n(the server refused the credentials given (" + given + "): check them; see --help for the other ways to give credentials)"
	}
	return "\n(no credentials given; give them with --header 'Name: value', --bearer-token-file FILE (or $" + httpclient.EnvBearerToken +
		"), a .netrc entry (--netrc-file FILE, default ~/.netrc) or user:password@ in the URL)"
}
