package location

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/resourcesync-go/resourcesync/internal/redact"
)

// Redact hides the passwords of a location for messages: the userinfo's,
// the password= and sslpassword= query parameters' (pgx reads both) and
// those internal/redact counts as credentials (a presigned URL's), and
// those of a key=value connection string. It errs on the side of hiding:
// the userinfo ends at the last '@' (a password may hold '/', '?' or
// '@'), and a query that does not parse is hidden whole.
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
		if l := strings.ToLower(k); l == "password" || l == "sslpassword" || redact.SecretParam(k) {
			q[k] = []string{"xxxxx"}
		}
	}
	return out + "?" + q.Encode()
}

// kvPassword is a password in a key=value connection string.
var kvPassword = regexp.MustCompile(`(?i)(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)
