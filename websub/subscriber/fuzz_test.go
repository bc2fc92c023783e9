package subscriber

import (
	"errors"
	"net/url"
	"testing"

	"github.com/resourcesync-go/resourcesync/rs"
)

func FuzzParsePayload(f *testing.F) {
	f.Add(payload1())
	f.Add([]byte(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="change-notification" from="2026" until="2027"/></urlset>`))
	f.Add([]byte(`<sitemapindex/>`))
	f.Add([]byte(blogHTML))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		head, entries, err := ParsePayload(raw, "", 1<<20)
		if err != nil {
			if !errors.Is(err, ErrPayload) {
				t.Fatalf("error not matching ErrPayload: %v", err)
			}
			return
		}
		if head.IsIndex() || head.Capability() != rs.CapChangeNotification {
			t.Fatalf("accepted head %+v", head)
		}
		if head.MD.From.IsZero() || head.MD.Until.IsZero() || head.MD.Until.Before(head.MD.From) {
			t.Fatalf("accepted interval %s %s", head.MD.From, head.MD.Until)
		}
		for _, e := range entries {
			if e.Loc == "" || !e.MD.Change.Valid() {
				t.Fatalf("accepted entry %+v", e)
			}
		}
	})
}

func FuzzBodyLinks(f *testing.F) {
	f.Add([]byte(`<html><head><link rel="hub" href="/hub"><link rel="self" href="t"></head><body><link rel="hub" href="x"></body></html>`), "text/html")
	f.Add([]byte(`<feed xmlns="http://www.w3.org/2005/Atom"><link rel="hub self" href="h"/><entry><link rel="hub" href="e"/></entry></feed>`), "application/atom+xml")
	f.Add([]byte(`<rss xmlns:atom="http://www.w3.org/2005/Atom"><channel><atom:link rel="hub" href="http://h/"/><item/></channel></rss>`), "text/xml")
	f.Add([]byte(`<a><link rel=hub href=&amp;x></a>`), "text/html")
	base, _ := url.Parse("http://127.0.0.1/topic/")
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		hubs, selves := BodyLinks(body, ct, base)
		for _, l := range append(hubs, selves...) {
			u, err := url.Parse(l)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
				t.Fatalf("link %q is not an absolute http(s) URL", l)
			}
		}
	})
}

func FuzzCheckSignature(f *testing.F) {
	sig, _ := Sign("sha256", []byte("k"), []byte("body"))
	f.Add([]byte("k"), sig, []byte("body"))
	f.Add([]byte("k"), "sha1=zz", []byte("body"))
	f.Add([]byte(""), "", []byte(""))
	f.Fuzz(func(t *testing.T, secret []byte, header string, body []byte) {
		err := CheckSignature(secret, header, body)
		if err != nil && !errors.Is(err, ErrNoSignature) && !errors.Is(err, ErrBadSignature) {
			t.Fatalf("unexpected error %v", err)
		}
		for _, alg := range []string{"sha1", "sha256", "sha384", "sha512"} {
			s, _ := Sign(alg, secret, body)
			if err := CheckSignature(secret, s, body); err != nil {
				t.Fatalf("own %s signature refused: %v", alg, err)
			}
		}
	})
}
