package rdf

import (
	"errors"
	"io"
	"strings"
	"testing"
)

const rdfDecl = `xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"`

// rdfxmlCases are the complete examples of the W3C RDF 1.1 XML Syntax
// Recommendation (example numbers in the names) and the forms the
// knakk/rdf reader missed, each with its triples in N-Triples.
var rdfxmlCases = []struct {
	name, doc, base, want string
}{
	{name: "example 7 complete document", doc: `<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
            xmlns:dc="http://purl.org/dc/elements/1.1/"
            xmlns:ex="http://example.org/stuff/1.0/">

  <rdf:Description rdf:about="http://www.w3.org/TR/rdf-syntax-grammar"
		   dc:title="RDF1.1 XML Syntax">
    <ex:editor>
      <rdf:Description ex:fullName="Dave Beckett">
	<ex:homePage rdf:resource="http://purl.org/net/dajobe/" />
      </rdf:Description>
    </ex:editor>
  </rdf:Description>

</rdf:RDF>`, want: `<http://www.w3.org/TR/rdf-syntax-grammar> <http://purl.org/dc/elements/1.1/title> "RDF1.1 XML Syntax" .
_:genid1 <http://example.org/stuff/1.0/fullName> "Dave Beckett" .
_:genid1 <http://example.org/stuff/1.0/homePage> <http://purl.org/net/dajobe/> .
<http://www.w3.org/TR/rdf-syntax-grammar> <http://example.org/stuff/1.0/editor> _:genid1 .
`},
	{name: "example 8 xml:lang", doc: `<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
            xmlns:dc="http://purl.org/dc/elements/1.1/">

  <rdf:Description rdf:about="http://www.w3.org/TR/rdf-syntax-grammar">
    <dc:title>RDF 1.1 XML Syntax</dc:title>
    <dc:title xml:lang="en">RDF 1.1 XML Syntax</dc:title>
    <dc:title xml:lang="en-US">RDF 1.1 XML Syntax</dc:title>
  </rdf:Description>

  <rdf:Description rdf:about="http://example.org/buecher/baum" xml:lang="de">
    <dc:title>Der Baum</dc:title>
    <dc:description>Das Buch ist außergewöhnlich</dc:description>
    <dc:title xml:lang="en">The Tree</dc:title>
  </rdf:Description>

</rdf:RDF>`, want: `<http://www.w3.org/TR/rdf-syntax-grammar> <http://purl.org/dc/elements/1.1/title> "RDF 1.1 XML Syntax" .
<http://www.w3.org/TR/rdf-syntax-grammar> <http://purl.org/dc/elements/1.1/title> "RDF 1.1 XML Syntax"@en .
<http://www.w3.org/TR/rdf-syntax-grammar> <http://purl.org/dc/elements/1.1/title> "RDF 1.1 XML Syntax"@en-us .
<http://example.org/buecher/baum> <http://purl.org/dc/elements/1.1/title> "Der Baum"@de .
<http://example.org/buecher/baum> <http://purl.org/dc/elements/1.1/description> "Das Buch ist außergewöhnlich"@de .
<http://example.org/buecher/baum> <http://purl.org/dc/elements/1.1/title> "The Tree"@en .
`},
	{name: "example 9 parseType Literal", doc: `<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
            xmlns:ex="http://example.org/stuff/1.0/">

  <rdf:Description rdf:about="http://example.org/item01">
    <ex:prop rdf:parseType="Literal"
             xmlns:a="http://example.org/a#"><a:Box required="true">
         <a:widget size="10" />
         <a:grommit id="23" /></a:Box>
    </ex:prop>
  </rdf:Description>

</rdf:RDF>`, want: `<http://example.org/item01> <http://example.org/stuff/1.0/prop> "<a:Box xmlns:a=\"http://example.org/a#\" required=\"true\">\n         <a:widget size=\"10\"></a:widget>\n         <a:grommit id=\"23\"></a:grommit></a:Box>\n    "^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#XMLLiteral> .
`},
	{name: "example 10 rdf:datatype", doc: `<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
            xmlns:ex="http://example.org/stuff/1.0/">

  <rdf:Description rdf:about="http://example.org/item01">
    <ex:size rdf:datatype="http://www.w3.org/2001/XMLSchema#int">123</ex:size>
  </rdf:Description>

</rdf:RDF>`, want: `<http://example.org/item01> <http://example.org/stuff/1.0/size> "123"^^<http://www.w3.org/2001/XMLSchema#int> .
`},
	{name: "example 11 rdf:nodeID", doc: `<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
            xmlns:dc="http://purl.org/dc/elements/1.1/"
            xmlns:ex="http://example.org/stuff/1.0/">

  <rdf:Description rdf:about="http://www.w3.org/TR/rdf-syntax-grammar"
		   dc:title="RDF/XML Syntax Specification (Revised)">
    <ex:editor rdf:nodeID="abc"/>
  </rdf:Description>

  <rdf:Description rdf:nodeID="abc"
                   ex:fullName="Dave Beckett">
    <ex:homePage rdf:resource="http://purl.org/net/dajobe/"/>
  </rdf:Description>

</rdf:RDF>`, want: `<http://www.w3.org/TR/rdf-syntax-grammar> <http://purl.org/dc/elements/1.1/title> "RDF/XML Syntax Specification (Revised)" .
<http://www.w3.org/TR/rdf-syntax-grammar> <http://example.org/stuff/1.0/editor> _:abc .
_:abc <http://example.org/stuff/1.0/fullName> "Dave Beckett" .
_:abc <http://example.org/stuff/1.0/homePage> <http://purl.org/net/dajobe/> .
`},
	{name: "example 12 parseType Resource", doc: `<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
            xmlns:dc="http://purl.org/dc/elements/1.1/"
            xmlns:ex="http://example.org/stuff/1.0/">

  <rdf:Description rdf:about="http://www.w3.org/TR/rdf-syntax-grammar"
		   dc:title="RDF/XML Syntax Specification (Revised)">
    <ex:editor rdf:parseType="Resource">
      <ex:fullName>Dave Beckett</ex:fullName>
      <ex:homePage rdf:resource="http://purl.org/net/dajobe/"/>
    </ex:editor>
  </rdf:Description>

</rdf:RDF>`, want: `<http://www.w3.org/TR/rdf-syntax-grammar> <http://purl.org/dc/elements/1.1/title> "RDF/XML Syntax Specification (Revised)" .
<http://www.w3.org/TR/rdf-syntax-grammar> <http://example.org/stuff/1.0/editor> _:b .
_:b <http://example.org/stuff/1.0/fullName> "Dave Beckett" .
_:b <http://example.org/stuff/1.0/homePage> <http://purl.org/net/dajobe/> .
`},
	{name: "example 13 property attributes on an empty property element", doc: `<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
            xmlns:dc="http://purl.org/dc/elements/1.1/"
            xmlns:ex="http://example.org/stuff/1.0/">

  <rdf:Description rdf:about="http://www.w3.org/TR/rdf-syntax-grammar"
		   dc:title="RDF/XML Syntax Specification (Revised)">
    <ex:editor ex:fullName="Dave Beckett" />
    <!-- Note the ex:homePage property has been ignored for this example -->
  </rdf:Description>

</rdf:RDF>`, want: `<http://www.w3.org/TR/rdf-syntax-grammar> <http://purl.org/dc/elements/1.1/title> "RDF/XML Syntax Specification (Revised)" .
<http://www.w3.org/TR/rdf-syntax-grammar> <http://example.org/stuff/1.0/editor> _:b .
_:b <http://example.org/stuff/1.0/fullName> "Dave Beckett" .
`},
	{name: "example 14 rdf:type property", doc: `<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
            xmlns:dc="http://purl.org/dc/elements/1.1/"
            xmlns:ex="http://example.org/stuff/1.0/">

  <rdf:Description rdf:about="http://example.org/thing">
    <rdf:type rdf:resource="http://example.org/stuff/1.0/Document"/>
    <dc:title>A marvelous thing</dc:title>
  </rdf:Description>

</rdf:RDF>`, want: `<http://example.org/thing> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/stuff/1.0/Document> .
<http://example.org/thing> <http://purl.org/dc/elements/1.1/title> "A marvelous thing" .
`},
	{name: "example 15 typed node element", doc: `<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
            xmlns:dc="http://purl.org/dc/elements/1.1/"
            xmlns:ex="http://example.org/stuff/1.0/">

  <ex:Document rdf:about="http://example.org/thing">
    <dc:title>A marvelous thing</dc:title>
  </ex:Document>

</rdf:RDF>`, want: `<http://example.org/thing> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/stuff/1.0/Document> .
<http://example.org/thing> <http://purl.org/dc/elements/1.1/title> "A marvelous thing" .
`},
	{name: "example 16 rdf:ID and xml:base", doc: `<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
            xmlns:ex="http://example.org/stuff/1.0/"
            xml:base="http://example.org/here/">

  <rdf:Description rdf:ID="snack">
    <ex:prop rdf:resource="fruit/apple"/>
  </rdf:Description>

</rdf:RDF>`, want: `<http://example.org/here/#snack> <http://example.org/stuff/1.0/prop> <http://example.org/here/fruit/apple> .
`},
	{name: "example 17 container membership", doc: `<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">

  <rdf:Seq rdf:about="http://example.org/favourite-fruit">
    <rdf:_1 rdf:resource="http://example.org/banana"/>
    <rdf:_2 rdf:resource="http://example.org/apple"/>
    <rdf:_3 rdf:resource="http://example.org/pear"/>
  </rdf:Seq>

</rdf:RDF>`, want: seqWant},
	{name: "example 18 rdf:li", doc: `<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">

  <rdf:Seq rdf:about="http://example.org/favourite-fruit">
    <rdf:li rdf:resource="http://example.org/banana"/>
    <rdf:li rdf:resource="http://example.org/apple"/>
    <rdf:li rdf:resource="http://example.org/pear"/>
  </rdf:Seq>

</rdf:RDF>`, want: seqWant},
	{name: "example 19 parseType Collection", doc: `<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
            xmlns:ex="http://example.org/stuff/1.0/">

  <rdf:Description rdf:about="http://example.org/basket">
    <ex:hasFruit rdf:parseType="Collection">
      <rdf:Description rdf:about="http://example.org/banana"/>
      <rdf:Description rdf:about="http://example.org/apple"/>
      <rdf:Description rdf:about="http://example.org/pear"/>
    </ex:hasFruit>
  </rdf:Description>

</rdf:RDF>`, want: `<http://example.org/basket> <http://example.org/stuff/1.0/hasFruit> _:l1 .
_:l1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> <http://example.org/banana> .
_:l1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> _:l2 .
_:l2 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> <http://example.org/apple> .
_:l2 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> _:l3 .
_:l3 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> <http://example.org/pear> .
_:l3 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> <http://www.w3.org/1999/02/22-rdf-syntax-ns#nil> .
`},
	{name: "example 20 rdf:ID reification", doc: `<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns:ex="http://example.org/stuff/1.0/"
         xml:base="http://example.org/triples/">
  <rdf:Description rdf:about="http://example.org/">
    <ex:prop rdf:ID="triple1">blah</ex:prop>
  </rdf:Description>

</rdf:RDF>`, want: `<http://example.org/> <http://example.org/stuff/1.0/prop> "blah" .
<http://example.org/triples/#triple1> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://www.w3.org/1999/02/22-rdf-syntax-ns#Statement> .
<http://example.org/triples/#triple1> <http://www.w3.org/1999/02/22-rdf-syntax-ns#subject> <http://example.org/> .
<http://example.org/triples/#triple1> <http://www.w3.org/1999/02/22-rdf-syntax-ns#predicate> <http://example.org/stuff/1.0/prop> .
<http://example.org/triples/#triple1> <http://www.w3.org/1999/02/22-rdf-syntax-ns#object> "blah" .
`},
	{name: "no rdf:RDF root: a single node element", doc: `<ex:Document ` + rdfDecl + ` xmlns:ex="http://example.org/stuff/1.0/" rdf:about="http://example.org/thing"><ex:title>T</ex:title></ex:Document>`,
		want: `<http://example.org/thing> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/stuff/1.0/Document> .
<http://example.org/thing> <http://example.org/stuff/1.0/title> "T" .
`},
	{name: "nested rdf:Description with rdf:about and rdf:nodeID (knakk gap)", doc: `<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/">
  <rdf:Description rdf:about="http://ex/a">
    <ex:knows><rdf:Description rdf:about="http://ex/b"><ex:name>B</ex:name></rdf:Description></ex:knows>
    <ex:knows>
      <rdf:Description rdf:nodeID="n1"><ex:name xml:lang="EN">N</ex:name></rdf:Description>
    </ex:knows>
    <ex:knows><ex:Person rdf:nodeID="n1" rdf:type="http://ex/Agent"/></ex:knows>
  </rdf:Description>
</rdf:RDF>`, want: `<http://ex/a> <http://ex/knows> <http://ex/b> .
<http://ex/b> <http://ex/name> "B" .
<http://ex/a> <http://ex/knows> _:n1 .
_:n1 <http://ex/name> "N"@en .
<http://ex/a> <http://ex/knows> _:n1 .
_:n1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://ex/Person> .
_:n1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://ex/Agent> .
`},
	{name: "document base, nested xml:base, empty literals, CDATA, entities", base: "http://doc.example/dir/file.rdf", doc: `<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/">
  <rdf:Description rdf:about="">
    <ex:p rdf:resource="#frag"/>
    <ex:q></ex:q>
    <ex:r/>
    <ex:s><![CDATA[a<b]]> &amp; &#x41;</ex:s>
  </rdf:Description>
  <rdf:Description rdf:about="x" xml:base="http://other/base/">
    <ex:p rdf:resource="../y" xml:lang="fr"/>
    <ex:t rdf:datatype="#dt" xml:lang="fr">5</ex:t>
  </rdf:Description>
</rdf:RDF>`, want: `<http://doc.example/dir/file.rdf> <http://ex/p> <http://doc.example/dir/file.rdf#frag> .
<http://doc.example/dir/file.rdf> <http://ex/q> "" .
<http://doc.example/dir/file.rdf> <http://ex/r> "" .
<http://doc.example/dir/file.rdf> <http://ex/s> "a<b & A" .
<http://other/base/x> <http://ex/p> <http://other/y> .
<http://other/base/x> <http://ex/t> "5"^^<http://other/base/#dt> .
`},
	{name: "unqualified rdf attributes (deprecated forms)", doc: `<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/">
  <rdf:Description about="http://ex/a"><ex:p resource="http://ex/b" type="http://ex/T"/></rdf:Description>
</rdf:RDF>`, want: `<http://ex/a> <http://ex/p> <http://ex/b> .
<http://ex/b> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://ex/T> .
`},
	{name: "empty collection, parseType Resource with rdf:li, default namespace", doc: `<rdf:RDF ` + rdfDecl + ` xmlns="http://ex/">
  <rdf:Description rdf:about="http://ex/a">
    <list rdf:parseType="Collection"/>
    <bag rdf:parseType="Resource"><rdf:li>one</rdf:li><rdf:li>two</rdf:li></bag>
  </rdf:Description>
  <rdf:Description/>
</rdf:RDF>`, want: `<http://ex/a> <http://ex/list> <http://www.w3.org/1999/02/22-rdf-syntax-ns#nil> .
<http://ex/a> <http://ex/bag> _:b .
_:b <http://www.w3.org/1999/02/22-rdf-syntax-ns#_1> "one" .
_:b <http://www.w3.org/1999/02/22-rdf-syntax-ns#_2> "two" .
`},
	{name: "XML literal: namespaces declared where used, attributes sorted, default namespace, escapes", doc: `<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/" xmlns:h="http://www.w3.org/1999/xhtml">
  <rdf:Description rdf:about="http://ex/a">
    <ex:p rdf:parseType="Literal"><h:b z="1" a="&lt;&quot;" ex:m="2">x &gt; y</h:b><i xmlns="http://i/"><j/></i>t<!-- c --></ex:p>
  </rdf:Description>
</rdf:RDF>`, want: `<http://ex/a> <http://ex/p> "<h:b xmlns:ex=\"http://ex/\" xmlns:h=\"http://www.w3.org/1999/xhtml\" a=\"&lt;&quot;\" z=\"1\" ex:m=\"2\">x &gt; y</h:b><i xmlns=\"http://i/\"><j></j></i>t<!-- c -->"^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#XMLLiteral> .
`},
}

const seqWant = `<http://example.org/favourite-fruit> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://www.w3.org/1999/02/22-rdf-syntax-ns#Seq> .
<http://example.org/favourite-fruit> <http://www.w3.org/1999/02/22-rdf-syntax-ns#_1> <http://example.org/banana> .
<http://example.org/favourite-fruit> <http://www.w3.org/1999/02/22-rdf-syntax-ns#_2> <http://example.org/apple> .
<http://example.org/favourite-fruit> <http://www.w3.org/1999/02/22-rdf-syntax-ns#_3> <http://example.org/pear> .
`

func mustRDFXML(t testing.TB, doc, base string) []Triple {
	t.Helper()
	ts, err := collectSeq(parseRDFXML(strings.NewReader(doc), base))
	if err != nil {
		t.Fatalf("parse rdf/xml: %v\n%s", err, doc)
	}
	return ts
}

func TestRDFXMLSpecExamples(t *testing.T) {
	for _, tc := range rdfxmlCases {
		t.Run(tc.name, func(t *testing.T) {
			got := mustRDFXML(t, tc.doc, tc.base)
			want := mustTurtle(t, tc.want, "")
			if !Isomorphic(got, want) {
				t.Errorf("got\n%swant\n%s", dump(got), dump(want))
			}
		})
	}
}

func TestRDFXMLWriterRoundTrip(t *testing.T) {
	for _, tc := range rdfxmlCases {
		t.Run(tc.name, func(t *testing.T) {
			in := mustRDFXML(t, tc.doc, tc.base)
			back, out := roundTrip(t, in, newRDFXMLWriter, parseRDFXML)
			if !Isomorphic(in, back) {
				t.Errorf("round trip changed the graph\nin:\n%sout:\n%s", dump(in), out)
			}
		})
	}
	for _, tc := range turtleCases {
		t.Run("turtle "+tc.name, func(t *testing.T) {
			in := mustTurtle(t, tc.doc, tc.base)
			back, out := roundTrip(t, in, newRDFXMLWriter, parseRDFXML)
			if !Isomorphic(in, back) {
				t.Errorf("round trip changed the graph\nin:\n%sout:\n%s", dump(in), out)
			}
		})
	}
	// An empty graph is still a document.
	back, out := roundTrip(t, nil, newRDFXMLWriter, parseRDFXML)
	if len(back) != 0 || !strings.Contains(out, "<rdf:RDF") {
		t.Errorf("empty graph: %q -> %v", out, back)
	}
}

func TestRDFXMLWriterRefuses(t *testing.T) {
	bad := []Triple{
		{IRI("http://s"), IRI("http://ex/"), IRI("http://o")},       // no local name
		{IRI("http://s"), IRI("urn:123"), IRI("http://o")},          // local name cannot start with a digit
		{IRI("http://s"), IRI(RDFNS + "li"), IRI("http://o")},       // reserved
		{IRI("http://s"), IRI("http://ex/xmlfoo"), IRI("http://o")}, // reserved by XML
		{IRI("http://s"), IRI("http://ex/p"), Literal("bell \a")},   // not an XML character
	}
	for _, tr := range bad {
		w := newRDFXMLWriter(io.Discard)
		if err := w.Write(tr); !errors.Is(err, ErrNotSerializable) {
			t.Errorf("Write(%v) = %v, want ErrNotSerializable", tr, err)
		}
	}
}

func TestRDFXMLErrors(t *testing.T) {
	tests := []struct{ name, doc, msg string }{
		{"not XML", `hello`, "text outside the root"},
		{"empty document", ``, "no root element"},
		{"unclosed", `<rdf:RDF ` + rdfDecl + `><rdf:Description>`, "unexpected EOF"},
		{"text in node element", `<rdf:RDF ` + rdfDecl + `><rdf:Description>text</rdf:Description></rdf:RDF>`, "not allowed here"},
		{"two node elements in a property", `<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/"><rdf:Description><ex:p><rdf:Description/><rdf:Description/></ex:p></rdf:Description></rdf:RDF>`, "more than one node element"},
		{"text and node element", `<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/"><rdf:Description><ex:p>x<rdf:Description/></ex:p></rdf:Description></rdf:RDF>`, "both text"},
		{"unqualified property", `<rdf:RDF ` + rdfDecl + `><rdf:Description><p>x</p></rdf:Description></rdf:RDF>`, "no namespace"},
		{"undeclared prefix", `<rdf:RDF ` + rdfDecl + `><rdf:Description><ex:p>x</ex:p></rdf:Description></rdf:RDF>`, "undeclared namespace prefix"},
		{"bad nodeID", `<rdf:RDF ` + rdfDecl + `><rdf:Description rdf:nodeID="-b1"/></rdf:RDF>`, "not an XML name"},
		{"bad xml:lang", `<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/"><rdf:Description><ex:p xml:lang="e n">x</ex:p></rdf:Description></rdf:RDF>`, "not a language tag"},
		{"about and nodeID", `<rdf:RDF ` + rdfDecl + `><rdf:Description rdf:about="x" rdf:nodeID="y"/></rdf:RDF>`, "more than one"},
		{"rdf:li node element", `<rdf:RDF ` + rdfDecl + `><rdf:li/></rdf:RDF>`, "not allowed as a node element"},
		{"rdf:Description property", `<rdf:RDF ` + rdfDecl + `><rdf:Description><rdf:Description/></rdf:Description></rdf:RDF>`, "not allowed as a property element"},
		{"unqualified attribute", `<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/"><rdf:Description about="http://a"><ex:p rdf:resource="a" foo="z"/></rdf:Description></rdf:RDF>`, "attribute foo has no namespace"},
		{"bagID", `<rdf:RDF ` + rdfDecl + `><rdf:Description rdf:bagID="x"/></rdf:RDF>`, "removed from RDF"},
		{"undefined entity", `<rdf:RDF ` + rdfDecl + `><rdf:Description rdf:about="&foo;"/></rdf:RDF>`, "entity"},
		{"text after the root", `<rdf:RDF ` + rdfDecl + `/>junk`, "text outside the root"},
		{"two roots", `<rdf:RDF ` + rdfDecl + `/><rdf:RDF ` + rdfDecl + `/>`, "more than one root"},
		{"resource and nodeID", `<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/"><rdf:Description><ex:p rdf:resource="a" rdf:nodeID="b"/></rdf:Description></rdf:RDF>`, "both rdf:resource and rdf:nodeID"},
		{"content in empty property", `<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/"><rdf:Description><ex:p rdf:resource="a">text</ex:p></rdf:Description></rdf:RDF>`, "not allowed here"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := collectSeq(parseRDFXML(strings.NewReader(tc.doc), ""))
			var xe *SyntaxError
			if !errors.As(err, &xe) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v, want *SyntaxError wrapping ErrSyntax", err)
			}
			if xe.Line < 1 || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v (line %d), want one containing %q", err, xe.Line, tc.msg)
			}
		})
	}
}

// TestRDFXMLHostile: entity expansion, deep nesting and huge tokens end
// in a syntax error, with memory bounded.
func TestRDFXMLHostile(t *testing.T) {
	laughs := `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/"><rdf:Description rdf:about="http://ex/a"><ex:p>&lol9;</ex:p></rdf:Description></rdf:RDF>`
	deep := `<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/">` +
		strings.Repeat(`<rdf:Description><ex:p>`, 600) + strings.Repeat(`</ex:p></rdf:Description>`, 600) + `</rdf:RDF>`
	deepLiteral := `<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/"><rdf:Description><ex:p rdf:parseType="Literal">` +
		strings.Repeat(`<a>`, 1200) + strings.Repeat(`</a>`, 1200) + `</ex:p></rdf:Description></rdf:RDF>`
	huge := `<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/"><rdf:Description rdf:about="` +
		strings.Repeat("a", rdfxmlMaxToken+20000) + `"/></rdf:RDF>`
	tests := []struct{ name, doc, msg string }{
		{"billion laughs", laughs, "entity"},
		{"1200 nested elements", deep, "nested deeper"},
		{"1200 nested elements in an XML literal", deepLiteral, "nested deeper"},
		{"attribute over the token limit", huge, "too large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := collectSeq(parseRDFXML(strings.NewReader(tc.doc), ""))
			if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want a syntax error containing %q", err, tc.msg)
			}
		})
	}
	// Just under the limits is fine.
	ok := `<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/"><rdf:Description rdf:about="http://ex/` +
		strings.Repeat("a", 1<<20) + `"><ex:p>` + strings.Repeat("b", 1<<20) + `</ex:p></rdf:Description></rdf:RDF>`
	if ts := mustRDFXML(t, ok, ""); len(ts) != 1 || len(ts[0].O.Value) != 1<<20 {
		t.Errorf("1 MiB attribute and text: got %d triples", len(ts))
	}
}

func TestRDFXMLLatin1(t *testing.T) {
	doc := "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<rdf:RDF " + rdfDecl + " xmlns:ex=\"http://ex/\"><rdf:Description rdf:about=\"http://ex/a\"><ex:p>caf\xe9</ex:p></rdf:Description></rdf:RDF>"
	ts := mustRDFXML(t, doc, "")
	if len(ts) != 1 || ts[0].O != Literal("café") {
		t.Errorf("got %v", ts)
	}
	_, err := collectSeq(parseRDFXML(strings.NewReader(`<?xml version="1.0" encoding="EBCDIC"?><a/>`), ""))
	if !errors.Is(err, ErrSyntax) {
		t.Errorf("unknown encoding: %v, want a syntax error", err)
	}
}

// brokenReader gives some bytes, then a non-EOF error.
type brokenReader struct{ data string }

var errDisk = errors.New("disk on fire")

func (f *brokenReader) Read(b []byte) (int, error) {
	if f.data == "" {
		return 0, errDisk
	}
	n := copy(b, f.data)
	f.data = f.data[n:]
	return n, nil
}

// TestReadersIOError: a failing reader is reported as such, not as a
// syntax error.
func TestReadersIOError(t *testing.T) {
	_, err := collectSeq(parseRDFXML(&brokenReader{data: `<rdf:RDF ` + rdfDecl + `><rdf:Descr`}, ""))
	if !errors.Is(err, errDisk) || errors.Is(err, ErrSyntax) {
		t.Errorf("rdf/xml: %v, want the reader's error and no ErrSyntax", err)
	}
	_, err = collectSeq(parseTurtle(&brokenReader{data: `<a> <b> "abc`}, ""))
	if !errors.Is(err, errDisk) || errors.Is(err, ErrSyntax) {
		t.Errorf("turtle: %v, want the reader's error and no ErrSyntax", err)
	}
	_, err = collectSeq(parseTurtle(&brokenReader{data: `<a> <b> <c> . <d> <e>`}, ""))
	if !errors.Is(err, errDisk) || errors.Is(err, ErrSyntax) {
		t.Errorf("turtle: %v, want the reader's error and no ErrSyntax", err)
	}
}

// TestReadersLabelsWriteAsNTriples: the labels the readers invent, and
// written ones that are not N-Triples labels, go through the N-Triples
// writer unchanged.
func TestReadersLabelsWriteAsNTriples(t *testing.T) {
	var all []Triple
	for _, tc := range turtleCases {
		all = append(all, mustTurtle(t, tc.doc, tc.base)...)
	}
	for _, tc := range rdfxmlCases {
		all = append(all, mustRDFXML(t, tc.doc, tc.base)...)
	}
	odd := mustRDFXML(t, `<rdf:RDF `+rdfDecl+` xmlns:ex="http://ex/"><rdf:Description rdf:nodeID="ªb"><ex:p rdf:nodeID="genid-1"/></rdf:Description></rdf:RDF>`, "")
	if odd[0].S != Blank("genid-x__C2_AAb") || odd[0].O != Blank("genid-w1") {
		t.Errorf("labels: got %v %v, want _:genid-x__C2_AAb _:genid-w1", odd[0].S, odd[0].O)
	}
	checkNTriples(t, append(all, odd...))
}
