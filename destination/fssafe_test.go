package destination_test

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
)

// mutableSource serves documents and resources that the test may change
// between runs; {base} in a body is the server's URL.
type mutableSource struct {
	mu    sync.Mutex
	files map[string]string
	base  string
}

func newMutableSource(t *testing.T, files map[string]string) *mutableSource {
	s := &mutableSource{files: files}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		body, ok := s.files[r.URL.EscapedPath()]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, strings.ReplaceAll(body, "{base}", s.base))
	}))
	t.Cleanup(srv.Close)
	s.base = srv.URL + "/"
	return s
}

func (s *mutableSource) set(path, body string) {
	s.mu.Lock()
	s.files[path] = body
	s.mu.Unlock()
}

// outsideTree makes a directory beside DEST with files in it and returns
// it with a function asserting that it is unchanged byte for byte.
func outsideTree(t *testing.T, base string) (string, func()) {
	t.Helper()
	out := filepath.Join(base, "outside")
	for p, b := range map[string]string{"f.txt": "outside f", "sub/g.txt": "outside g", "secret": "secret"} {
		p = filepath.Join(out, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return outsideTreeSnapshot(t, out)
}

// TestHostileSymlinkInDest: symbolic links already in DEST, to a
// directory or a file outside it, are never written through: the
// resources behind them fail with ErrSymlinkInDest's message, the rest is
// synchronized, the run is not OK and nothing outside DEST changes.
func TestHostileSymlinkInDest(t *testing.T) {
	src := newMutableSource(t, map[string]string{
		"/capabilitylist.xml": capList,
		"/resourcelist.xml":   resourceList("{base}d/f.txt", "{base}d/sub/g.txt", "{base}secret", "{base}ok.txt"),
		"/d/f.txt":            "from the Source f",
		"/d/sub/g.txt":        "from the Source g",
		"/secret":             "from the Source secret",
		"/ok.txt":             "fine",
	})
	base := t.TempDir()
	dest := filepath.Join(base, "dest")
	os.MkdirAll(dest, 0o755)
	out, unchanged := outsideTree(t, base)
	if err := os.Symlink(out, filepath.Join(dest, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(out, "secret"), filepath.Join(dest, "secret")); err != nil {
		t.Fatal(err)
	}
	rep := mustSync(t, src.base+"capabilitylist.xml", syncOpts(t, dest))
	sr := one(t, rep)
	if sr.Fetched != 1 || sr.Failed != 3 {
		t.Fatalf("%+v", sr)
	}
	for _, f := range sr.Failures {
		if !strings.Contains(f.Error, "is a symbolic link; refusing to write through it") {
			t.Errorf("%s: %s", f.URI, f.Error)
		}
	}
	if rep.OK(false, false) {
		t.Error("run reported OK")
	}
	unchanged()
	// An audit with repair does not read or write through them either.
	opt := syncOpts(t, dest)
	opt.Mode, opt.Repair = destination.ModeAudit, true
	rep = mustSync(t, src.base+"capabilitylist.xml", opt)
	if sr := one(t, rep); sr.Failed != 3 {
		t.Fatalf("audit: %+v", sr)
	}
	unchanged()
}

// TestHostileSymlinkDelete: a directory of installed files is replaced by
// a link to a directory outside DEST holding files of the same names,
// sizes and mtimes; when the Source deletes the resources, nothing behind
// the link is deleted.
func TestHostileSymlinkDelete(t *testing.T) {
	src := newMutableSource(t, map[string]string{
		"/capabilitylist.xml": capList,
		"/resourcelist.xml":   resourceList("{base}d/f.txt", "{base}d/sub/g.txt", "{base}ok.txt"),
		"/d/f.txt":            "outside f",
		"/d/sub/g.txt":        "outside g",
		"/ok.txt":             "fine",
	})
	base := t.TempDir()
	dest := filepath.Join(base, "dest")
	if sr := one(t, mustSync(t, src.base+"capabilitylist.xml", syncOpts(t, dest))); sr.Fetched != 3 {
		t.Fatalf("%+v", sr)
	}
	out, _ := outsideTree(t, base)
	// Same mtimes as the installed files, so they look unchanged.
	for _, p := range []string{"f.txt", "sub/g.txt"} {
		fi, err := os.Stat(filepath.Join(dest, "d", p))
		if err != nil {
			t.Fatal(err)
		}
		os.Chtimes(filepath.Join(out, p), fi.ModTime(), fi.ModTime())
	}
	_, unchanged := outsideTreeSnapshot(t, out)
	if err := os.Rename(filepath.Join(dest, "d"), filepath.Join(base, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(dest, "d")); err != nil {
		t.Fatal(err)
	}
	src.set("/resourcelist.xml", strings.Replace(resourceList("{base}ok.txt"), "2026-01-01", "2026-01-02", 1))
	rep := mustSync(t, src.base+"capabilitylist.xml", syncOpts(t, dest))
	sr := one(t, rep)
	if sr.Deleted != 0 || sr.Failed != 2 || rep.OK(false, false) {
		t.Fatalf("%+v", sr)
	}
	for _, f := range sr.Failures {
		if !strings.Contains(f.Error, "is a symbolic link; refusing to") {
			t.Errorf("%s: %s", f.URI, f.Error)
		}
	}
	unchanged()
}

// outsideTreeSnapshot snapshots an existing directory.
func outsideTreeSnapshot(t *testing.T, dir string) (string, func()) {
	t.Helper()
	snap := func() string {
		var b strings.Builder
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, _ := d.Info()
			fmt.Fprintf(&b, "%s %v %d", p, fi.Mode(), fi.ModTime().UnixNano())
			if d.Type().IsRegular() {
				c, _ := os.ReadFile(p)
				fmt.Fprintf(&b, " %q", c)
			}
			b.WriteByte('\n')
			return nil
		})
		return b.String()
	}
	before := snap()
	return dir, func() {
		t.Helper()
		if after := snap(); after != before {
			t.Errorf("outside directory changed:\n%s\nwas:\n%s", after, before)
		}
	}
}

// TestHostileDigests: digests in any spelling are verified; undecodable
// or contradictory ones fail the resource closed; unknown algorithms
// alone install on the length and are counted as unverified.
func TestHostileDigests(t *testing.T) {
	body := "the resource bytes"
	m5 := md5.Sum([]byte(body))
	s256 := sha256.Sum256([]byte(body))
	wrong := md5.Sum([]byte("other"))
	hx := hex.EncodeToString
	cases := []struct {
		name, hash string
		want       string // "" installed, else a failure containing it
	}{
		{"hexupper", "MD5:" + strings.ToUpper(hx(m5[:])), ""},
		{"b64", "sha-256:" + base64.StdEncoding.EncodeToString(s256[:]), ""},
		{"spelling", "SHA256:" + hx(s256[:]), ""},
		{"unknown", "sha-512:00ff", ""},
		{"wrongupper", "MD5:" + hx(wrong[:]), "hash mismatch"},
		{"wrongb64", "md5:" + base64.StdEncoding.EncodeToString(wrong[:]), "hash mismatch"},
		{"short", "md5:" + hx(m5[:])[:20], "undecodable digest"},
		{"conflict", "md5:" + hx(m5[:]) + " md5:" + hx(wrong[:]), "conflicting digests"},
	}
	files := map[string]string{"/capabilitylist.xml": capList}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>
`)
	for _, c := range cases {
		fmt.Fprintf(&b, "  <url><loc>{base}%s</loc><rs:md hash=%q length=\"%d\"/></url>\n", c.name, c.hash, len(body))
		files["/"+c.name] = body
	}
	b.WriteString("</urlset>")
	files["/resourcelist.xml"] = b.String()
	src := newMutableSource(t, files)
	dest := filepath.Join(t.TempDir(), "dest")
	var mu sync.Mutex
	var warnings []string
	opt := syncOpts(t, dest)
	opt.Events = func(e destination.Event) {
		if e.Kind == destination.EventWarning {
			mu.Lock()
			warnings = append(warnings, e.Path+": "+e.Message)
			mu.Unlock()
		}
	}
	sr := one(t, mustSync(t, src.base+"capabilitylist.xml", opt))
	failed := map[string]string{}
	for _, f := range sr.Failures {
		failed[f.Path] = f.Error
	}
	for _, c := range cases {
		_, err := os.Stat(filepath.Join(dest, c.name))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: not installed: %v (%s)", c.name, err, failed[c.name])
		case c.want != "" && err == nil:
			t.Errorf("%s: installed", c.name)
		case c.want != "" && !strings.Contains(failed[c.name], c.want):
			t.Errorf("%s: failure %q, want %q", c.name, failed[c.name], c.want)
		}
	}
	if sr.Unverified != 1 || len(warnings) != 1 || !strings.Contains(warnings[0], "unknown: installed unverified (length only)") {
		t.Errorf("unverified %d, warnings %q", sr.Unverified, warnings)
	}
}

// TestHostileDumpPackageBomb: a Resource Dump package whose members each
// respect the per-member limits but that inflates to 1,000 times its size
// in all is refused as a whole before anything is installed; DEST holds
// only what the Resource List brings.
func TestHostileDumpPackageBomb(t *testing.T) {
	const n = 50
	var locs []string
	var members []member
	for i := range n {
		locs = append(locs, fmt.Sprintf("{base}z/%02d", i))
		members = append(members, member{name: fmt.Sprintf("z/%02d", i), body: make([]byte, 1<<20)})
	}
	pkg := zipOf(t, locs, members, true)
	sum := sha256.Sum256(pkg)
	files := map[string]string{
		"/capabilitylist.xml": `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="capabilitylist"/>
  <url><loc>{base}resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
  <url><loc>{base}resourcedump.xml</loc><rs:md capability="resourcedump"/></url>
</urlset>`,
		"/resourcelist.xml": resourceList("{base}a.txt"),
		"/a.txt":            "the real a",
		"/resourcedump.xml": fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcedump" at="2026-01-01T00:00:00Z"/>
<url><loc>{base}bomb.zip</loc><rs:md type="application/zip" length="%d" hash="sha-256:%s"/></url>
</urlset>`, len(pkg), hex.EncodeToString(sum[:])),
		"/bomb.zip": string(pkg),
	}
	base := staticSource(t, files)
	dest := filepath.Join(t.TempDir(), "dest")
	sr := one(t, mustSync(t, base+"capabilitylist.xml", syncOpts(t, dest)))
	if sr.Failed != 1 || sr.Fetched != 1 || len(sr.Failures) != 1 || !strings.Contains(sr.Failures[0].Error, "zip bomb: manifest entries declare") {
		t.Fatalf("%+v", sr)
	}
	var used int64
	filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			fi, _ := d.Info()
			if !strings.Contains(p, destination.StateDirName) {
				used += fi.Size()
				if !strings.HasSuffix(p, "a.txt") {
					t.Errorf("installed from the refused package: %s", p)
				}
			}
		}
		return nil
	})
	if used != int64(len("the real a")) {
		t.Errorf("%d bytes in DEST outside the state", used)
	}
	if _, err := os.Stat(filepath.Join(dest, "z")); err == nil {
		t.Error("directory created for the refused package")
	}
}
