package httpclient

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/resourcesync-go/resourcesync/internal/redact"
)

// EnvBearerToken names the environment variable that holds a bearer token
// (--bearer-token-file wins over it).
const EnvBearerToken = "RESOURCESYNC_BEARER_TOKEN"

// Options are the client settings the commands share.
type Options struct {
	// Headers are extra request headers, "Name: value" each, sent to the
	// Source origins.
	Headers []string
	// BearerTokenFile holds a token sent as "Authorization: Bearer" to the
	// Source origins (trailing newline trimmed); BearerToken is one given
	// directly (from EnvBearerToken), used when there is no file.
	BearerTokenFile, BearerToken string
	// NetrcFile is the .netrc to read ("": none; NetrcPath() is the usual
	// one). A missing file is no error.
	NetrcFile string
	// CACertFile is a PEM bundle of CA certificates trusted besides the
	// system's.
	CACertFile string
	// Insecure skips the verification of server certificates.
	Insecure bool
	// Bandwidth, if not nil, paces every response body (--bwlimit); one
	// Bandwidth may be shared by several Options to bound their total.
	Bandwidth *Bandwidth
}

// Auth holds the credentials and TLS settings of one command and makes
// its clients.
type Auth struct {
	mu       sync.RWMutex
	sources  map[string]*url.Userinfo // Source origin -> its userinfo (nil: none)
	headers  http.Header
	bearer   string
	netrc    *Netrc
	secrets  []string
	redactor func(string) string // made from secrets on first use
	tls      *tls.Config         // nil: the transport's own
	insecure bool
	bw       *Bandwidth // nil: no --bwlimit
	// bearerFrom and netrcFile say where the credentials came from, for
	// Given.
	bearerFrom, netrcFile string
}

// New reads the files o names and checks the headers.
func New(o Options) (*Auth, error) {
	a := &Auth{sources: map[string]*url.Userinfo{}, headers: http.Header{}, insecure: o.Insecure, bw: o.Bandwidth}
	for _, h := range o.Headers {
		name, value, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || !validHeaderName(name) {
			// Not quoted back: without its colon the text may be all value
			// (--header 'X-Api-Key abc123').
			return nil, fmt.Errorf("--header #%d: want 'Name: value' (a name of letters, digits and -, then a colon)", len(a.headers)+1)
		}
		value = strings.TrimSpace(value)
		if strings.ContainsAny(value, "\r\n\x00") {
			return nil, fmt.Errorf("--header %s: the value holds a line break", name)
		}
		a.headers.Add(textproto.CanonicalMIMEHeaderKey(name), value)
		a.secrets = append(a.secrets, value)
	}
	switch {
	case o.BearerTokenFile != "":
		b, err := os.ReadFile(o.BearerTokenFile)
		if err != nil {
			return nil, fmt.Errorf("--bearer-token-file: %w", err)
		}
		// As the servers read their token files: a BOM (Notepad) and the
		// spaces around the token are not part of it.
		a.bearer = strings.TrimSpace(strings.TrimPrefix(string(b), "\uFEFF"))
		if a.bearer == "" || strings.ContainsAny(a.bearer, "\r\n\x00") {
			return nil, fmt.Errorf("--bearer-token-file %s: want one line holding the token", o.BearerTokenFile)
		}
		a.bearerFrom = "--bearer-token-file"
	case o.BearerToken != "":
		a.bearer = strings.TrimSpace(o.BearerToken)
		if strings.ContainsAny(a.bearer, "\r\n\x00") {
			return nil, fmt.Errorf("$%s: want one line holding the token", EnvBearerToken)
		}
		a.bearerFrom = "$" + EnvBearerToken
	}
	if a.bearer != "" {
		a.secrets = append(a.secrets, a.bearer)
	}
	n, err := ReadNetrc(o.NetrcFile)
	if err != nil {
		return nil, fmt.Errorf("netrc: %w", err)
	}
	a.netrc = n
	a.netrcFile = o.NetrcFile
	if n != nil {
		for _, e := range n.machines {
			a.secrets = append(a.secrets, e.Password)
		}
		if n.def != nil {
			a.secrets = append(a.secrets, n.def.Password)
		}
	}
	if o.CACertFile != "" || o.Insecure {
		cfg := &tls.Config{InsecureSkipVerify: o.Insecure}
		if o.CACertFile != "" {
			pem, err := os.ReadFile(o.CACertFile)
			if err != nil {
				return nil, fmt.Errorf("--ca-cert: %w", err)
			}
			pool, err := x509.SystemCertPool()
			if err != nil || pool == nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--ca-cert %s: no PEM certificate in the file", o.CACertFile)
			}
			cfg.RootCAs = pool
		}
		a.tls = cfg
	}
	return a, nil
}

// Insecure reports whether certificates go unverified (the caller warns).
func (a *Auth) Insecure() bool { return a.insecure }

// Source registers the origin of raw, a URL the user typed, as a Source
// origin (headers, bearer token, .netrc default and raw's userinfo go to
// it) and returns raw without its userinfo: the credentials then travel
// in the transport, never in a URL that could be printed. raw is returned
// unchanged when it is not an absolute http(s) URL.
func (a *Auth) Source(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// A URL that does not parse is printed whole in the error that
		// follows: a password written unencoded ("u:p w@", "u:p/w@") must
		// still be redacted there.
		if i := strings.Index(raw, "://"); i > 0 {
			if ui, _, ok := cutLast(raw[i+3:], "@"); ok {
				a.addSecret(ui)
				if _, p, ok := strings.Cut(ui, ":"); ok {
					a.addSecret(p)
				}
			}
		}
		return raw
	}
	o := Origin(u)
	if u.User != nil {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.sources[o] = u.User
		if p, ok := u.User.Password(); ok {
			a.secrets = append(a.secrets, p)
		} else {
			// user@ alone: the user name is the credential (a token).
			a.secrets = append(a.secrets, u.User.Username())
		}
		a.redactor = nil
		u.User = nil
		return u.String()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.sources[o]; !ok {
		a.sources[o] = nil
	}
	return raw
}

// addSecret adds s to the secrets Redact removes.
func (a *Auth) addSecret(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.secrets = append(a.secrets, s)
	a.redactor = nil
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// Redact returns s with the secrets removed: redact.String's patterns and
// every credential a holds, verbatim.
func (a *Auth) Redact(s string) string {
	if a == nil {
		return redact.String(s)
	}
	a.mu.Lock()
	if a.redactor == nil {
		a.redactor = redact.Secrets(a.secrets...)
	}
	r := a.redactor
	a.mu.Unlock()
	return r(s)
}

// Client returns a copy of c whose transport carries the TLS settings and
// attaches the credentials. c's transport must be an *http.Transport (or
// nil: the default one) when TLS settings are given.
func (a *Auth) Client(c *http.Client) (*http.Client, error) {
	cc := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if a.tls != nil {
		tr, ok := base.(*http.Transport)
		if !ok {
			return nil, errors.New("--ca-cert/--insecure: this client's transport cannot take TLS settings")
		}
		tr = tr.Clone()
		cfg := a.tls.Clone()
		if tr.TLSClientConfig != nil {
			cfg = tr.TLSClientConfig.Clone()
			cfg.InsecureSkipVerify = a.tls.InsecureSkipVerify
			if a.tls.RootCAs != nil {
				cfg.RootCAs = a.tls.RootCAs
			}
		}
		tr.TLSClientConfig = cfg
		base = tr
	}
	cc.Transport = &transport{a: a, base: base}
	return &cc, nil
}

// transport attaches the credentials of each request's origin.
type transport struct {
	a    *Auth
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	h := t.a.headersFor(req.URL)
	// net/http sets Referer on a redirect to the URL left, query included:
	// a token in a Source URL's query (?access_token=) must not follow a
	// redirect to another origin that way.
	ref := req.Header.Get("Referer")
	crossRef := false
	if ref != "" {
		ru, err := url.Parse(ref)
		crossRef = err != nil || Origin(ru) != Origin(req.URL)
	}
	if len(h) > 0 || crossRef {
		req = req.Clone(req.Context()) // RoundTrip must not modify the caller's request
		for k, v := range h {
			req.Header[k] = v
		}
		if crossRef {
			req.Header.Del("Referer")
		}
	}
	resp, err := t.base.RoundTrip(req)
	switch {
	case err == nil:
		// --bwlimit: every body the commands read comes through here.
		resp.Body = t.a.bw.Reader(req.Context(), resp.Body)
	case IsCertError(err):
		err = &CertError{Err: err}
	case notTLS(err):
		err = &NotTLSError{Err: err}
	}
	return resp, err
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// wrapped transport.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Given says which credentials a request to raw carries, as a user
// would name them - "basic, from the URL", "bearer token, from
// --bearer-token-file", "header X-Api-Key, from --header" - or "" for
// none: a 401 then means "give some", not "the ones given are wrong".
func (a *Auth) Given(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	o := Origin(u)
	a.mu.RLock()
	ui, isSource := a.sources[o]
	a.mu.RUnlock()
	var given []string
	if isSource {
		for _, k := range slices.Sorted(maps.Keys(a.headers)) {
			given = append(given, "header "+k+", from --header")
		}
		if a.bearer != "" && a.headers.Get("Authorization") == "" {
			given = append(given, "bearer token, from "+a.bearerFrom)
		}
	}
	// Basic, unless a bearer token or an Authorization header replaces
	// it (as in headersFor).
	if !isSource || (a.bearer == "" && a.headers.Get("Authorization") == "") {
		e, ok := a.netrc.Lookup(u.Hostname())
		d, dok := a.netrc.Default()
		switch {
		case isSource && ui != nil:
			given = append(given, "basic, from the URL")
		case ok && (e.Login != "" || e.Password != ""):
			given = append(given, "basic, from "+a.netrcFile)
		case isSource && dok && (d.Login != "" || d.Password != ""):
			given = append(given, "basic, from the default entry of "+a.netrcFile)
		}
	}
	return strings.Join(given, "; ")
}

// headersFor returns the headers to set on a request to u: none unless
// credentials were given for its origin.
func (a *Auth) headersFor(u *url.URL) http.Header {
	o := Origin(u)
	a.mu.RLock()
	ui, isSource := a.sources[o]
	a.mu.RUnlock()
	h := http.Header{}
	switch e, ok := a.netrc.Lookup(u.Hostname()); {
	case isSource && ui != nil:
		p, _ := ui.Password()
		h.Set("Authorization", basic(ui.Username(), p))
	case ok && (e.Login != "" || e.Password != ""):
		h.Set("Authorization", basic(e.Login, e.Password))
	case isSource:
		if d, ok := a.netrc.Default(); ok && (d.Login != "" || d.Password != "") {
			h.Set("Authorization", basic(d.Login, d.Password))
		}
	}
	if !isSource {
		return h
	}
	if a.bearer != "" {
		h.Set("Authorization", "Bearer "+a.bearer)
	}
	for k, v := range a.headers {
		h[k] = v
	}
	return h
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// Origin returns u's origin as scheme://host:port, lower case, with the
// scheme's default port written out.
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// CertError is a failure to verify the server's certificate; its message
// names the flags that fix it. A retry cannot.
type CertError struct{ Err error }

func (e *CertError) Error() string {
	return e.Err.Error() + " (the server's certificate is not trusted: add its CA with --ca-cert FILE, or skip verification with --insecure)"
}
func (e *CertError) Unwrap() error   { return e.Err }
func (e *CertError) Permanent() bool { return true }

// NotTLSError is an https:// request to a server that does not speak TLS
// there (a plain HTTP server, another protocol); like a CertError, a retry
// cannot fix it.
type NotTLSError struct{ Err error }

func (e *NotTLSError) Error() string {
	return e.Err.Error() + " (the server does not speak TLS at this address: use an http:// URL, or the port of its HTTPS server)"
}
func (e *NotTLSError) Unwrap() error   { return e.Err }
func (e *NotTLSError) Permanent() bool { return true }

// notTLS reports whether err is a TLS handshake answered by something
// other than TLS. net/http reports a plain HTTP answer with an error of
// its own, a string only.
func notTLS(err error) bool {
	var rh tls.RecordHeaderError
	return errors.As(err, &rh) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// IsCertError reports whether err is a failure to verify a server's
// certificate (unknown authority, wrong host name, expired, ...).
func IsCertError(err error) bool {
	var (
		ua  x509.UnknownAuthorityError
		he  x509.HostnameError
		ci  x509.CertificateInvalidError
		sr  x509.SystemRootsError
		cve *tls.CertificateVerificationError
	)
	return errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) || errors.As(err, &sr) || errors.As(err, &cve)
}

// validHeaderName reports whether name is an HTTP token.
func validHeaderName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || bytes.IndexByte([]byte(`"(),/:;<=>?@[\]{}`), c) >= 0 {
			return false
		}
	}
	return true
}
