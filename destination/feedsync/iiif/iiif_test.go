package iiif

import (
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		kind, err string
		items     int
	}{
		{"collection", `{"id":"https://e.org/c","type":"OrderedCollection","last":{"id":"https://e.org/p2"}}`, KindCollection, "", 0},
		{"collection with string links and array type", `{"type":["OrderedCollection"],"last":"p2","first":"p0"}`, KindCollection, "", 0},
		{"collection without last", `{"type":"OrderedCollection"}`, "", "without last", 0},
		{"page", `{"type":"OrderedCollectionPage","prev":{"id":"p0"},"orderedItems":[{"type":"Update","object":{"id":"x"},"endTime":"2018-03-10T10:00:00Z"},{"type":"Refresh","startTime":"2018-03-10T11:00:00Z"}]}`, KindPage, "", 2},
		{"partOf array", `{"type":"OrderedCollectionPage","partOf":[{"id":"c"}],"orderedItems":[]}`, KindPage, "", 0},
		{"not a feed", `{"type":"Manifest"}`, "", "not an IIIF", 0},
		{"malformed", `{"type":"OrderedCollectionPage",`, "", "malformed JSON", 0},
		{"trailing data", `{"type":"OrderedCollectionPage"} {}`, "", "after the document", 0},
		{"bad time", `{"type":"OrderedCollectionPage","orderedItems":[{"type":"Update","endTime":"yesterday"}]}`, "", "activity 0", 0},
		{"bad link", `{"type":"OrderedCollectionPage","prev":3}`, "", "link", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decode(strings.NewReader(tc.doc), "https://e.org/page")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "https://e.org/page") {
					t.Fatalf("err = %v, want one naming the page and containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Kind != tc.kind || len(d.Items) != tc.items {
				t.Errorf("kind %q items %d, want %q %d", d.Kind, len(d.Items), tc.kind, tc.items)
			}
		})
	}
}

func TestSniff(t *testing.T) {
	for doc, want := range map[string]bool{
		` {"@context":"x","type":"OrderedCollection"}`: true,
		`{"type": "OrderedCollectionPage"}`:            true,
		`<urlset>`:                                     false,
		`{"type":"Manifest"}`:                          false,
	} {
		if got := Sniff([]byte(doc)); got != want {
			t.Errorf("Sniff(%s) = %v", doc, got)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(`{"type":"OrderedCollection","last":{"id":"p"}}`)
	f.Add(`{"type":"OrderedCollectionPage","prev":"p0","orderedItems":[{"type":"Move","object":{"id":"a","size":3,"digest":"md5:00"},"target":"b","endTime":"2018-03-10T10:00:00Z"}]}`)
	f.Add(`{"type":["x","OrderedCollectionPage"],"partOf":[["c"]]}`)
	f.Fuzz(func(t *testing.T, doc string) {
		d, err := Decode(strings.NewReader(doc), "u")
		if err != nil {
			return
		}
		if d.Kind != KindCollection && d.Kind != KindPage {
			t.Fatalf("kind %q accepted", d.Kind)
		}
		if d.Kind == KindCollection && d.Last == "" {
			t.Fatal("a collection without last accepted")
		}
		if len(d.Items) > MaxItems {
			t.Fatal("too many items accepted")
		}
	})
}
