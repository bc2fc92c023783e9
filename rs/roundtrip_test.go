package rs

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// validExamples returns the XML examples of shared/conformance/examples
// whose verdict is VALID or VALID*.
func validExamples(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join(conformanceDir(t), "examples")
	f, err := os.Open(filepath.Join(dir, "verdicts.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var files []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, verdict, ok := strings.Cut(sc.Text(), "\t")
		if !ok || strings.HasPrefix(name, "#") || !strings.HasSuffix(name, ".xml") {
			continue
		}
		if v := strings.TrimSpace(verdict); v == "VALID" || v == "VALID*" {
			files = append(files, filepath.Join(dir, name))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no valid examples found")
	}
	return files
}

type rtDoc struct {
	Head    *Head
	Entries []*Entry
}

func decodeDoc(t *testing.T, r io.Reader) rtDoc {
	t.Helper()
	d := NewDecoder(r)
	h, err := d.Head()
	if err != nil {
		t.Fatal(err)
	}
	var es []*Entry
	for e, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	// Root elements after the first item are merged into the head.
	return rtDoc{Head: h, Entries: es}
}

var modelCmp = []cmp.Option{
	cmp.Comparer(func(a, b Time) bool { return a.Same(b) }),
	cmpopts.EquateEmpty(),
}

// TestRoundTrip decodes every valid example, encodes it and decodes the
// result: the two models must be equal, times compared as written (Same).
// Every example validates against the XSDs, and so must its re-encoding.
func TestRoundTrip(t *testing.T) {
	v := newXSDValidator(t)
	for _, path := range validExamples(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			first := decodeDoc(t, f)

			var buf bytes.Buffer
			enc := NewEncoder(&buf)
			if err := enc.WriteHead(first.Head); err != nil {
				t.Fatal(err)
			}
			for _, e := range first.Entries {
				if err := enc.WriteEntry(e); err != nil {
					t.Fatal(err)
				}
			}
			if err := enc.Close(); err != nil {
				t.Fatal(err)
			}
			if err := v.Validate(path, buf.Bytes()); err != nil {
				t.Error(err)
			}
			second := decodeDoc(t, bytes.NewReader(buf.Bytes()))
			if diff := cmp.Diff(first, second, modelCmp...); diff != "" {
				t.Errorf("model changed by encode+decode (-first +second):\n%s\nencoded:\n%s", diff, buf.Bytes())
			}
		})
	}
}

// TestSplitterRoundTrip reads the parts of a split change list back with
// the Decoder: the entries are those added, in order, and the index lists
// the parts.
func TestSplitterRoundTrip(t *testing.T) {
	head := Head{MD: Metadata{Capability: CapChangeList, From: second(0), Until: second(100)}, Links: []Link{{Rel: RelUp, Href: upURL}}}
	entries := changeEntries(3*3 + 5)
	entries[4].Links = []Link{{Rel: RelAlternate, Href: "https://example.com/alt?a&b", Type: "text/html", Pri: 2}}
	entries[5].MD.Extra = []Attr{{Space: "http://example.org/x/", Local: "note", Value: "a\tb\"c"}}
	res, fs := split(t, SplitConfig{Head: head, MaxEntries: 3}, entries)
	var got []*Entry
	for _, u := range res.URLs[:res.Parts] {
		got = append(got, decodeDoc(t, bytes.NewReader(fs.docs[u].Bytes())).Entries...)
	}
	want := make([]*Entry, len(entries))
	for i := range entries {
		want[i] = &entries[i]
	}
	if diff := cmp.Diff(want, got, modelCmp...); diff != "" {
		t.Errorf("entries (-added +read back):\n%s", diff)
	}
	idx := decodeDoc(t, bytes.NewReader(fs.docs[listURL].Bytes()))
	if !idx.Head.IsIndex() || len(idx.Entries) != res.Parts || !idx.Head.MD.Until.Same(head.MD.Until) {
		t.Errorf("index head %+v with %d entries", idx.Head, len(idx.Entries))
	}
}
