package harvest

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// Declarations move to where they are used; unused ones go.
		{`<?xml version="1.0"?><a:r xmlns:a="A" xmlns:b="B" xmlns:c="C"><b:x/></a:r>`, `<a:r xmlns:a="A"><b:x xmlns:b="B"></b:x></a:r>`},
		// Attributes sorted by namespace URI, then local name; unprefixed first.
		{`<r xmlns:z="A" xmlns:a="B" a:k="1" z:k="2" b="3" a="4"/>`, `<r xmlns:a="B" xmlns:z="A" a="4" b="3" z:k="2" a:k="1"></r>`},
		// Default namespace: declared where used, undeclared with xmlns="".
		{`<r xmlns="D"><x xmlns=""><y/></x><z/></r>`, `<r xmlns="D"><x xmlns=""><y></y></x><z></z></r>`},
		{`<r xmlns=""/>`, `<r></r>`},
		// Rebinding a prefix renders it again; the same binding does not.
		{`<p:r xmlns:p="1"><p:x xmlns:p="2"><p:y xmlns:p="2"/></p:x></p:r>`, `<p:r xmlns:p="1"><p:x xmlns:p="2"><p:y></p:y></p:x></p:r>`},
		// Escapes: text and attributes; CDATA becomes text; comments go.
		{"<r a='x\"&lt;&#9;&#10;&#13;'>&amp;&lt;&gt;\r\n<![CDATA[<&>]]><!-- c --><?pi  data?></r>", `<r a="x&quot;&lt;&#x9;&#xA;&#xD;">&amp;&lt;&gt;` + "\n" + `&lt;&amp;&gt;<?pi data?></r>`},
		// xml:lang needs no declaration.
		{`<r xml:lang="en"/>`, `<r xml:lang="en"></r>`},
		{"  <!-- before --> <r/> \n", `<r></r>`},
	} {
		got, err := Canonical([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonical(%q)\n = %q, %v\nwant %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{
		``, `<a>`, `<a></b>`, `<a/><b/>`, `text<a/>`, `<p:a/>`, `<a p:x="1"/>`,
		`<a x="1" x="2"/>`, `<a xmlns:p="P" xmlns:q="P" p:x="1" q:x="2"/>`,
		"<a>\xff</a>", "<a>\x01</a>", `<a>&nbsp;</a>`, `<!DOCTYPE a><a/>`, `<a><!DOCTYPE a></a>`,
		`<a:b:c xmlns:a="A"/>`, `<a xmlns:xml="urn:x"/>`, `<a xmlns:xmlns="urn:x"/>`, `<a xmlns:p=""/>`,
		`<a xmlns:p="http://www.w3.org/XML/1998/namespace"/>`, `<a xmlns="http://www.w3.org/2000/xmlns/"/>`, `<a><?xml version="1.0"?></a>`,
	} {
		if got, err := Canonical([]byte(in)); !errors.Is(err, errMalformed) {
			t.Errorf("Canonical(%q) = %q, %v; want malformed", in, got, err)
		}
	}
}

// FuzzCanonical: the canonical form is well-formed XML, canonical
// itself (a fixed point), and keeps the element names and text.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`<a:r xmlns:a="A" xmlns:b="B"><b:x b:y="1" z="&amp;"/></a:r>`,
		`<r xmlns="D"><x xmlns=""/>t&#xD;<![CDATA[x]]></r>`,
		`<r xml:lang="en" a="&#9;"><?p i?><!--c--></r>`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := Canonical(in)
		if err != nil {
			return
		}
		again, err := Canonical(c)
		if err != nil || string(again) != string(c) {
			t.Fatalf("not a fixed point: %q -> %q -> %q, %v", in, c, again, err)
		}
		if text(t, in) != text(t, c) {
			t.Fatalf("text changed: %q -> %q", in, c)
		}
	})
}

// text is the element names (namespace URI and local name) and character
// data of doc, as encoding/xml reads them.
func text(t *testing.T, doc []byte) string {
	d := xml.NewDecoder(strings.NewReader(string(doc)))
	var b strings.Builder
	depth := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			depth++
			b.WriteString("<{" + x.Name.Space + "}" + x.Name.Local)
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth > 0 {
				b.Write(x)
			}
		}
	}
}
