package aggregate

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseSourcesGood(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules"), []byte("- *.tmp\n+ /docs/**\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rs := func(url, dest string, line int) Source {
		return Source{ID: dest, URL: url, Dest: dest, Kind: KindResourceSync, Line: line}
	}
	tests := []struct {
		name, in string
		want     []Source
	}{
		{"empty", "", nil},
		{"comments and blanks", "# a comment\n\n   \t# indented comment\n\t\n", nil},
		{"one line", "https://ex.org/rs/ catalogue\n", []Source{rs("https://ex.org/rs/", "catalogue", 1)}},
		{"no scheme: https, as curl takes it", "ex.org/rs/ catalogue\nlocalhost:8080 local\n", []Source{
			{ID: "catalogue", URL: "https://ex.org/rs/", Typed: "ex.org/rs/", Dest: "catalogue", Kind: KindResourceSync, Line: 1},
			{ID: "local", URL: "https://localhost:8080", Typed: "localhost:8080", Dest: "local", Kind: KindResourceSync, Line: 2}}},
		{"no final newline, CRLF, BOM", "\ufeffhttp://a.example/ a\r\nhttp://b.example/ b", []Source{rs("http://a.example/", "a", 1), rs("http://b.example/", "b", 2)}},
		{"trailing comment", "http://a.example/ a # the catalogue\n", []Source{rs("http://a.example/", "a", 1)}},
		{"# inside a field is not a comment", "http://a.example/x#frag a#1\n", []Source{rs("http://a.example/x#frag", "a#1", 1)}},
		{"bucket DEST", "http://a.example/ s3://bkt/mirrors/a/\nhttp://b.example/ s3://bkt/mirrors/ab\n",
			[]Source{rs("http://a.example/", "s3://bkt/mirrors/a", 1), rs("http://b.example/", "s3://bkt/mirrors/ab", 2)}},
		{"DEST cleaned", "http://a.example/ ./libs//north/./ir/\n", []Source{rs("http://a.example/", "libs/north/ir", 1)}},
		{"line numbers count comments", "# first\n\nhttp://a.example/ a\n# x\nhttp://b.example/ b\n", []Source{rs("http://a.example/", "a", 3), rs("http://b.example/", "b", 5)}},
		{"siblings sharing a prefix", "http://a.example/ lib\nhttp://b.example/ library\nhttp://c.example/ lib-2/x\n", []Source{rs("http://a.example/", "lib", 1), rs("http://b.example/", "library", 2), rs("http://c.example/", "lib-2/x", 3)}},
		{"every option", `https://ex.org/rs/ "journals/Le Monde" --poll-interval 15m --follow --set=articles --set "back issues" ` +
			`--bearer-token-file secrets/token --netrc-file=/etc/agg/netrc --ca-cert "ca dir/ca.pem" --allow-host cdn.example --allow-host=[::1]:8443 ` +
			`--max-delete 10% --no-delete --allow-reset --no-dumps --base-url https://ex.org/ --workers 16 --timeout=90s`,
			[]Source{{ID: "journals/Le Monde", URL: "https://ex.org/rs/", Dest: "journals/Le Monde", Kind: KindResourceSync,
				Interval: 15 * time.Minute, Follow: true, Sets: []string{"articles", "back issues"},
				BearerTokenFile: filepath.Join(dir, "secrets", "token"), NetrcFile: filepath.FromSlash("/etc/agg/netrc"),
				CACertFile: filepath.Join(dir, "ca dir", "ca.pem"), AllowHosts: []string{"cdn.example", "[::1]:8443"},
				MaxDelete: "10%", NoDelete: true, AllowReset: true, NoDumps: true, BaseURL: "https://ex.org/", Workers: 16, Timeout: 90 * time.Second, Line: 1}}},
		{"filters in their order, and --force", `http://a.example/ a --exclude "/private/**" --filter-from rules --include=*.xml --force`,
			[]Source{{ID: "a", URL: "http://a.example/", Dest: "a", Kind: KindResourceSync,
				Filters: []string{"exclude /private/**", "filter-from " + filepath.Join(dir, "rules"), "include *.xml"}, Force: true, Line: 1}}},
		{"--interval is --poll-interval", "http://a.example/ a --interval=2h\n", []Source{{ID: "a", URL: "http://a.example/", Dest: "a", Kind: KindResourceSync, Interval: 2 * time.Hour, Line: 1}}},
		{"sdshare", "http://a.example/overview sd/a --sdshare --poll-interval 5m --workers 2 --allow-host cdn.example\n",
			[]Source{{ID: "sd/a", URL: "http://a.example/overview", Dest: "sd/a", Kind: KindSDShare, Interval: 5 * time.Minute, Workers: 2, AllowHosts: []string{"cdn.example"}, Line: 1}}},
		{"quoting", `http://a.example/ "--odd \"dir\" name" --set="a b"c --set "#tag" --set "back\\slash" --max-delete -1`,
			[]Source{{ID: `--odd "dir" name`, URL: "http://a.example/", Dest: `--odd "dir" name`, Kind: KindResourceSync, Sets: []string{"a bc", "#tag", `back\slash`}, MaxDelete: "-1", Line: 1}}},
		{"a backslash before another letter stays", `http://a.example/ a --set "x\y"`,
			[]Source{{ID: "a", URL: "http://a.example/", Dest: "a", Kind: KindResourceSync, Sets: []string{`x\y`}, Line: 1}}},
		{"empty quoted set is refused elsewhere; tabs separate", "http://a.example/\ta\t--follow\n", []Source{{ID: "a", URL: "http://a.example/", Dest: "a", Kind: KindResourceSync, Follow: true, Line: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSources(strings.NewReader(tt.in), dir)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ParseSources (-want +got):\n%s", d)
			}
			// Whatever parses formats back to the same Sources.
			roundTrip(t, got)
		})
	}
}

func TestParseSourcesErrors(t *testing.T) {
	long := "http://a.example/ " + strings.Repeat("d", MaxSourcesLine-len("http://a.example/ ")+1)
	tests := []struct {
		name, in, dir string
		want          string // the whole message after "sources:" or a prefix of it
		notWant       string
	}{
		{"unterminated quote", `http://a.example/ "a`, "", `1: unterminated quote`, ""},
		{"control character", "http://a.example/ a\x00", "", `1: control character '\x00'`, ""},
		{"control character in quotes", "http://a.example/ \"a\x1b\"", "", `1: control character '\x1b'`, ""},
		{"URL only", "# c\nhttp://a.example/\n", "", `2: want URL DEST`, ""},
		{"option first", "--follow http://a.example/ a", "", `1: want URL DEST`, ""},
		{"option as DEST", "http://a.example/ --follow", "", `1: want URL DEST`, ""},
		{"not http", "ftp://a.example/ a", "", `1: bad URL "ftp://a.example/": want an absolute http:// or https:// URL`, ""},
		{"relative URL", "/rs/ a", "", `1: bad URL "/rs/"`, ""},
		{"bad URL", "http://a.example:x/ a", "", `1: bad URL "http://a.example:x/"`, ""},
		{"userinfo", "https://bob:secret@a.example/ a", "", `1: URL https://bob:xxxxx@a.example/: credentials do not belong in the sources file; put them in a file named with --netrc-file or --bearer-token-file`, "secret"},
		{"empty DEST", `http://a.example/ ""`, "", `1: empty DEST`, ""},
		{"absolute DEST", "http://a.example/ /srv/a", "", `1: DEST "/srv/a": want a path relative to --root`, ""},
		{"drive DEST", "http://a.example/ c:a", "", `1: DEST "c:a": want a path relative to --root`, ""},
		{"backslash DEST", `http://a.example/ a\b`, "", `1: DEST "a\\b": use / to separate directories`, ""},
		{"tab DEST", "http://a.example/ \"a\tb\"", "", `1: DEST "a\tb": a tab`, ""},
		{"dot DEST", "http://a.example/ ./", "", `1: DEST "./": the root itself`, ""},
		{"dotdot DEST", "http://a.example/ a/../../b", "", `1: DEST "a/../../b": leaves --root`, ""},
		{"state DEST", "http://a.example/ .resourcesync/x", "", `1: DEST ".resourcesync/x": inside .resourcesync`, ""},
		{"aggregate DEST", "http://a.example/ ./.Aggregate", "", `1: DEST "./.Aggregate": inside .Aggregate`, ""},
		{"bucket DEST without a bucket", "http://a.example/ s3:///", "", `1: DEST "s3:///": want s3://BUCKET/PREFIX`, ""},
		{"bucket DEST misspelt", "http://a.example/ s3:/b/p", "", `1: DEST "s3:/b/p": a location is written SCHEME://`, ""},
		{"bucket DEST with a query", "http://a.example/ s3://b/p?x=1", "", `1: DEST "s3://b/p?x=1": a tab, backslash, ? or #`, ""},
		{"same bucket DEST", "http://a.example/ s3://b/p\nhttp://b.example/ s3://b/p/", "", `2: DEST "s3://b/p" is already line 1's`, ""},
		{"bucket DEST inside another", "http://a.example/ s3://b/p\nhttp://b.example/ s3://b/p/q", "", `2: DEST "s3://b/p/q" is inside line 1's DEST "s3://b/p"`, ""},
		{"stray field", "http://a.example/ a b", "", `1: unexpected field "b" after DEST`, ""},
		{"unknown option, near", "http://a.example/ a --intervall 1h", "", `1: unknown option --intervall (did you mean --poll-interval?)`, ""},
		{"unknown option, near 2", "http://a.example/ a --no-dump", "", `1: unknown option --no-dump (did you mean --no-dumps?)`, ""},
		{"unknown option, far", "http://a.example/ a --recursive", "", `1: unknown option --recursive`, "did you mean"},
		{"single dash", "http://a.example/ a -follow", "", `1: unexpected field "-follow"`, ""},
		{"twice", "http://a.example/ a --workers 2 --workers=3", "", `1: --workers given twice`, ""},
		{"twice by alias", "http://a.example/ a --interval 1h --poll-interval=3h", "", `1: --poll-interval given twice`, ""},
		{"flag with value", "http://a.example/ a --follow=yes", "", `1: --follow takes no value`, ""},
		{"missing value at end", "http://a.example/ a --set", "", `1: --set: missing value`, ""},
		{"missing value before option", "http://a.example/ a --set --follow", "", `1: --set: missing value`, ""},
		{"bad duration", "\n\n\n\n\n\n\n\n\n\n\nhttp://a.example/ a --interval x", "", `12: --interval: bad duration "x"`, ""},
		{"zero duration", "http://a.example/ a --poll-interval 0s", "", `1: --poll-interval: bad duration "0s"`, ""},
		{"negative timeout", "http://a.example/ a --timeout=-1m", "", `1: --timeout: bad duration "-1m"`, ""},
		{"workers 0", "http://a.example/ a --workers 0", "", `1: --workers: bad value "0": want 1 to 256`, ""},
		{"workers 257", "http://a.example/ a --workers 257", "", `1: --workers: bad value "257"`, ""},
		{"workers x", "http://a.example/ a --workers=x", "", `1: --workers: bad value "x"`, ""},
		{"max-delete", "http://a.example/ a --max-delete 200%", "", `1: --max-delete: bad value "200%"`, ""},
		{"max-delete empty", `http://a.example/ a --max-delete ""`, "", `1: --max-delete: bad value ""`, ""},
		{"allow-host empty", "http://a.example/ a --allow-host=", "", `1: --allow-host: bad host ""`, ""},
		{"allow-host URL", "http://a.example/ a --allow-host http://cdn.example/", "", `1: --allow-host: bad host "http://cdn.example/"`, ""},
		{"set empty", `http://a.example/ a --set ""`, "", `1: --set: empty set name`, ""},
		{"base-url", "http://a.example/ a --base-url example.org", "", `1: --base-url: bad URL "example.org"`, ""},
		{"credential file empty", `http://a.example/ a --netrc-file=`, "/srv", `1: --netrc-file: empty file name`, ""},
		{"relative credential from URL", "http://a.example/ a --bearer-token-file token", "", `1: --bearer-token-file: "token": a sources list read from a URL may not name local files`, ""},
		{"absolute credential from URL", "http://a.example/ a --bearer-token-file /var/run/secrets/token", "", `1: --bearer-token-file: "/var/run/secrets/token": a sources list read from a URL may not name local files`, ""},
		{"sdshare follow", "http://a.example/ a --sdshare --follow", "", `1: --sdshare excludes --follow`, ""},
		{"sdshare set", "http://a.example/ a --set x --sdshare", "", `1: --sdshare excludes --set`, ""},
		{"sdshare no-dumps", "http://a.example/ a --sdshare --no-dumps", "", `1: --sdshare excludes --no-dumps`, ""},
		{"sdshare max-delete", "http://a.example/ a --sdshare --max-delete 5", "", `1: --sdshare excludes --max-delete`, ""},
		{"sdshare no-delete", "http://a.example/ a --sdshare --no-delete", "", `1: --sdshare excludes --no-delete`, ""},
		{"sdshare allow-reset", "http://a.example/ a --sdshare --allow-reset", "", `1: --sdshare excludes --allow-reset`, ""},
		{"sdshare include", "http://a.example/ a --sdshare --include x", "", `1: --sdshare excludes --include`, ""},
		{"sdshare force", "http://a.example/ a --force --sdshare", "", `1: --sdshare excludes --force`, ""},
		{"bad glob", "http://a.example/ a --exclude [", "", `1: --exclude: bad filter rule: "["`, ""},
		{"bad filter file", "http://a.example/ a --filter-from missing", "/srv", `1: --filter-from: open ` + filepath.Join("/srv", "missing"), ""},
		{"filter file from URL", "http://a.example/ a --filter-from rules", "", `1: --filter-from: "rules": a sources list read from a URL may not name local files`, ""},
		{"same DEST", "http://a.example/ a/b\n#\nhttp://b.example/ ./a//b/", "", `3: DEST "a/b" is already line 1's ("a/b")`, ""},
		{"same DEST but case", "http://a.example/ Lib\nhttp://b.example/ lib", "", `2: DEST "lib" is already line 1's ("Lib")`, ""},
		{"DEST inside an earlier one", "http://a.example/ a\nhttp://b.example/ a/b/c", "", `2: DEST "a/b/c" is inside line 1's DEST "a": two mirrors cannot share a directory`, ""},
		{"DEST containing a later one", "http://a.example/ a/b/c\nhttp://b.example/ A/B", "", `2: DEST "A/B" contains line 1's DEST "a/b/c"`, ""},
		{"line too long", "# x\n" + long + "\n", "", `2: line longer than 64 KiB`, ""},
		{"line much too long", "# x\n" + long + long, "", `2: line longer than 64 KiB`, ""},
		{"too many lines", strings.Repeat("\n", MaxSourcesLines+1), "", ` more than 100000 lines`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss, err := ParseSources(strings.NewReader(tt.in), tt.dir)
			if err == nil {
				t.Fatalf("no error; got %+v", ss)
			}
			if !errors.Is(err, ErrSources) {
				t.Errorf("%v does not match ErrSources", err)
			}
			msg := strings.TrimPrefix(err.Error(), "sources:")
			if !strings.HasPrefix(msg, tt.want) {
				t.Errorf("error\n %q\nwant it to begin\n %q", msg, tt.want)
			}
			if tt.notWant != "" && strings.Contains(msg, tt.notWant) {
				t.Errorf("error %q contains %q", msg, tt.notWant)
			}
		})
	}
}

// TestParseSourcesAtLimits: a line of exactly the limit and exactly the
// most lines are accepted.
func TestParseSourcesAtLimits(t *testing.T) {
	line := "http://a.example/ d --set " + strings.Repeat("s", MaxSourcesLine-len("http://a.example/ d --set "))
	ss, err := ParseSources(strings.NewReader(line+"\r\nhttp://b.example/ e"), "")
	if err != nil || len(ss) != 2 || len(ss[0].Sets[0])+len("http://a.example/ d --set ") != MaxSourcesLine {
		t.Fatalf("a line of %d bytes: %v", MaxSourcesLine, err)
	}
	var b strings.Builder
	for i := range MaxSourcesLines {
		fmt.Fprintf(&b, "http://h%d.example/ d%d\n", i%50, i)
	}
	ss, err = ParseSources(strings.NewReader(b.String()), "")
	if err != nil || len(ss) != MaxSourcesLines || ss[len(ss)-1].Line != MaxSourcesLines {
		t.Fatalf("%d lines: %d Sources, %v", MaxSourcesLines, len(ss), err)
	}
}

func TestFormatSources(t *testing.T) {
	ss := []Source{
		{ID: "a", URL: "http://a.example/", Dest: "a", Kind: KindResourceSync},
		{ID: "b c", URL: "http://b.example/", Dest: "b c", Kind: KindSDShare, Interval: time.Minute, Timeout: 90 * time.Second},
		{ID: "d", URL: "http://d.example/", Dest: "d", Kind: KindResourceSync, Follow: true, Sets: []string{"x", `q"u\o`}, MaxDelete: "-1", Workers: 3},
	}
	var b bytes.Buffer
	if err := FormatSources(&b, ss); err != nil {
		t.Fatal(err)
	}
	want := `http://a.example/ a
http://b.example/ "b c" --sdshare --poll-interval 1m0s --timeout 1m30s
http://d.example/ d --follow --set x --set "q\"u\\o" --max-delete "-1" --workers 3
`
	if b.String() != want {
		t.Errorf("FormatSources:\n%s\nwant\n%s", b.String(), want)
	}
	roundTrip(t, ss)
}

// roundTrip checks that ss, formatted and parsed again, is ss but for
// the line numbers.
func roundTrip(t testing.TB, ss []Source) {
	t.Helper()
	var b bytes.Buffer
	if err := FormatSources(&b, ss); err != nil {
		t.Fatal(err)
	}
	again, err := ParseSources(&b, "/nowhere")
	if err != nil {
		t.Fatalf("formatted Sources do not parse: %v\n%s", err, b.String())
	}
	if len(ss) == 0 && len(again) == 0 {
		return
	}
	if d := cmp.Diff(ss, again, cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == ".Line" || p.Last().String() == ".Typed" // where and how it was written
	}, cmp.Ignore())); d != "" {
		t.Fatalf("round trip (-parsed +formatted and parsed again):\n%s", d)
	}
}

func FuzzParseSources(f *testing.F) {
	for _, s := range []string{
		"",
		"# c\nhttp://a.example/ a --follow # x\n",
		`https://ex.org/rs/ "journals/Le Monde" --poll-interval 15m --set=articles --set "back issues" --bearer-token-file t --allow-host=[::1]:8443 --max-delete 10% --no-delete --no-dumps --base-url https://ex.org/ --workers 16 --timeout=90s`,
		`http://a.example/ "--odd \"dir\" \\ name" --set="a b"c --set "#tag" --max-delete -1`,
		"http://a.example/overview sd --sdshare --interval 5m\nhttp://b.example/ sd/x\n",
		"http://a.example/ a\nhttp://b.example/ A\n",
		"http://a.example/ a --intervall 1h",
		"\ufeffhttp://a.example/ ./x/../y\r\n",
		"http://a.example/ s3://b/p/\nhttp://b.example/ s3:/b/q\nhttp://c.example/ S3://b/p/x\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ss, err := ParseSources(strings.NewReader(in), "/base")
		if err != nil {
			if !errors.Is(err, ErrSources) || !strings.HasPrefix(err.Error(), "sources") {
				t.Fatalf("error %q does not match ErrSources", err)
			}
			return
		}
		for _, s := range ss {
			if d, err := checkDest(s.Dest); err != nil || d != s.Dest || s.ID != s.Dest {
				t.Fatalf("Source %+v: DEST not clean (%v)", s, err)
			}
			if DestLocation(s.Dest) && (strings.HasSuffix(s.Dest, "/") || strings.ContainsAny(s.Dest, "\t?#\\")) {
				t.Fatalf("Source %+v: a location DEST not clean", s)
			}
			if s.Line < 1 {
				t.Fatalf("Source %+v: no line", s)
			}
		}
		roundTrip(t, ss)
	})
}

// TestParseRemoteSources: a list read from a URL names credential files
// only inside the directory the operator allows, by a relative path with
// no ".." (a symbolic link out of it: TestParseRemoteSourcesSymlinkOut).
func TestParseRemoteSources(t *testing.T) {
	allowed := t.TempDir()
	if err := os.MkdirAll(filepath.Join(allowed, "tokens"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(allowed, "tokens", "cat"), []byte("t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(allowed)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, filesDir, opt string
		want                string // the file's path, or the error's end
	}{
		{"inside", allowed, "--bearer-token-file tokens/cat", filepath.Join(real, "tokens", "cat")},
		{"inside, dot", allowed, "--bearer-token-file ./tokens/cat", filepath.Join(real, "tokens", "cat")},
		{"no files dir", "", "--bearer-token-file tokens/cat", "may not name local files unless the operator allows a directory for them (--sources-files-dir)"},
		{"no files dir, absolute", "", "--netrc-file /etc/netrc", "may not name local files unless the operator allows a directory for them (--sources-files-dir)"},
		{"absolute", allowed, "--ca-cert " + quoteField(filepath.Join(allowed, "tokens", "cat")), "not an absolute one"},
		{"absolute slash", allowed, "--ca-cert /etc/ssl/ca.pem", "not an absolute one"},
		{"dot-dot", allowed, "--netrc-file tokens/../../netrc", `"..\" may not leave --sources-files-dir`},
		{"dot-dot backslash", allowed, `--netrc-file "tokens\\..\\..\\netrc"`, `may not leave --sources-files-dir`},
		{"missing", allowed, "--bearer-token-file tokens/none", "in --sources-files-dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss, err := ParseRemoteSources(strings.NewReader("https://a.example/ a "+tt.opt+"\n"), tt.filesDir)
			if strings.HasPrefix(tt.want, string(filepath.Separator)) || filepath.IsAbs(tt.want) {
				if err != nil {
					t.Fatal(err)
				}
				got := ss[0].BearerTokenFile + ss[0].NetrcFile + ss[0].CACertFile
				if got != tt.want {
					t.Fatalf("file %q, want %q", got, tt.want)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrSources) || !strings.Contains(err.Error(), strings.ReplaceAll(tt.want, `\"`, `"`)) {
				t.Fatalf("got %+v, %v; want an ErrSources error with %q", ss, err, tt.want)
			}
		})
	}
	// ParseSources(r, "") is a list from a URL, naming no file.
	if _, err := ParseSources(strings.NewReader("https://a.example/ a --netrc-file /etc/netrc\n"), ""); err == nil {
		t.Fatal("ParseSources with no directory accepted an absolute credential file")
	}
}

// TestSourcesLoaderPlainHTTP: a plain-http sources URL (loopback
// included) is refused unless allowed, before anything is fetched.
func TestSourcesLoaderPlainHTTP(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "https://a.example/ aa\n")
	}))
	defer srv.Close()
	_, _, err := NewSourcesLoader(srv.URL+"/sources.txt", nil).Load(t.Context())
	if !errors.Is(err, ErrPlainHTTPSources) || hits.Load() != 0 {
		t.Fatalf("plain http: %v after %d GETs; want ErrPlainHTTPSources before any", err, hits.Load())
	}
	ss, _, err := NewSourcesLoaderWith(srv.URL+"/sources.txt", nil, RemoteSources{AllowHTTP: true}).Load(t.Context())
	if err != nil || len(ss) != 1 {
		t.Fatalf("allowed plain http: %v, %v", ss, err)
	}
}
