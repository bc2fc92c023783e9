package publish_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// TestFeedLinksValid: the Source Description and the Capability List
// that link the feeds stay valid against the ResourceSync 1.1 and
// sitemaps.org schemas (checked by xmllint), so that clients validating
// them (JAXB-generated Java clients) still read them. The schemas' rs:ln
// type is a bare media type; a feed's profile goes in rs:ln's profile.
func TestFeedLinksValid(t *testing.T) {
	if _, err := exec.LookPath("xmllint"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("xmllint not installed")
		}
		t.Skip("xmllint not installed")
	}
	schemas, err := filepath.Abs(filepath.Join("..", "..", "testdata", "conformance", "schemas"))
	if err != nil {
		t.Fatal(err)
	}
	xsd := filepath.Join(t.TempDir(), "rs.xsd")
	err = os.WriteFile(xsd, []byte(`<xsd:schema xmlns:xsd="http://www.w3.org/2001/XMLSchema">
<xsd:import namespace="http://www.sitemaps.org/schemas/sitemap/0.9" schemaLocation="`+filepath.ToSlash(filepath.Join(schemas, "sitemap.xsd"))+`"/>
<xsd:import namespace="http://www.openarchives.org/rs/terms/" schemaLocation="`+filepath.ToSlash(filepath.Join(schemas, "resourcesync-1.1.xsd"))+`"/>
</xsd:schema>`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	base := "http://127.0.0.1:9/"
	st := openStore(t, "")
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	apply(t, st, "", rs.Created, "a", "a", t0)
	cfg := publish.Config{BaseURL: base, Out: out, Logger: quiet, Now: (&clock{t: t0.Add(time.Minute)}).Now, Feeds: true,
		Sets: []publish.Set{{Name: "s", Store: st, ResourceBase: base + "r/"}}}
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{".well-known/resourcesync", ".resourcesync/s/capabilitylist.xml"} {
		b, err := exec.Command("xmllint", "--noout", "--nonet", "--schema", xsd, filepath.Join(out, doc)).CombinedOutput()
		if err != nil {
			t.Errorf("%s does not validate: %v\n%s", doc, err, b)
		}
	}
}
