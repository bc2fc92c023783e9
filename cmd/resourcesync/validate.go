package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/validate"
)

// validateHelp is the help topic validation.
const validateHelp = `Checks ResourceSync documents against the rules of the specification
(ResourceSync 1.1, Archives 0.9.1, Change Notification 1.0.1) and reports
every problem with its rule ID (RS-...), a severity and a position.

TARGETS
   A TARGET starting with http:// or https:// is the URL of a Source: its
   base URL (when that is not a ResourceSync document - an HTML home page,
   say - its Link: <...>; rel="resourcesync" headers, then
   <base>/.well-known/resourcesync, the host's /.well-known/resourcesync and
   the Sitemap lines of the host's robots.txt are tried), its
   /.well-known/resourcesync, a
   Source Description, a Capability List or any capability document. The
   whole tree it links is walked - Capability Lists, indexes, archives - and
   every document is validated, as well as the links between documents.
   Any other TARGET is a local file holding one document.
   With --base-url URL, a TARGET that is a directory is a Source tree as
   'publish --out' writes it, validated offline before it is uploaded: the
   walk starts at URL as above, and every URL under URL is read from the
   file at its path relative to URL in the directory (nothing is fetched;
   a document linked outside URL is reported with rule RS-FETCH).

OUTPUT
   By default one line per problem:
      FILE:LINE:COL: error RS-CHL-3: message
   then a summary line per target. With --json, one JSON object per problem
   per line ({"doc","line","col","rule","severity","message"}) and a final
   {"summary":{...}} object.

   Errors break a MUST of the specifications; warnings flag known errata of
   the specifications (e.g. a missing rel="up" as in the spec's walkthrough
   examples), features of pre-1.0 drafts (RS-LEG-*) and recommendations.

EXIT STATUS
   0  no document has an error (warnings allowed)
   1  some document has an error (a document that is not well-formed XML
      is reported with rule RS-XML)
   2  usage error, or a file or start URL that cannot be read (reported on
      stderr as "TARGET: not validated: ...", with no summary line)`

// newHTTPClient returns the client URL targets are fetched with; tests
// replace it with one that cannot leave the loopback network.
var newHTTPClient = func() *http.Client { return &http.Client{} }

// validateDescription is the description --help shows; the long text is in the
// help topics (topics.go).
const validateDescription = `Checks ResourceSync documents against the specifications (ResourceSync 1.1,
Archives 0.9.1, Change Notification 1.0.1) and reports every problem with its
rule ID (RS-...), severity and position. A TARGET is a Source's URL (the whole
tree it links is walked), a local file, or with --base-url a directory that
publish --out wrote, checked offline.

Examples:
  resourcesync validate https://data.example.org/
  resourcesync validate --json resourcelist.xml
  resourcesync validate --base-url https://data.example.org/ ./out

See also: resourcesync help validation, authentication.

Exit status: 0 no document has an error (warnings allowed); 1 some document
has an error; 2 usage error, or a target that cannot be read.`

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:        "validate",
		Usage:       "validate ResourceSync documents or a whole Source",
		UsageText:   "resourcesync validate [options] TARGET...",
		Description: validateDescription,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print problems and the summary as JSON lines"},
			&cli.StringFlag{Name: "base-url", Usage: "check a directory TARGET offline as served at `URL`"},
			&cli.IntFlag{Name: "max-docs", Value: 1000, Usage: "fetch at most `N` documents per URL target"},
			&cli.DurationFlag{Name: "timeout", Value: 60 * time.Second, Usage: "time limit `D` for each HTTP request"},
		}, clientFlags()...),
		Action: runValidate,
	}
}

// summary is the JSON summary and the counts of one target.
type summary struct {
	Target    string `json:"target,omitempty"`
	Targets   int    `json:"targets,omitempty"`
	Documents int    `json:"documents"`
	Entries   int64  `json:"entries"`
	Errors    int    `json:"errors"`
	Warnings  int    `json:"warnings"`
	Failed    int    `json:"failed,omitempty"` // targets that could not be read
}

func runValidate(ctx context.Context, cmd *cli.Command) error {
	targets := cmd.Args().Slice()
	if len(targets) == 0 {
		return usageError(cmd, "validate: no TARGET given")
	}
	if cmd.Int("max-docs") < 1 || cmd.Duration("timeout") <= 0 {
		return cli.Exit("validate: --max-docs and --timeout must be positive", exitUsage)
	}
	asJSON := cmd.Bool("json")
	stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
	enc := json.NewEncoder(stdout)
	opts := validate.Options{MaxDocs: cmd.Int("max-docs"), Timeout: cmd.Duration("timeout")}
	auth, err := clientAuth(cmd)
	if err != nil {
		return err
	}
	client, err := auth.Client(newHTTPClient())
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}

	total := summary{Targets: len(targets)}
	for _, target := range targets {
		if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
			target = auth.Source(target) // the password travels in the client, never printed
		}
		s := summary{Target: auth.Redact(target)}
		report := func(p validate.Problem) {
			p.Doc, p.Message = auth.Redact(p.Doc), auth.Redact(p.Message)
			if p.Severity == rs.SevError {
				s.Errors++
			} else {
				s.Warnings++
			}
			if asJSON {
				enc.Encode(p)
			} else {
				fmt.Fprintln(stdout, p)
			}
		}
		var err error
		if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
			err = walkTarget(ctx, client, target, opts, report, &s)
		} else if fi, serr := os.Stat(target); serr == nil && fi.IsDir() {
			err = dirTarget(ctx, cmd.String("base-url"), target, opts, report, &s)
		} else {
			err = fileTarget(target, opts, report, &s)
		}
		if err != nil {
			// Not validated: no count line (it would say "0 errors").
			fmt.Fprintf(stderr, "resourcesync validate: %s: not validated: %s%s\n", s.Target, auth.Redact(err.Error()), credentialsHint(auth, err, target))
			total.Failed++
			continue
		}
		if !asJSON {
			fmt.Fprintf(stdout, "%s: %d documents, %d entries, %d errors, %d warnings\n", s.Target, s.Documents, s.Entries, s.Errors, s.Warnings)
		}
		total.Documents += s.Documents
		total.Entries += s.Entries
		total.Errors += s.Errors
		total.Warnings += s.Warnings
	}
	if asJSON {
		enc.Encode(map[string]summary{"summary": total})
	}
	switch {
	case total.Failed > 0:
		return cli.Exit("", exitUsage)
	case total.Errors > 0:
		return cli.Exit("", exitProblems)
	}
	return nil
}

func walkTarget(ctx context.Context, client *http.Client, target string, opts validate.Options, report func(validate.Problem), s *summary) error {
	ws, err := validate.Walk(ctx, client, target, opts, report)
	if ws != nil {
		s.Documents, s.Entries = ws.Documents, ws.Entries
	}
	return err
}

// dirTarget walks a publish output tree offline.
func dirTarget(ctx context.Context, base, dir string, opts validate.Options, report func(validate.Problem), s *summary) error {
	if base == "" {
		return fmt.Errorf("is a directory (to validate a 'publish --out' tree offline, give the URL it will be served at with --base-url URL)")
	}
	ws, err := validate.WalkDir(ctx, base, dir, opts, report)
	if ws != nil {
		s.Documents, s.Entries = ws.Documents, ws.Entries
	}
	return err
}

func fileTarget(path string, opts validate.Options, report func(validate.Problem), s *summary) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := validate.Document(path, f, opts, report)
	s.Documents = 1
	if info != nil {
		s.Entries = int64(info.Entries)
	}
	var se *rs.SyntaxError
	if err != nil && !errors.As(err, &se) {
		return err // a read error, not a problem of the document
	}
	return nil
}
