package destination_test

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyStrongestByDefault: by default the strongest offered digest
// is verified (a wrong md5 beside a right sha-256 installs; a wrong
// sha-256 beside a right md5 does not); with VerifyAll every one is.
func TestVerifyStrongestByDefault(t *testing.T) {
	body := "the resource bytes"
	m5, s256 := md5.Sum([]byte(body)), sha256.Sum256([]byte(body))
	wm5, ws256 := md5.Sum([]byte("other")), sha256.Sum256([]byte("other"))
	hx := hex.EncodeToString
	cases := []struct {
		name, hash string
		strongest  bool // installed by default
		all        bool // installed with VerifyAll
	}{
		{"both-right", "md5:" + hx(m5[:]) + " sha-256:" + hx(s256[:]), true, true},
		{"md5-wrong", "md5:" + hx(wm5[:]) + " sha-256:" + hx(s256[:]), true, false},
		{"sha256-wrong", "md5:" + hx(m5[:]) + " sha-256:" + hx(ws256[:]), false, false},
		{"md5-only-wrong", "md5:" + hx(wm5[:]), false, false},
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
	for _, all := range []bool{false, true} {
		dest := filepath.Join(t.TempDir(), "dest")
		opt := syncOpts(t, dest)
		opt.VerifyAll = all
		sr := one(t, mustSync(t, src.base+"capabilitylist.xml", opt))
		failed := map[string]string{}
		for _, f := range sr.Failures {
			failed[f.Path] = f.Error
		}
		for _, c := range cases {
			want := c.strongest
			if all {
				want = c.all
			}
			_, err := os.Stat(filepath.Join(dest, c.name))
			switch {
			case want && err != nil:
				t.Errorf("all=%v %s: not installed: %v (%s)", all, c.name, err, failed[c.name])
			case !want && err == nil:
				t.Errorf("all=%v %s: installed", all, c.name)
			case !want && !strings.Contains(failed[c.name], "hash mismatch"):
				t.Errorf("all=%v %s: failure %q, want a hash mismatch", all, c.name, failed[c.name])
			}
		}
	}
}
