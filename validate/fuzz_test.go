package validate

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/rs"
)

// FuzzDocument checks that validation never panics and that every problem
// it reports is well formed, whatever the input.
func FuzzDocument(f *testing.F) {
	root := filepath.Join(conformanceDir(f), "examples")
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".xml") {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
		return nil
	})
	for _, d := range []string{
		urlset([]string{md(`capability="resourcelist" from="2013-01-03T09:00:00Z"`)}, item("http://example.com/r", md(`hash="md5:xyz"`))),
		urlset([]string{`<rs:ln rel="UP" href="cl.xml"/>`, md(`capability="resourceList" at="x"`)}, `<url><loc>a</loc><loc>b</loc><rs:ln rel="describedBy" href="m"/></url>`),
		urlset([]string{md(`capability="capabilitylist" modified="2013-01-02T14:00:00Z"`)}, item("http://example.com/rl.xml", md(`capability="resource_list" hash=""`))),
	} {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		opts := Options{Limits: rs.Limits{MaxTokenBytes: 4096, MaxDepth: 16, MaxDocumentBytes: 1 << 20, MaxLinks: 8}}
		errs := 0
		info, err := Document("fuzz.xml", bytes.NewReader(b), opts, func(p Problem) {
			if p.Rule == "" || (p.Severity != rs.SevError && p.Severity != rs.SevWarning) || p.Message == "" {
				t.Fatalf("malformed problem %+v", p)
			}
			if p.Severity == rs.SevError {
				errs++
			}
		})
		if err != nil && errs == 0 {
			t.Fatalf("fatal error %v reported no error problem", err)
		}
		if err == nil && info.Errors != errs {
			t.Fatalf("Info.Errors = %d, reported %d", info.Errors, errs)
		}
	})
}

// FuzzResourceSyncLinks: any Link header value yields absolute http(s)
// URLs only, without panicking.
func FuzzResourceSyncLinks(f *testing.F) {
	for _, s := range []string{
		`</sd.xml>; rel="resourcesync"`,
		`</a.css>; rel=stylesheet, <http://h/x>; rel="up resourcesync"; type=x`,
		`<javascript:x>; rel=resourcesync`, `<`, `<>;rel=`, `<a>, <b>; rel="resourcesync",`,
	} {
		f.Add(s)
	}
	base, _ := url.Parse("http://127.0.0.1/dir/page")
	f.Fuzz(func(t *testing.T, v string) {
		for _, u := range resourceSyncLinks(base, []string{v}) {
			if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
				t.Fatalf("%q yields %q", v, u)
			}
		}
	})
}
