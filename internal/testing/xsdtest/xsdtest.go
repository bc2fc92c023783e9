// Package xsdtest validates ResourceSync documents with xmllint against
// the sitemaps.org schemas (sitemap.xsd, siteindex.xsd) with the
// ResourceSync 1.1 schema loaded, from the conformance corpus the
// repository carries in testdata/conformance (or $RESOURCESYNC_CONFORMANCE).
// One validator for every package's tests (rs, source/server,
// sdshare/server).
package xsdtest

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ErrInvalid is wrapped by Validate's error when xmllint rejects a
// document.
var ErrInvalid = errors.New("xmllint: document does not validate")

// Wrapper schemas: sitemap.xsd or siteindex.xsd importing the
// ResourceSync schema ({{SCHEMAS}}: the corpus's schemas directory).
var (
	//go:embed sitemap-rs.xsd.tmpl
	urlsetTmpl []byte
	//go:embed siteindex-rs.xsd.tmpl
	indexTmpl []byte
)

// Validator validates documents; make one with New.
type Validator struct {
	xmllint string
	urlset  string // wrapper schema for <urlset>
	index   string // wrapper schema for <sitemapindex>
	dir     string
}

// New returns a Validator. root is the repository's root relative to the
// test's package directory (".." for rs, "../.." for source/server); it
// fails t when xmllint or the corpus is missing.
func New(t testing.TB, root string) *Validator {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatalf("xmllint not found: install libxml2-utils (apt-get install libxml2-utils): %v", err)
	}
	corpus := os.Getenv("RESOURCESYNC_CONFORMANCE")
	if corpus == "" {
		corpus = filepath.Join(root, "testdata", "conformance")
	}
	schemas, err := filepath.Abs(filepath.Join(corpus, "schemas"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(schemas); err != nil {
		t.Fatalf("conformance schemas not found (testdata/conformance, or set RESOURCESYNC_CONFORMANCE): %v", err)
	}
	v := &Validator{xmllint: xmllint, dir: t.TempDir()}
	for _, w := range []struct {
		name string
		tmpl []byte
		dst  *string
	}{{"sitemap-rs.xsd", urlsetTmpl, &v.urlset}, {"siteindex-rs.xsd", indexTmpl, &v.index}} {
		b := bytes.ReplaceAll(w.tmpl, []byte("{{SCHEMAS}}"), []byte("file://"+filepath.ToSlash(schemas)))
		*w.dst = filepath.Join(v.dir, w.name)
		if err := os.WriteFile(*w.dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// Validate checks one document (name is for the message); the error wraps
// ErrInvalid and holds xmllint's messages when the document does not
// validate. Safe for concurrent use.
func (v *Validator) Validate(name string, doc []byte) error {
	schema := v.urlset
	if bytes.Contains(doc, []byte("<sitemapindex")) {
		schema = v.index
	}
	f, err := os.CreateTemp(v.dir, "doc-*.xml")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(doc); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	out, err := exec.Command(v.xmllint, "--noout", "--nonet", "--schema", schema, f.Name()).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("%w: %s: %s", ErrInvalid, name, out)
	}
	return err
}

// MustValidate fails t unless every document validates.
func (v *Validator) MustValidate(t testing.TB, docs map[string][]byte) {
	t.Helper()
	for name, doc := range docs {
		if err := v.Validate(name, doc); err != nil {
			t.Errorf("%v\n%s", err, doc)
		}
	}
}
