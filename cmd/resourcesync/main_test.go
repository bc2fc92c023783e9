package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func examples(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("RESOURCESYNC_CONFORMANCE")
	if dir == "" {
		dir = filepath.Join("..", "..", "testdata", "conformance")
	}
	ex := filepath.Join(dir, "examples")
	if _, err := os.Stat(filepath.Join(ex, "verdicts.tsv")); err != nil {
		t.Fatalf("conformance corpus not found (set RESOURCESYNC_CONFORMANCE): %v", err)
	}
	return ex
}

// loopbackOnly makes URL targets unable to reach anything but 127.0.0.0/8.
func loopbackOnly(t *testing.T) {
	t.Helper()
	old := newHTTPClient
	t.Cleanup(func() { newHTTPClient = old })
	d := &net.Dialer{Timeout: 5 * time.Second}
	newHTTPClient = func() *http.Client {
		return &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				host, _, _ := net.SplitHostPort(addr)
				if ip := net.ParseIP(host); ip == nil || ip.To4() == nil || !ip.IsLoopback() {
					t.Errorf("refused dial to non-loopback address %s", addr)
					return nil, errors.New("only 127.0.0.0/8 may be dialled in tests")
				}
				return d.DialContext(ctx, network, addr)
			},
		}}
	}
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"resourcesync"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestValidateExitCodes(t *testing.T) {
	ex := examples(t)
	tests := []struct {
		name string
		args []string
		want int
		out  string // substring of stdout
	}{
		{"valid", []string{"validate", filepath.Join(ex, "rs-1.1-ex-14-resourcelist.xml")}, 0, "0 errors, 0 warnings"},
		{"valid with erratum", []string{"validate", filepath.Join(ex, "rs-1.1-ex-01-resourcelist.xml")}, 0, "warning RS-RL-2"},
		{"invalid", []string{"validate", filepath.Join(ex, "negative", "neg-05-changelist-not-chronological.xml")}, 1, ":7:3: error RS-CHL-3:"},
		{"not well-formed", []string{"validate", filepath.Join(ex, "negative", "neg-20-not-wellformed.xml")}, 1, ":6:40: error RS-XML:"},
		{"valid and invalid", []string{"validate", filepath.Join(ex, "rs-1.1-ex-14-resourcelist.xml"), filepath.Join(ex, "negative", "neg-01-resourcelist-missing-at.xml")}, 1, "error RS-RL-1"},
		{"missing file", []string{"validate", filepath.Join(t.TempDir(), "nope.xml")}, 2, ""},
		{"no target", []string{"validate"}, 2, ""},
		{"bad flag", []string{"validate", "--nope", "x.xml"}, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != tc.want {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.want, out, errOut)
			}
			if !strings.Contains(out, tc.out) {
				t.Errorf("stdout lacks %q:\n%s", tc.out, out)
			}
		})
	}
}

func TestValidateJSON(t *testing.T) {
	ex := examples(t)
	code, out, _ := runCLI(t, "validate", "--json",
		filepath.Join(ex, "rs-1.1-ex-27-changelist-patch.xml"),
		filepath.Join(ex, "negative", "neg-18-hash-not-hex.xml"))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	var problems int
	var sum map[string]map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Bytes()
		if sum != nil {
			t.Fatalf("output after the summary: %s", line)
		}
		var obj map[string]any
		if err := json.Unmarshal(line, &obj); err != nil {
			t.Fatalf("line is not JSON: %s: %v", line, err)
		}
		if _, ok := obj["summary"]; ok {
			json.Unmarshal(line, &sum)
			continue
		}
		problems++
		for _, k := range []string{"doc", "rule", "severity", "message"} {
			if _, ok := obj[k]; !ok {
				t.Errorf("problem lacks %q: %s", k, line)
			}
		}
		if obj["rule"] == "RS-URL-5" && (obj["line"] != 6.0 || obj["col"] != 3.0 || obj["severity"] != "error") {
			t.Errorf("neg-18 problem: %s", line)
		}
	}
	if sum == nil {
		t.Fatal("no summary object")
	}
	s := sum["summary"]
	if s["documents"] != 2.0 || s["errors"] != 1.0 || s["warnings"].(float64) < 4 {
		t.Errorf("summary = %v", s)
	}
	if problems != int(s["errors"].(float64)+s["warnings"].(float64)) {
		t.Errorf("%d problems, summary %v", problems, s)
	}
}

func TestValidateURL(t *testing.T) {
	loopbackOnly(t)
	ex := examples(t)
	mux := http.NewServeMux()
	var base string
	mux.HandleFunc("/.well-known/resourcesync", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="description"/>
<url><loc>` + base + `/capabilitylist.xml</loc><rs:md capability="capabilitylist"/></url>
</urlset>`))
	})
	mux.HandleFunc("/capabilitylist.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:ln rel="up" href="` + base + `/.well-known/resourcesync"/>
<rs:md capability="capabilitylist"/>
<url><loc>` + base + `/changelist.xml</loc><rs:md capability="changelist"/></url>
</urlset>`))
	})
	mux.HandleFunc("/changelist.xml", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(ex, "negative", "neg-05-changelist-not-chronological.xml"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	base = srv.URL

	code, out, errOut := runCLI(t, "validate", srv.URL+"/")
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{srv.URL + "/changelist.xml:7:3: error RS-CHL-3", "3 documents", "RS-REL-1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	srv404 := httptest.NewServer(http.NotFoundHandler())
	defer srv404.Close()
	if code, out, _ := runCLI(t, "validate", srv404.URL+"/"); code != 2 {
		t.Errorf("unreachable Source: exit %d, want 2\n%s", code, out)
	}
}
