// Package redact removes secrets from text meant for people and logs:
// the password of a URL's userinfo, the value of an Authorization header
// (and of "Bearer"/"Basic" credentials), and the values of query
// parameters whose names say they carry a credential (token, access_token,
// api_key, key, sig, signature, password, ...), and AWS credentials: access
// key IDs, and secret keys and session tokens as the shared files, the
// environment and JSON write them.
//
// It is the one policy every client command applies to what it prints
// (errors, --json events and summaries, status pages and reports, logs):
// the credentials themselves are attached per request by
// internal/httpclient and never stored in URLs that reach output, so this
// is what catches a secret the user typed into a URL.
package redact
