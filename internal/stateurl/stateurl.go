package stateurl

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// Kind is the backend a URL names.
type Kind int

// Kinds of store URL.
const (
	Bolt     Kind = iota + 1 // bolt:PATH, or a plain PATH
	Postgres                 // postgres://... or postgresql://...
)

// URL is a parsed store URL.
type URL struct {
	Kind Kind
	Path string // Bolt: the path after "bolt:" (or the plain path)
	Raw  string // as given (Postgres: what pgx parses)
}

// Errors of Parse.
var (
	// ErrNoPath: "bolt:" without a path.
	ErrNoPath = errors.New("no path after bolt:")
	// ErrScheme: neither bolt:PATH nor postgres://... (nor, with plain, a
	// path).
	ErrScheme = errors.New("unknown store URL")
)

// Parse parses s. With plain, a string that is neither bolt: nor
// postgres:// is a bolt PATH (the graph store's --store DIR); without,
// it is ErrScheme. An empty s is ErrScheme: callers apply their default
// before.
func Parse(s string, plain bool) (URL, error) {
	switch {
	case strings.HasPrefix(s, "bolt:"):
		p := strings.TrimPrefix(s, "bolt:")
		if p == "" {
			return URL{}, ErrNoPath
		}
		return URL{Kind: Bolt, Path: p, Raw: s}, nil
	case IsPostgres(s):
		return URL{Kind: Postgres, Raw: s}, nil
	case plain && s != "":
		return URL{Kind: Bolt, Path: s, Raw: s}, nil
	}
	return URL{}, ErrScheme
}

// IsPostgres reports whether s is a PostgreSQL URL.
func IsPostgres(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Redact hides the passwords of a store URL for messages: the
// userinfo's, the password= and sslpassword= query parameters' (pgx reads
// both), and those of a key=value connection string. It errs on the side
// of hiding: the userinfo ends at the last '@' (a password may hold '/',
// '?' or '@'), and a query that does not parse is hidden whole.
func Redact(u string) string {
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
