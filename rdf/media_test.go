package rdf

import (
	"slices"
	"testing"
)

func TestFormatFor(t *testing.T) {
	tests := []struct {
		in   string
		want Format
		ok   bool
	}{
		{"application/n-triples", NTriples, true},
		{"text/plain", NTriples, true},
		{"Text/Plain; charset=UTF-8", NTriples, true},
		{" application/N-Triples ;charset=utf-8", NTriples, true},
		{"text/turtle", Turtle, true},
		{"application/x-turtle", Turtle, true},
		{"application/rdf+xml;charset=utf-8", RDFXML, true},
		{"application/xml", 0, false},
		{"application/atom+xml", 0, false},
		{"", 0, false},
		{"text/*", 0, false},
	}
	for _, tc := range tests {
		if got, ok := FormatFor(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("FormatFor(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestFormatNames(t *testing.T) {
	for _, tc := range []struct {
		f          Format
		name, mt   string
		flagsNamed []string
	}{
		{NTriples, "nt", "application/n-triples", []string{"nt", "ntriples", "NT", "n-triples"}},
		{Turtle, "ttl", "text/turtle", []string{"ttl", "turtle", "Turtle"}},
		{RDFXML, "rdfxml", "application/rdf+xml", []string{"rdf", "rdfxml", "xml", "RDF/XML"}},
	} {
		if tc.f.String() != tc.name || tc.f.MediaType() != tc.mt {
			t.Errorf("%d: String %q MediaType %q", tc.f, tc.f.String(), tc.f.MediaType())
		}
		if f, ok := FormatFor(tc.f.MediaType()); !ok || f != tc.f {
			t.Errorf("FormatFor(%v.MediaType()) = %v", tc.f, f)
		}
		if f, ok := FormatByName(tc.f.String()); !ok || f != tc.f {
			t.Errorf("FormatByName(%v.String()) = %v", tc.f, f)
		}
		for _, n := range tc.flagsNamed {
			if f, ok := FormatByName(n); !ok || f != tc.f {
				t.Errorf("FormatByName(%q) = %v, %v", n, f, ok)
			}
		}
	}
	if _, ok := FormatByName("json"); ok {
		t.Error("FormatByName(json) ok")
	}
	if Format(0).MediaType() != "" || Format(9).String() != "Format(9)" {
		t.Error("unknown format")
	}
}

func TestNegotiate(t *testing.T) {
	all := []Format{NTriples, RDFXML, Turtle}
	tests := []struct {
		name   string
		accept string
		offers []Format
		want   Format
		mt     string
		ok     bool
	}{
		{"absent", "", all, NTriples, "application/n-triples", true},
		{"star", "*/*", all, NTriples, "application/n-triples", true},
		{"star default follows offers", "*/*", []Format{RDFXML, NTriples}, RDFXML, "application/rdf+xml", true},
		{"bare star", "*; q=.2", all, NTriples, "application/n-triples", true},
		{"text/plain answered as text/plain", "text/plain", all, NTriples, "text/plain", true},
		{"n-triples", "application/n-triples", all, NTriples, "application/n-triples", true},
		{"case and params", "Application/RDF+XML; charset=utf-8", all, RDFXML, "application/rdf+xml", true},
		{"x-turtle alias", "application/x-turtle", all, Turtle, "application/x-turtle", true},
		{"q-values", "text/turtle;q=0.5, application/rdf+xml;q=0.9, text/plain;q=0.1", all, RDFXML, "application/rdf+xml", true},
		{"explicit beats star at equal q", "*/*, text/turtle", all, Turtle, "text/turtle", true},
		{"star lower q", "text/turtle;q=0.2, */*;q=0.1", all, Turtle, "text/turtle", true},
		{"q=0 excludes", "text/turtle;q=0, */*", []Format{Turtle, RDFXML}, RDFXML, "application/rdf+xml", true},
		{"q=0 excludes only format", "application/rdf+xml;q=0", all, 0, "", false},
		{"specific q=0 beats wildcard", "text/*, text/plain;q=0", all, Turtle, "text/turtle", true},
		{"text wildcard picks n-triples as text/plain", "text/*", []Format{NTriples, RDFXML}, NTriples, "text/plain", true},
		{"application wildcard", "application/*", []Format{Turtle, RDFXML}, RDFXML, "application/rdf+xml", true},
		{"application wildcard n-triples", "application/*", all, NTriples, "application/n-triples", true},
		{"unknown type is 406", "application/json", all, 0, "", false},
		{"atom only is 406", "application/atom+xml", all, 0, "", false},
		{"not offered", "text/turtle", []Format{NTriples, RDFXML}, 0, "", false},
		{"browser", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", all, NTriples, "application/n-triples", true},
		{"ontopia client", "application/rdf+xml, text/plain;q=0.5", all, RDFXML, "application/rdf+xml", true},
		{"garbage only means absent", ";;,,", all, NTriples, "application/n-triples", true},
		{"bad q skipped", "text/turtle;q=abc, application/rdf+xml", all, RDFXML, "application/rdf+xml", true},
		{"q above 1 skipped", "text/turtle;q=2", all, NTriples, "application/n-triples", true},
		{"accept-ext after q", "text/turtle;q=0.5;foo=bar, text/plain;q=0.4", all, Turtle, "text/turtle", true},
		{"no offers", "*/*", nil, 0, "", false},
		{"spaces", "  text/turtle ; q=1 ,text/plain;q=0.3", all, Turtle, "text/turtle", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, mt, ok := Negotiate(tc.accept, tc.offers)
			if f != tc.want || mt != tc.mt || ok != tc.ok {
				t.Errorf("Negotiate(%q) = %v, %q, %v; want %v, %q, %v", tc.accept, f, mt, ok, tc.want, tc.mt, tc.ok)
			}
		})
	}
}

func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{"", "*/*", "text/plain;q=0.5, */*;q=0", "text/*;q=abc", "*; q=.2", "a/b/c, /x, x/, ;q=1"} {
		f.Add(s)
	}
	offers := []Format{Turtle, NTriples, RDFXML}
	f.Fuzz(func(t *testing.T, accept string) {
		fm, mt, ok := Negotiate(accept, offers)
		if !ok {
			return
		}
		if !slices.Contains(offers, fm) {
			t.Fatalf("chose %v, not offered", fm)
		}
		if got, ok := FormatFor(mt); !ok || got != fm {
			t.Fatalf("media type %q is not of format %v", mt, fm)
		}
	})
}
