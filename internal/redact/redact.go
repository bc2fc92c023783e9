package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Mask replaces every secret removed.
const Mask = "REDACTED"

// secretParams are query parameter names (compared in lower case) whose
// values are credentials: OAuth and API-key conventions, signed-URL
// signatures (S3, Azure SAS, GCS), passwords.
var secretParams = map[string]bool{
	"token": true, "access_token": true, "id_token": true, "refresh_token": true,
	"auth": true, "auth_token": true, "authtoken": true, "authorization": true,
	"api_key": true, "apikey": true, "api-key": true, "key": true,
	"sig": true, "signature": true, "x-amz-signature": true, "x-amz-security-token": true,
	"x-amz-credential": true, "x-goog-signature": true, "x-goog-credential": true,
	"password": true, "passwd": true, "pass": true, "pwd": true,
	"secret": true, "client_secret": true, "session": true, "sessionid": true,
}

// SecretParam reports whether a query parameter named name carries a
// credential.
func SecretParam(name string) bool { return secretParams[strings.ToLower(name)] }

var (
	// userinfoRE matches the userinfo of an absolute URL: scheme://user:pass@
	// (the password up to the last @ before the host ends: a password may
	// hold @ when written unencoded).
	userinfoRE = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)([^\s/?#@:"'<>]*):([^\s/?#"'<>]*)@`)
	// queryRE matches a parameter of a query string: ?name=value or &name=value
	// (also &amp; as written in XML and HTML).
	queryRE = regexp.MustCompile(`([?&;]|&amp;)([A-Za-z0-9_.\-]+)=([^\s&#;"'<>]*)`)
	// authRE matches an Authorization header line or credentials of the
	// common schemes written out.
	authRE   = regexp.MustCompile(`(?i)\b(authorization|proxy-authorization)(\s*[:=]\s*)("?)[^\r\n"]*`)
	bearerRE = regexp.MustCompile(`(?i)\b(bearer)(\s+)[A-Za-z0-9\-._~+/]+=*`)
	basicRE  = regexp.MustCompile(`(?i)\b(basic)(\s+)([A-Za-z0-9+/]{4,}={0,2})`)
	// awsKeyRE matches an AWS credential assigned as the shared files, the
	// environment and JSON documents (credential_process, STS answers)
	// write them: aws_secret_access_key = …, AWS_SESSION_TOKEN=…,
	// "SecretAccessKey":"…".
	awsKeyRE = regexp.MustCompile(`(?i)\b(aws_secret_access_key|aws_session_token|aws_security_token|secretaccesskey|sessiontoken)("?\s*[:=]\s*"?)[^\s"',;&]+`)
	// awsKeyIDRE matches an AWS access key ID (AKIA… long-term, ASIA… of a
	// session): twenty characters, upper-case letters and digits.
	awsKeyIDRE = regexp.MustCompile(`\b(AKIA|ASIA)[A-Z0-9]{16}\b`)
)

// String returns s with every secret it can recognize replaced by Mask:
// userinfo passwords of URLs, Authorization header values, "Bearer X" /
// "Basic X" credentials and secret query parameter values.
func String(s string) string {
	if s == "" {
		return s
	}
	if strings.Contains(s, "@") {
		s = userinfoRE.ReplaceAllString(s, "${1}${2}:"+Mask+"@")
	}
	if strings.Contains(s, "=") {
		s = queryRE.ReplaceAllStringFunc(s, func(m string) string {
			sub := queryRE.FindStringSubmatch(m)
			if !SecretParam(sub[2]) || sub[3] == "" || sub[3] == Mask {
				return m
			}
			return sub[1] + sub[2] + "=" + Mask
		})
	}
	// Cheap pre-checks (no lower-casing copy of every event's text).
	if strings.Contains(s, "AKIA") || strings.Contains(s, "ASIA") {
		s = awsKeyIDRE.ReplaceAllString(s, Mask)
	}
	if containsFold(s, "secret") || containsFold(s, "token") {
		s = awsKeyRE.ReplaceAllString(s, "${1}${2}"+Mask)
	}
	if containsFold(s, "authorization") {
		s = authRE.ReplaceAllString(s, "${1}${2}${3}"+Mask)
	}
	if containsFold(s, "bearer") {
		s = bearerRE.ReplaceAllString(s, "${1}${2}"+Mask)
	}
	if containsFold(s, "basic") {
		// Only what decodes to user:password: "basic authentication" is prose.
		s = basicRE.ReplaceAllStringFunc(s, func(m string) string {
			sub := basicRE.FindStringSubmatch(m)
			if d, err := base64.StdEncoding.DecodeString(sub[3]); err != nil || !bytes.ContainsRune(d, ':') {
				return m
			}
			return sub[1] + sub[2] + Mask
		})
	}
	return s
}

// Secrets returns a function that applies String and then replaces each
// of the given literal secrets (values the program knows it holds: a
// token read from a file, a header's value, a password) wherever they
// occur, also percent-encoded. Secrets shorter than 4 bytes are
// replaced only by String's patterns (a one-letter password would blank
// out every "a" of the output).
func Secrets(secrets ...string) func(string) string {
	var keep []string
	for _, s := range secrets {
		if len(s) >= 4 {
			keep = append(keep, s)
			// As the secret reads once escaped: in a URL, in a Go %q
			// (url.Error, parse errors), in JSON (a --json line redacted
			// after encoding).
			for _, e := range []string{queryEscape(s), quoted(s), jsonEscape(s)} {
				if e != s {
					keep = append(keep, e)
				}
			}
		}
	}
	// Longest first, and before String's patterns: a secret that holds
	// another, or text a pattern masks (…&token=…), is masked whole, not
	// left in part.
	sort.Slice(keep, func(i, j int) bool { return len(keep[i]) > len(keep[j]) })
	return func(s string) string {
		// The mask can make a secret again with what stands before it
		// ("\u0000" + REDACTED holds "000R"): masked again, a few times,
		// then the whole text.
		for range 4 {
			found := false
			for _, k := range keep {
				if strings.Contains(s, k) {
					s, found = strings.ReplaceAll(s, k, Mask), true
				}
			}
			if !found {
				return String(s)
			}
		}
		for _, k := range keep {
			if strings.Contains(s, k) {
				return Mask
			}
		}
		return String(s)
	}
}

// quoted is s as strconv.Quote writes it, without the quotes.
func quoted(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// jsonEscape is s as encoding/json writes it (HTML-safe, the default),
// without the quotes.
func jsonEscape(s string) string {
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(s)
	q := strings.TrimSuffix(b.String(), "\n")
	return q[1 : len(q)-1]
}

// queryEscape percent-encodes as URLs carry it (url.QueryEscape without the
// import: keep the package free of net/url's parsing).
func queryEscape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// containsFold reports whether s holds sub (ASCII lower case) in any case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i]|0x20 == sub[0] && strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// Error returns err with its message redacted (String), for errors a
// library package returns: a program that logs them leaks nothing,
// whatever URL (user:password@, ?token=) went into them. The result
// unwraps to err, so errors.Is and errors.As see what they saw before;
// a value errors.As finds is the original, its fields (a URL among them)
// as they were. err itself when its message holds nothing to redact (or
// is nil).
func Error(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*redacted); ok {
		return err
	}
	msg := err.Error()
	if r := String(msg); r != msg {
		return &redacted{msg: r, err: err}
	}
	return err
}

// redacted is an error whose message was redacted.
type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }
