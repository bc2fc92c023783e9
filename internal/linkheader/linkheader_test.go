package linkheader

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	base, _ := url.Parse("http://h.example/dir/page?q=1")
	type want struct {
		url    string
		rel    []string
		params map[string]string
		raw    string
	}
	for _, tc := range []struct {
		name   string
		fields []string
		want   []want
	}{
		{"one", []string{`<http://h.example/a>; rel="self"`}, []want{{"http://h.example/a", []string{"self"}, nil, `<http://h.example/a>; rel="self"`}}},
		{"two fields (RFC 9110 §5.3)", []string{`</t>; rel="self"`, `<http://hub.example/>; rel=hub`},
			[]want{{"http://h.example/t", []string{"self"}, nil, `</t>; rel="self"`}, {"http://hub.example/", []string{"hub"}, nil, `<http://hub.example/>; rel=hub`}}},
		{"two in one field", []string{`<a>; rel=up, <b>;rel=next`},
			[]want{{"http://h.example/dir/a", []string{"up"}, nil, `<a>; rel=up`}, {"http://h.example/dir/b", []string{"next"}, nil, `<b>;rel=next`}}},
		{"quoted comma and semicolon", []string{`<a>; title="x, y; z"; rel="describedby", <b>; rel=hub`},
			[]want{{"http://h.example/dir/a", []string{"describedby"}, map[string]string{"title": "x, y; z"}, `<a>; title="x, y; z"; rel="describedby"`},
				{"http://h.example/dir/b", []string{"hub"}, nil, `<b>; rel=hub`}}},
		{"escaped quote", []string{`<a>; title="say \"hi\", ok"; rel=x`}, []want{{"http://h.example/dir/a", []string{"x"}, map[string]string{"title": `say "hi", ok`}, `<a>; title="say \"hi\", ok"; rel=x`}}},
		{"case-insensitive name, several rels", []string{`<a>; REL="Self  HUB"`}, []want{{"http://h.example/dir/a", []string{"Self", "HUB"}, nil, `<a>; REL="Self  HUB"`}}},
		{"first rel wins", []string{`<a>; rel=one; rel=two`}, []want{{"http://h.example/dir/a", []string{"one"}, nil, `<a>; rel=one; rel=two`}}},
		{"no rel", []string{`<a>; type="text/html"`}, []want{{"http://h.example/dir/a", nil, map[string]string{"type": "text/html"}, `<a>; type="text/html"`}}},
		{"absolute path, query, spaces", []string{` <  /x?y=%7e  > ;rel = "up" `}, []want{{"http://h.example/x?y=%7e", []string{"up"}, nil, `<  /x?y=%7e  > ;rel = "up"`}}},
		{"junk skipped", []string{`garbage, "quoted, <junk>", <a>; rel=x`}, []want{{"http://h.example/dir/a", []string{"x"}, nil, `<a>; rel=x`}}},
		{"junk after a link", []string{`<a>; rel=x junk "q,q", <b>; rel=y`},
			[]want{{"http://h.example/dir/a", []string{"x"}, nil, `<a>; rel=x junk "q,q"`}, {"http://h.example/dir/b", []string{"y"}, nil, `<b>; rel=y`}}},
		{"unterminated target", []string{`<a; rel=x`}, nil},
		{"empty fields", []string{"", " , ,"}, nil},
		{"valueless param", []string{`<a>; crossorigin; rel=x`}, []want{{"http://h.example/dir/a", []string{"x"}, map[string]string{"crossorigin": ""}, `<a>; crossorigin; rel=x`}}},
	} {
		got := Parse(base, tc.fields)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d links %+v, want %d", tc.name, len(got), got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			g := got[i]
			if g.URL != w.url || !reflect.DeepEqual(g.Rel, w.rel) || !reflect.DeepEqual(g.Params, w.params) || g.Raw != w.raw {
				t.Errorf("%s: link %d = %+v, want %+v", tc.name, i, g, w)
			}
		}
	}
}

func TestHasRelAndFind(t *testing.T) {
	ls := Parse(nil, []string{`<x>; rel="alternate SELF"`, `<y>; rel=Hub`})
	if ls[0].URL != "x" || ls[0].Target != "x" {
		t.Errorf("without base: %+v", ls[0])
	}
	if l, ok := Find(ls, "self"); !ok || l.Target != "x" {
		t.Errorf("Find self: %+v %v", l, ok)
	}
	if l, ok := Find(ls, "hub"); !ok || l.Target != "y" {
		t.Errorf("Find hub: %+v %v", l, ok)
	}
	if _, ok := Find(ls, "up"); ok {
		t.Error("Find up found something")
	}
}

func TestMaxLinks(t *testing.T) {
	f := strings.Repeat("<a>; rel=x, ", 1000)
	if n := len(Parse(nil, []string{f, f})); n != MaxLinks {
		t.Errorf("%d links, want the cap %d", n, MaxLinks)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`<http://h/a>; rel="self", <http://h/hub>; rel=hub`,
		`<a>; title="x, y; z"; rel="describedby"`,
		`<a>; title="say \"hi\", ok"; rel=x`,
		`garbage, "quoted, <junk>", <a>; rel=x`,
		`<a; rel=x`, `<>`, `<a>;;;=;rel`, `<a>; rel="unterminated`,
		`<//[::1]:80/x>; rel=up`, `<%zz>; rel=x`, "<\x00>; rel=\xff",
	} {
		f.Add(s, `<b>; rel=next`)
	}
	base, _ := url.Parse("http://h.example/d/p")
	f.Fuzz(func(t *testing.T, a, b string) {
		ls := Parse(base, []string{a, b})
		if len(ls) > MaxLinks {
			t.Fatalf("%d links", len(ls))
		}
		for _, l := range ls {
			if !strings.HasPrefix(l.Raw, "<") {
				t.Fatalf("raw %q does not start with <", l.Raw)
			}
			if !strings.Contains(a, l.Raw) && !strings.Contains(b, l.Raw) {
				t.Fatalf("raw %q is not part of the input", l.Raw)
			}
			if strings.ContainsAny(l.Target, "<>") {
				t.Fatalf("target %q holds an angle bracket", l.Target)
			}
			for _, r := range l.Rel {
				if r == "" || strings.ContainsAny(r, " \t") {
					t.Fatalf("rel %q", r)
				}
			}
			// Reparsing a link's raw text gives the same link.
			again := Parse(base, []string{l.Raw})
			if len(again) != 1 || again[0].URL != l.URL || !reflect.DeepEqual(again[0].Rel, l.Rel) {
				if utf8.ValidString(l.Raw) {
					t.Fatalf("reparse of %q: %+v, was %+v", l.Raw, again, l)
				}
			}
		}
	})
}
