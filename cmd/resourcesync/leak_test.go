package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoSecretInOutput runs failing syncs (--json and plain, with
// --report), a failing validate and a failing sdshare sync with a secret
// in SOURCE's userinfo, in a bearer token file, in a --header and in a
// query parameter of the URLs, against a server that echoes the
// credentials it receives into its error bodies; no output holds any
// secret.
func TestNoSecretInOutput(t *testing.T) {
	syncLoopbackOnly(t)
	loopbackOnly(t)
	const (
		userPw = "USECRET-pw"
		bearer = "BSECRET-tok"
		header = "HSECRET-hdr"
		query  = "QSECRET-q"
	)
	secrets := []string{userPw, bearer, header, query}
	var base string
	xml := func(body string) string {
		return `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">` +
			strings.ReplaceAll(body, "BASE", base) + "</urlset>\n"
	}
	docs := map[string]string{
		"/.well-known/resourcesync": `<rs:md capability="description"/><url><loc>BASE/cl.xml?token=` + query + `</loc><rs:md capability="capabilitylist"/></url>`,
		"/cl.xml":                   `<rs:ln rel="up" href="BASE/.well-known/resourcesync"/><rs:md capability="capabilitylist"/><url><loc>BASE/rl.xml</loc><rs:md capability="resourcelist"/></url>`,
		"/rl.xml": `<rs:ln rel="up" href="BASE/cl.xml?token=` + query + `"/><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>` +
			`<url><loc>BASE/gone.txt?access_token=` + query + `</loc></url>` +
			`<url><loc>BASE/busy.txt</loc></url><url><loc>BASE/lost.txt</loc></url><url><loc>BASE/ok.txt</loc></url>`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echo := "you sent " + r.Header.Get("Authorization") + " " + r.Header.Get("X-Api-Key") + " " + r.URL.RawQuery
		if r.Header.Get("Authorization") != "Bearer "+bearer || r.Header.Get("X-Api-Key") != header {
			http.Error(w, echo, http.StatusUnauthorized)
			return
		}
		switch p := r.URL.Path; {
		case docs[p] != "":
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprint(w, xml(docs[p]))
		case p == "/ok.txt":
			fmt.Fprint(w, "fine")
		case p == "/busy.txt":
			http.Error(w, echo, http.StatusServiceUnavailable)
		default:
			http.Error(w, echo, http.StatusNotFound)
		}
	}))
	defer srv.Close()
	base = srv.URL
	withUser := strings.Replace(base, "http://", "http://alice:"+userPw+"@", 1)

	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte(bearer+"\n"), 0o600)
	report := filepath.Join(dir, "report.html")
	creds := []string{"--netrc-file", filepath.Join(dir, "absent"), "--bearer-token-file", tokenFile, "--header", "X-Api-Key: " + header}

	var all strings.Builder
	run := func(wantCode int, args ...string) {
		t.Helper()
		code, out, errOut := runCLI(t, args...)
		if code != wantCode {
			t.Errorf("%s: exit %d, want %d\n%s\n%s", args[0], code, wantCode, out, errOut)
		}
		fmt.Fprintf(&all, "%s\n%s\n", out, errOut) // not args: they hold the secrets
	}
	dest := filepath.Join(t.TempDir(), "mirror")
	sync := append([]string{"sync", "--progress", "lines", "--report", report}, creds...)
	run(exitProblems, append(sync, "--json", withUser+"/", dest)...)
	if b, err := os.ReadFile(report); err != nil {
		t.Error(err)
	} else {
		all.Write(b)
	}
	run(exitProblems, append(sync, withUser+"/", dest)...)
	if b, _ := os.ReadFile(report); true {
		all.Write(b)
	}
	run(exitUsage, append(sync, "--json", withUser+"/missing/resourcelist.xml?token="+query, dest)...)
	run(exitUsage, append(sync, withUser+"/missing/resourcelist.xml?token="+query, dest)...)
	// Wrong credentials (no header): 401s that echo the bearer token.
	run(exitUsage, "sync", "--progress", "lines", "--bearer-token-file", tokenFile, withUser+"/", dest)
	if b, _ := os.ReadFile(filepath.Join(dest, "ok.txt")); string(b) != "fine" {
		t.Errorf("ok.txt = %q: the credentials did not work", b)
	}

	validate := append([]string{"validate"}, creds...)
	run(exitUsage, append(validate, withUser+"/.well-known/resourcesync", withUser+"/missing.xml?key="+query)...)
	run(exitUsage, append(validate, "--json", withUser+"/.well-known/resourcesync", withUser+"/missing.xml?key="+query)...)

	store := t.TempDir()
	sd := append([]string{"sdshare", "sync", "--store", store}, creds...)
	run(exitUsage, append(sd, withUser+"/overview.xml?token="+query)...)
	run(exitUsage, append(sd, "--json", withUser+"/overview.xml?token="+query)...)

	// Without the header: a 401, and which credentials were refused (the
	// URL's user and password, which this server does not take).
	code, _, errOut := runCLI(t, "sdshare", "sync", "--store", store, withUser+"/overview.xml")
	if code != exitUsage || !strings.Contains(errOut, "the server refused the credentials given (basic, from the URL)") {
		t.Errorf("sdshare sync, 401: exit %d\n%s", code, errOut)
	}
	all.WriteString(errOut)

	out := all.String()
	for _, s := range secrets {
		if strings.Contains(out, s) {
			i := strings.Index(out, s)
			t.Errorf("secret %q printed: ...%s...", s, out[max(0, i-200):min(len(out), i+100)])
		}
	}
	if !strings.Contains(out, "REDACTED") || !strings.Contains(out, "lost.txt") || !strings.Contains(out, "busy.txt") || !strings.Contains(out, "\"retry\"") {
		t.Errorf("the failures are not reported:\n%s", out)
	}
}
