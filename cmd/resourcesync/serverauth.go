package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/authn"
)

// envAuthToken holds a token the servers accept, instead of (or besides)
// --auth-token-file.
const envAuthToken = "RESOURCESYNC_AUTH_TOKEN"

// authHelp is the common part of the servers' CREDENTIALS (help topic
// authentication); each command says what its credentials protect.
const authHelp = `
   --auth-token-file FILE: bearer tokens, one a line ('#' comments; letters,
   digits and -._~+/), sent as "Authorization: Bearer TOKEN"; or one token in
   $RESOURCESYNC_AUTH_TOKEN (both: either is accepted).%s
   Without credentials (or with wrong ones) a request gets 401 with a
   WWW-Authenticate challenge; after 10 failures from one address (an IPv6
   /64) the next ones from it get 429 until its budget refills (one a
   second), and after 100 failed passwords from all together (20 a second
   then) the next passwords too; a token is checked whatever other
   addresses did, and password checks take turns by address. A credential
   once accepted is remembered: its client is never slowed. The files are
   read again when they change (checked at most every 2 seconds): replace
   them to add or revoke a credential, no restart needed. A file then
   missing, empty (comments only) or malformed revokes every credential it
   held, logged as an ERROR: nobody gets in with them until it is fixed
   (fail closed; the token of $RESOURCESYNC_AUTH_TOKEN stays); at start it
   is an error. Use HTTPS (a reverse proxy) on any network: these
   credentials travel in clear over HTTP.`

// authBasicHelp is the HTTP basic part of authHelp.
const authBasicHelp = `
   --basic-auth-file FILE: HTTP basic, an Apache htpasswd file of bcrypt
   hashes (htpasswd -B -c FILE USER); any other hash format is refused at
   start, naming the line.`

// serveAuthHelp is serve's CREDENTIALS (help topic authentication).
var serveAuthHelp = `

CREDENTIALS (--auth-token-file, --basic-auth-file)
   With either, every request needs a credential: the documents, the
   resources, the status page (it names resources), BASE/.resourcesync/metrics,
   the change notification topics and the embedded hub's subscription
   requests (a subscriber is sent the URIs of the changes), and its
   publishes unless --hub-token is given (then they need that token
   instead). The admin pages (--hub-admin-token) have their own token and
   are not behind them; deliveries to the subscribers' callbacks are
   outbound. serve has no /healthz: a health check sends a credential (or
   only connects).` + fmt.Sprintf(authHelp, authBasicHelp)

// hubAuthHelp is hub's CREDENTIALS (help topic authentication).
var hubAuthHelp = `

CREDENTIALS (--auth-token-file, --basic-auth-file)
   With either, subscription requests (subscribe and unsubscribe) need a
   credential: a subscriber is sent the URIs the notifications carry. So do
   /metrics and the publishes, unless --publish-token is given (then
   publishes need that token instead). /healthz stays open; /admin/ has its
   own token (--admin-token). Deliveries to the subscribers' callbacks and
   the hub's fetches of topics are outbound and unaffected.` + fmt.Sprintf(authHelp, authBasicHelp)

// sdshareServeAuthHelp is sdshare serve's CREDENTIALS (help topic authentication).
var sdshareServeAuthHelp = `

CREDENTIALS (--auth-token-file, --basic-auth-file)
   With either, every request needs a credential: the feeds, the data, the
   HTML pages, B metrics and, with --resourcesync, its documents and
   resources. B healthz stays open (it names nothing). The pushes (--push)
   and publishes (--hub) are outbound and unaffected.` + fmt.Sprintf(authHelp, authBasicHelp)

// sdshareReceiveAuthHelp is sdshare receive's CREDENTIALS (help topic authentication).
var sdshareReceiveAuthHelp = `

CREDENTIALS (--auth-token-file)
   With it, every push (POST) needs "Authorization: Bearer TOKEN"; without
   it the push gets 401 and nothing is applied (a sender such as sdshare
   serve --push keeps the change and tries again at its longest interval).
   GET and HEAD (this description, /ping, /status) stay open.` + fmt.Sprintf(authHelp, "")

// serverAuthFlags are the flags of a server that can require credentials;
// basic adds HTTP basic.
func serverAuthFlags(basic bool) []cli.Flag {
	f := []cli.Flag{
		&cli.StringFlag{Name: "auth-token-file", Usage: "require tokens: `FILE` or $" + envAuthToken, TakesFile: true, Sources: cli.EnvVars("RESOURCESYNC_AUTH_TOKEN_FILE")},
	}
	if basic {
		f = append(f, &cli.StringFlag{Name: "basic-auth-file", Usage: "require HTTP basic, htpasswd `FILE` of bcrypt hashes", TakesFile: true, Sources: cli.EnvVars("RESOURCESYNC_BASIC_AUTH_FILE")})
	}
	return f
}

// serverAuth returns the credential check the flags of cmd ask for, nil
// for none (a command without the flags, e.g. simulate, has none).
func serverAuth(cmd *cli.Command, realm string) (*authn.Authenticator, error) {
	if !hasFlag(cmd, "auth-token-file") {
		return nil, nil
	}
	cfg := authn.Config{TokenFile: cmd.String("auth-token-file"), Realm: realm,
		Logger: commandLogger(cmd, cmd.Root().ErrWriter, slog.LevelInfo)}
	if hasFlag(cmd, "basic-auth-file") {
		cfg.BasicFile = cmd.String("basic-auth-file")
	}
	if t := strings.TrimSpace(os.Getenv(envAuthToken)); t != "" {
		cfg.Tokens = []string{t}
	}
	a, err := authn.New(cfg)
	if err != nil {
		return nil, cli.Exit("credentials: "+err.Error(), exitUsage)
	}
	if a != nil {
		fmt.Fprintln(cmd.Root().ErrWriter, a.Describe())
	}
	return a, nil
}

func hasFlag(cmd *cli.Command, name string) bool {
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

// basePath is the path of a base URL ("/" at least).
func basePath(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Path == "" {
		return "/"
	}
	return u.Path
}

// embeddedHubOpen is what serve lets through without its credentials:
// with pub (--hub-token) the embedded hub's endpoint, which checks
// subscription requests itself with the same credentials
// (hub.Config.SubscriberAuth) and publishes by the token; with admin the
// admin pages (their own token). A second Authorization header would
// clash with theirs. Nothing else under .resourcesync/hub/ is let through
// (a set may be named "hub").
func embeddedHubOpen(base string, pub, admin bool) func(*http.Request) bool {
	mount := basePath(base)
	return func(r *http.Request) bool {
		rel, ok := strings.CutPrefix(r.URL.Path, mount)
		return ok && (pub && rel == ".resourcesync/hub" ||
			admin && (rel == ".resourcesync/hub/admin" || strings.HasPrefix(rel, ".resourcesync/hub/admin/")))
	}
}
