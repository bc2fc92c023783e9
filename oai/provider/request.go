package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/oai"
)

// request is a parsed, validated OAI-PMH request.
type request struct {
	verb       string
	identifier string
	prefix     string
	from       time.Time
	fromGran   oai.Granularity
	until      time.Time // as given; inclusive to its granule
	untilGran  oai.Granularity
	set        string
	token      string // as given
	cursor     string // from the token
	offset     int    // items sent before this page (from the token)
	raw        map[string]string
}

// the arguments each verb takes: required (true) or optional (false);
// resumptionToken is exclusive.
var verbArgs = map[string]map[string]bool{
	oai.Identify:            {},
	oai.ListMetadataFormats: {"identifier": false},
	oai.ListSets:            {"resumptionToken": false},
	oai.GetRecord:           {"identifier": true, "metadataPrefix": true},
	oai.ListIdentifiers:     {"metadataPrefix": true, "from": false, "until": false, "set": false, "resumptionToken": false},
	oai.ListRecords:         {"metadataPrefix": true, "from": false, "until": false, "set": false, "resumptionToken": false},
}

// echo returns the request element's attributes, in a fixed order.
func (r *request) echo() [][2]string {
	out := [][2]string{{"verb", r.verb}}
	for _, k := range []string{"identifier", "metadataPrefix", "from", "until", "set", "resumptionToken"} {
		if v, ok := r.raw[k]; ok {
			if k == "metadataPrefix" && !validPrefix(v) {
				continue // would not be a valid metadataPrefixType
			}
			if _, err := url.Parse(v); k == "identifier" && err != nil {
				continue // would not be a valid anyURI (a bad %-escape)
			}
			out = append(out, [2]string{k, v})
		}
	}
	return out
}

var (
	prefixRE = regexp.MustCompile(`^[A-Za-z0-9\-_.!~*'()]+$`)
	setRE    = regexp.MustCompile(`^[A-Za-z0-9\-_.!~*'()]+(:[A-Za-z0-9\-_.!~*'()]+)*$`)
)

func validPrefix(s string) bool { return prefixRE.MatchString(s) }

// ValidSetSpec reports whether s is a valid setSpec.
func ValidSetSpec(s string) bool { return setRE.MatchString(s) }

// parseRequest parses a query string (GET) or form body (POST) and checks
// the arguments against the verb: badVerb for a missing, repeated or
// unknown verb, badArgument for a missing, repeated, unknown or malformed
// argument, badResumptionToken for a token that is not one of ours or has
// expired (checked by the caller with the key: see parseRequestKey).
func parseRequest(raw string) (*request, *oai.Error) {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return nil, oaiErr(oai.BadArgument, "malformed query")
	}
	verbs := vals["verb"]
	if len(verbs) != 1 {
		if len(verbs) == 0 {
			return nil, oaiErr(oai.BadVerb, "no verb")
		}
		return nil, oaiErr(oai.BadVerb, "repeated verb")
	}
	allowed, ok := verbArgs[verbs[0]]
	if !ok {
		return nil, oaiErr(oai.BadVerb, "unknown verb")
	}
	r := &request{verb: verbs[0], raw: map[string]string{}}
	for k, v := range vals {
		if k == "verb" {
			continue
		}
		if _, ok := allowed[k]; !ok {
			return nil, oaiErr(oai.BadArgument, "%s does not take the argument %q", r.verb, k)
		}
		if len(v) != 1 {
			return nil, oaiErr(oai.BadArgument, "repeated argument %s", k)
		}
		r.raw[k] = v[0]
	}
	if tok, ok := r.raw["resumptionToken"]; ok {
		if len(r.raw) != 1 {
			return nil, oaiErr(oai.BadArgument, "resumptionToken is exclusive")
		}
		if tok == "" {
			return nil, oaiErr(oai.BadResumptionToken, "empty resumption token")
		}
		r.token = tok
		return r, nil
	}
	for k, req := range allowed {
		if _, ok := r.raw[k]; req && !ok {
			return nil, oaiErr(oai.BadArgument, "%s needs the argument %s", r.verb, k)
		}
	}
	r.identifier = r.raw["identifier"]
	if v, ok := r.raw["identifier"]; ok && v == "" {
		return nil, oaiErr(oai.BadArgument, "empty identifier")
	}
	r.prefix = r.raw["metadataPrefix"]
	if v, ok := r.raw["metadataPrefix"]; ok && v == "" {
		return nil, oaiErr(oai.BadArgument, "empty metadataPrefix")
	}
	if v, ok := r.raw["set"]; ok {
		if !ValidSetSpec(v) {
			return nil, oaiErr(oai.BadArgument, "malformed set")
		}
		r.set = v
	}
	if err := r.dates(); err != nil {
		return nil, err
	}
	return r, nil
}

// dates parses from and until: either granularity, both the same.
func (r *request) dates() *oai.Error {
	var err error
	if v, ok := r.raw["from"]; ok {
		if r.from, r.fromGran, err = parseDate(v); err != nil {
			return oaiErr(oai.BadArgument, "malformed from")
		}
	}
	if v, ok := r.raw["until"]; ok {
		if r.until, r.untilGran, err = parseDate(v); err != nil {
			return oaiErr(oai.BadArgument, "malformed until")
		}
	}
	_, hasFrom := r.raw["from"]
	_, hasUntil := r.raw["until"]
	if hasFrom && hasUntil {
		if r.fromGran != r.untilGran {
			return oaiErr(oai.BadArgument, "from and until have different granularities")
		}
		if r.from.After(r.until) {
			return oaiErr(oai.BadArgument, "from is later than until")
		}
	}
	return nil
}

// parseDate is oai.ParseDatestamp, strictly (no surrounding space).
func parseDate(s string) (time.Time, oai.Granularity, error) {
	t, g, err := oai.ParseDatestamp(s)
	if err == nil && strings.TrimSpace(s) != s {
		err = strconv.ErrSyntax
	}
	return t, g, err
}

// token is the state of a listing, carried by the harvester.
type token struct {
	verb      string
	prefix    string
	from      time.Time
	fromGran  oai.Granularity
	until     time.Time
	untilGran oai.Granularity
	set       string
	cursor    string
	offset    int
	expires   time.Time
}

func fmtDate(t time.Time, g oai.Granularity) string {
	if t.IsZero() {
		return ""
	}
	return g.Format(t)
}

// encode: base64url of the fields joined by NUL, a dot, and the first 16
// bytes of their HMAC-SHA256.
func (t token) encode(key []byte) string {
	v := "1" // token version
	if t.verb == oai.ListRecords {
		v += "R"
	} else {
		v += "I"
	}
	body := strings.Join([]string{v, t.prefix, fmtDate(t.from, t.fromGran), fmtDate(t.until, t.untilGran), t.set,
		strconv.Itoa(t.offset), strconv.FormatInt(t.expires.Unix(), 10), t.cursor}, "\x00")
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString([]byte(body)) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// decodeToken checks a token's MAC, verb and expiry and returns its fields.
func decodeToken(s string, key []byte, verb string, now time.Time) (token, *oai.Error) {
	bad := func(msg string) (token, *oai.Error) { return token{}, oaiErr(oai.BadResumptionToken, "%s", msg) }
	b64, mac64, ok := strings.Cut(s, ".")
	if !ok {
		return bad("not a resumption token of this repository")
	}
	body, err1 := base64.RawURLEncoding.DecodeString(b64)
	mac, err2 := base64.RawURLEncoding.DecodeString(mac64)
	if err1 != nil || err2 != nil {
		return bad("not a resumption token of this repository")
	}
	m := hmac.New(sha256.New, key)
	m.Write(body)
	if !hmac.Equal(mac, m.Sum(nil)[:16]) {
		return bad("not a resumption token of this repository (or damaged)")
	}
	f := strings.SplitN(string(body), "\x00", 8)
	if len(f) != 8 || len(f[0]) != 2 || f[0][0] != '1' {
		return bad("unknown token version")
	}
	t := token{verb: oai.ListIdentifiers, prefix: f[1], set: f[4], cursor: f[7]}
	if f[0][1] == 'R' {
		t.verb = oai.ListRecords
	}
	if t.verb != verb {
		return bad("the token belongs to " + t.verb)
	}
	var err error
	if f[2] != "" {
		if t.from, t.fromGran, err = oai.ParseDatestamp(f[2]); err != nil {
			return bad("damaged token")
		}
	}
	if f[3] != "" {
		if t.until, t.untilGran, err = oai.ParseDatestamp(f[3]); err != nil {
			return bad("damaged token")
		}
	}
	if t.offset, err = strconv.Atoi(f[5]); err != nil || t.offset < 0 {
		return bad("damaged token")
	}
	exp, err := strconv.ParseInt(f[6], 10, 64)
	if err != nil {
		return bad("damaged token")
	}
	t.expires = time.Unix(exp, 0).UTC()
	if now.After(t.expires) {
		return bad("the token expired at " + oai.Second.Format(t.expires) + "; start the list again")
	}
	return t, nil
}

// resume fills a list request from its token.
func (r *request) resume(key []byte, now time.Time) *oai.Error {
	t, err := decodeToken(r.token, key, r.verb, now)
	if err != nil {
		return err
	}
	r.prefix, r.from, r.fromGran, r.until, r.untilGran, r.set, r.cursor, r.offset =
		t.prefix, t.from, t.fromGran, t.until, t.untilGran, t.set, t.cursor, t.offset
	return nil
}
