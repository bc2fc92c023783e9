// Package httpclient makes the HTTP client of every client command (sync,
// validate, sdshare sync, sync --follow's hub requests) from one Options:
// extra headers, a bearer token, HTTP basic from .netrc or from the
// userinfo of the URL the user typed, extra CA certificates and
// --insecure.
//
// Credentials belong to an origin (scheme, host, port) and are attached
// per request by a RoundTripper, so every hop of a redirect is judged on
// its own: a request to another origin - a redirect, a rel="duplicate"
// location, a resource on a CDN allowed with --allow-host, a WebSub hub -
// gets none, unless .netrc names its host. Headers, the bearer token, URL
// userinfo and .netrc's default entry belong to the Source origins (the
// URLs the user typed, registered with Auth.Source); a .netrc machine
// entry belongs to that host (any scheme and port, as in curl). Go's
// http.Client copies the headers of the first request to same-domain
// redirects; nothing is set on that request, so nothing is copied. The
// Referer net/http sets on a redirect is dropped when it names another
// origin (it would carry a token of the Source URL's query there).
//
// Certificate errors are wrapped in CertError, which says which flag
// fixes it and is never retried (internal/retry sees Permanent); an
// https:// URL of a server without TLS there, in NotTLSError, likewise.
package httpclient
