package ldes

import (
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/rdf"
)

const pre = "@prefix tree: <https://w3id.org/tree#> . @prefix ldes: <https://w3id.org/ldes#> . @prefix as: <https://www.w3.org/ns/activitystreams#> . @prefix dct: <http://purl.org/dc/terms/> . @prefix schema: <http://schema.org/> .\n"

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      string // members as "object|deleted|time|len|sha"
		rels, err string
	}{
		{name: "versions", doc: pre + `<s> a ldes:EventStream ; ldes:versionOfPath dct:isVersionOf ; ldes:timestampPath dct:created ; tree:member <v1>, <v2> .
<v1> dct:isVersionOf <a> ; dct:created "2021-01-01T00:00:00Z" .
<v2> dct:isVersionOf <b> ; dct:created "2021-01-02T00:00:00" ; schema:contentSize 3 ; schema:sha256 "ABC" .`,
			want: "https://e.org/a|false|2021-01-01T00:00:00Z|-1| https://e.org/b|false|2021-01-02T00:00:00Z|3|abc"},
		{name: "activity members", doc: pre + `<s> a ldes:EventStream ; tree:member <m1>, _:m2 .
<m1> a as:Delete ; as:object <x> ; as:published "2022-01-01T00:00:00Z" .
_:m2 a as:Create ; as:object <y> .`,
			want: "https://e.org/x|true|2022-01-01T00:00:00Z|-1| https://e.org/y|false|0001-01-01T00:00:00Z|-1|"},
		{name: "plain members", doc: pre + `<s> tree:member <m> .`, want: "https://e.org/m|false|0001-01-01T00:00:00Z|-1|"},
		{name: "relations", doc: pre + `<> a tree:Node ; tree:relation [ a tree:LessThanRelation ; tree:node <n0> ; tree:path as:published ; tree:value "2020-01-01T00:00:00Z" ], [ tree:node <n2> ] .`,
			rels: ",https://e.org/n2,, https://w3id.org/tree#LessThanRelation,https://e.org/n0,https://www.w3.org/ns/activitystreams#published,2020-01-01T00:00:00Z"},
		{name: "blank member without object", doc: pre + `<s> tree:member [ dct:created "2021-01-01T00:00:00Z" ] .`, err: "names no object"},
		{name: "bad timestamp", doc: pre + `<s> ldes:timestampPath dct:created ; tree:member <m> . <m> dct:created "yesterday" .`, err: "timestamp"},
		{name: "not LDES", doc: pre + `<a> <b> <c> .`, err: "not a Linked Data Event Stream"},
		{name: "syntax", doc: pre + `<a> <b> .`, err: "https://e.org/doc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decode(strings.NewReader(tc.doc), rdf.Turtle, "https://e.org/doc", "https://e.org/doc")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "https://e.org/doc") {
					t.Fatalf("err = %v, want one naming the document and containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range d.Members {
				got = append(got, strings.Join([]string{m.Object, strconv.FormatBool(m.Deleted), m.Time.UTC().Format("2006-01-02T15:04:05Z07:00"), strconv.FormatInt(m.Length, 10), m.SHA256}, "|"))
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("members\n got %s\nwant %s", g, tc.want)
			}
			var rels []string
			for _, r := range d.Relations {
				rels = append(rels, r.Type+","+r.Node+","+r.Path+","+r.Value)
			}
			sort.Strings(rels)
			if g := strings.Join(rels, " "); g != tc.rels {
				t.Errorf("relations %q, want %q", rels, tc.rels)
			}
		})
	}
}

func TestSniff(t *testing.T) {
	for doc, want := range map[string]bool{
		pre + `<s> a ldes:EventStream .`:                                                true,
		`<s> <https://w3id.org/tree#view> <v> .`:                                        true,
		`{"@context": {"ldes": "https://w3id.org/ldes#"}, "@type": "ldes:EventStream"}`: true,
		`<urlset>`:                     false,
		`{"type":"OrderedCollection"}`: false,
	} {
		if got := Sniff([]byte(doc)); got != want {
			t.Errorf("Sniff(%s) = %v", doc, got)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(pre + `<s> a ldes:EventStream ; tree:member <m> . <m> a as:Update ; as:object <o> ; as:published "2021-01-01T00:00:00Z" .`)
	f.Add(pre + `<> tree:relation [ a tree:GreaterThanRelation ; tree:node <n> ; tree:value 3 ] .`)
	f.Add(`<a> <https://w3id.org/tree#member> _:b .`)
	f.Fuzz(func(t *testing.T, doc string) {
		d, err := Decode(strings.NewReader(doc), rdf.Turtle, "https://e.org/", "u")
		if err != nil {
			return
		}
		for _, m := range d.Members {
			if m.Object == "" {
				t.Fatalf("a member without an object: %+v", m)
			}
		}
		for _, r := range d.Relations {
			if r.Node == "" {
				t.Fatal("a relation without a node")
			}
		}
	})
}

// TestDecodeSharedBlankNodes: members that all reach one large blank node
// structure would each copy it (n members × m statements from a document
// of n+m): the statements given with members are bounded like those of
// the document.
func TestDecodeSharedBlankNodes(t *testing.T) {
	const n, m = 600, 600 // 360,000 copies from 1,800 statements
	var b strings.Builder
	b.WriteString(pre + "<s> a ldes:EventStream .\n")
	for i := range n {
		b.WriteString("<s> tree:member <v" + strconv.Itoa(i) + "> . <v" + strconv.Itoa(i) + "> dct:isVersionOf <a> ; dct:hasPart _:big .\n")
	}
	for i := range m {
		b.WriteString("_:big dct:p" + strconv.Itoa(i) + " \"x\" .\n")
	}
	_, err := Decode(strings.NewReader(b.String()), rdf.Turtle, "https://e.org/doc", "https://e.org/doc")
	if err == nil || !strings.Contains(err.Error(), "https://e.org/doc") {
		t.Fatalf("err = %v, want one naming the document", err)
	}
}
