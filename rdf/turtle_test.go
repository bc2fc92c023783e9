package rdf

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// turtleCases are the examples of the W3C Turtle 1.1 Recommendation
// (section numbers in the names) and edge cases of the grammar, each with
// the triples it means written in N-Triples (a subset of Turtle).
var turtleCases = []struct {
	name, doc, base, want string
}{
	{name: "2 example 1", doc: `@base <http://example.org/> .
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix foaf: <http://xmlns.com/foaf/0.1/> .
@prefix rel: <http://www.perceive.net/schemas/relationship/> .

<#green-goblin>
    rel:enemyOf <#spiderman> ;
    a foaf:Person ;    # in the context of the Marvel universe
    foaf:name "Green Goblin" .

<#spiderman>
    rel:enemyOf <#green-goblin> ;
    a foaf:Person ;
    foaf:name "Spiderman", "Человек-паук"@ru .
`, want: `<http://example.org/#green-goblin> <http://www.perceive.net/schemas/relationship/enemyOf> <http://example.org/#spiderman> .
<http://example.org/#green-goblin> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://xmlns.com/foaf/0.1/Person> .
<http://example.org/#green-goblin> <http://xmlns.com/foaf/0.1/name> "Green Goblin" .
<http://example.org/#spiderman> <http://www.perceive.net/schemas/relationship/enemyOf> <http://example.org/#green-goblin> .
<http://example.org/#spiderman> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://xmlns.com/foaf/0.1/Person> .
<http://example.org/#spiderman> <http://xmlns.com/foaf/0.1/name> "Spiderman" .
<http://example.org/#spiderman> <http://xmlns.com/foaf/0.1/name> "Человек-паук"@ru .
`},
	{name: "2.2 example 2", doc: `<http://example.org/#spiderman> <http://www.perceive.net/schemas/relationship/enemyOf> <http://example.org/#green-goblin> .`,
		want: `<http://example.org/#spiderman> <http://www.perceive.net/schemas/relationship/enemyOf> <http://example.org/#green-goblin> .`},
	{name: "2.3 example 3", doc: `<http://example.org/#spiderman> <http://www.perceive.net/schemas/relationship/enemyOf> <http://example.org/#green-goblin> ;
				<http://xmlns.com/foaf/0.1/name> "Spiderman" .`,
		want: `<http://example.org/#spiderman> <http://www.perceive.net/schemas/relationship/enemyOf> <http://example.org/#green-goblin> .
<http://example.org/#spiderman> <http://xmlns.com/foaf/0.1/name> "Spiderman" .`},
	{name: "2.3 example 5", doc: `<http://example.org/#spiderman> <http://xmlns.com/foaf/0.1/name> "Spiderman", "Человек-паук"@ru .`,
		want: `<http://example.org/#spiderman> <http://xmlns.com/foaf/0.1/name> "Spiderman" .
<http://example.org/#spiderman> <http://xmlns.com/foaf/0.1/name> "Человек-паук"@ru .`},
	{name: "2.4 example 7", doc: `@prefix somePrefix: <http://www.perceive.net/schemas/relationship/> .
<http://example.org/#green-goblin> somePrefix:enemyOf <http://example.org/#spiderman> .`,
		want: `<http://example.org/#green-goblin> <http://www.perceive.net/schemas/relationship/enemyOf> <http://example.org/#spiderman> .`},
	{name: "2.4 example 8", doc: `PREFIX somePrefix: <http://www.perceive.net/schemas/relationship/>
<http://example.org/#green-goblin> somePrefix:enemyOf <http://example.org/#spiderman> .`,
		want: `<http://example.org/#green-goblin> <http://www.perceive.net/schemas/relationship/enemyOf> <http://example.org/#spiderman> .`},
	{name: "2.4 example 9", doc: `# A triple with all absolute IRIs
<http://one.example/subject1> <http://one.example/predicate1> <http://one.example/object1> .

@base <http://one.example/> .
<subject2> <predicate2> <object2> .     # relative IRIs, e.g. http://one.example/subject2

BASE <http://one.example/>
<subject2> <predicate2> <object2> .     # relative IRIs, e.g. http://one.example/subject2

@prefix p: <http://two.example/> .
p:subject3 p:predicate3 p:object3 .     # prefixed name, e.g. http://two.example/subject3

PREFIX p: <http://two.example/>
p:subject3 p:predicate3 p:object3 .     # prefixed name, e.g. http://two.example/subject3

@prefix p: <path/> .                    # prefix p: now stands for http://one.example/path/
p:subject4 p:predicate4 p:object4 .     # prefixed name, e.g. http://one.example/path/subject4

@prefix : <http://another.example/> .    # empty prefix
:subject5 :predicate5 :object5 .        # prefixed name, e.g. http://another.example/subject5

:subject6 a :subject7 .                 # same as :subject6 <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> :subject7 .

<http://伝言.example/?user=أكرم&amp;channel=R%26D> a :subject8 . # a multi-script subject IRI .
`, want: `<http://one.example/subject1> <http://one.example/predicate1> <http://one.example/object1> .
<http://one.example/subject2> <http://one.example/predicate2> <http://one.example/object2> .
<http://two.example/subject3> <http://two.example/predicate3> <http://two.example/object3> .
<http://one.example/path/subject4> <http://one.example/path/predicate4> <http://one.example/path/object4> .
<http://another.example/subject5> <http://another.example/predicate5> <http://another.example/object5> .
<http://another.example/subject6> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://another.example/subject7> .
<http://伝言.example/?user=أكرم&amp;channel=R%26D> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://another.example/subject8> .
`},
	{name: "2.5.1 example 11", doc: `@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix show: <http://example.org/vocab/show/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .

show:218 rdfs:label "That Seventies Show"^^xsd:string .            # literal with XML Schema string datatype
show:218 rdfs:label "That Seventies Show"^^<http://www.w3.org/2001/XMLSchema#string> . # same as above
show:218 rdfs:label "That Seventies Show" .                                            # same again
show:218 show:localName "That Seventies Show"@en .                 # literal with a language tag
show:218 show:localName 'Cette Série des Années Soixante-dix'@fr . # literal delimited by single quote
show:218 show:localName "Cette Série des Années Septante"@fr-be .  # literal with a region subtag
show:218 show:blurb '''This is a multi-line                        # literal with embedded new lines and quotes
literal with many quotes (""""")
and up to two sequential apostrophes ('').''' .
`, want: `<http://example.org/vocab/show/218> <http://www.w3.org/2000/01/rdf-schema#label> "That Seventies Show" .
<http://example.org/vocab/show/218> <http://example.org/vocab/show/localName> "That Seventies Show"@en .
<http://example.org/vocab/show/218> <http://example.org/vocab/show/localName> "Cette Série des Années Soixante-dix"@fr .
<http://example.org/vocab/show/218> <http://example.org/vocab/show/localName> "Cette Série des Années Septante"@fr-be .
<http://example.org/vocab/show/218> <http://example.org/vocab/show/blurb> "This is a multi-line                        # literal with embedded new lines and quotes\nliteral with many quotes (\"\"\"\"\")\nand up to two sequential apostrophes ('')." .
`},
	{name: "2.5.2 example 12", doc: `@prefix : <http://example.org/elements> .
<http://en.wikipedia.org/wiki/Helium>
    :atomicNumber 2 ;               # xsd:integer
    :atomicMass 4.002602 ;          # xsd:decimal
    :specificGravity 1.663E-4 .     # xsd:double
`, want: `<http://en.wikipedia.org/wiki/Helium> <http://example.org/elementsatomicNumber> "2"^^<http://www.w3.org/2001/XMLSchema#integer> .
<http://en.wikipedia.org/wiki/Helium> <http://example.org/elementsatomicMass> "4.002602"^^<http://www.w3.org/2001/XMLSchema#decimal> .
<http://en.wikipedia.org/wiki/Helium> <http://example.org/elementsspecificGravity> "1.663E-4"^^<http://www.w3.org/2001/XMLSchema#double> .
`},
	{name: "2.5.3 example 13", doc: `@prefix : <http://example.org/stats> .
<http://somecountry.example/census2007>
    :isLandlocked false .           # xsd:boolean
`, want: `<http://somecountry.example/census2007> <http://example.org/statsisLandlocked> "false"^^<http://www.w3.org/2001/XMLSchema#boolean> .`},
	{name: "2.6 example 14", doc: `@prefix foaf: <http://xmlns.com/foaf/0.1/> .

_:alice foaf:knows _:bob .
_:bob foaf:knows _:alice .
`, want: `_:a <http://xmlns.com/foaf/0.1/knows> _:b .
_:b <http://xmlns.com/foaf/0.1/knows> _:a .`},
	{name: "2.6 example 15", doc: `@prefix foaf: <http://xmlns.com/foaf/0.1/> .

# Someone knows someone else, who has the name "Bob".
[] foaf:knows [ foaf:name "Bob" ] .
`, want: `_:x <http://xmlns.com/foaf/0.1/knows> _:y .
_:y <http://xmlns.com/foaf/0.1/name> "Bob" .`},
	{name: "2.6 example 16", doc: `@prefix foaf: <http://xmlns.com/foaf/0.1/> .

[ foaf:name "Alice" ] foaf:knows [
    foaf:name "Bob" ;
    foaf:knows [
        foaf:name "Eve" ] ;
    foaf:mbox <bob@example.com> ] .
`, want: `_:a <http://xmlns.com/foaf/0.1/name> "Alice" .
_:a <http://xmlns.com/foaf/0.1/knows> _:b .
_:b <http://xmlns.com/foaf/0.1/name> "Bob" .
_:b <http://xmlns.com/foaf/0.1/knows> _:c .
_:c <http://xmlns.com/foaf/0.1/name> "Eve" .
_:b <http://xmlns.com/foaf/0.1/mbox> <bob@example.com> .
`},
	{name: "2.8 example 18", doc: `@prefix : <http://example.org/foo> .
# the object of this triple is the RDF collection blank node
:subject :predicate ( :a :b :c ) .

# an empty collection value - rdf:nil
:subject :predicate2 () .
`, want: `<http://example.org/foosubject> <http://example.org/foopredicate> _:l1 .
_:l1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> <http://example.org/fooa> .
_:l1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> _:l2 .
_:l2 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> <http://example.org/foob> .
_:l2 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> _:l3 .
_:l3 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> <http://example.org/fooc> .
_:l3 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> <http://www.w3.org/1999/02/22-rdf-syntax-ns#nil> .
<http://example.org/foosubject> <http://example.org/foopredicate2> <http://www.w3.org/1999/02/22-rdf-syntax-ns#nil> .
`},
	{name: "5 example 19", doc: `@prefix ericFoaf: <http://www.w3.org/People/Eric/ericP-foaf.rdf#> .
@prefix : <http://xmlns.com/foaf/0.1/> .
ericFoaf:ericP :givenName "Eric" ;
              :knows <http://norman.walsh.name/knows/who/dan-brickley> ,
                      [ :mbox <mailto:timbl@w3.org> ] ,
                      <http://getopenid.com/amyvdh> .
`, want: `<http://www.w3.org/People/Eric/ericP-foaf.rdf#ericP> <http://xmlns.com/foaf/0.1/givenName> "Eric" .
<http://www.w3.org/People/Eric/ericP-foaf.rdf#ericP> <http://xmlns.com/foaf/0.1/knows> <http://norman.walsh.name/knows/who/dan-brickley> .
<http://www.w3.org/People/Eric/ericP-foaf.rdf#ericP> <http://xmlns.com/foaf/0.1/knows> _:b .
_:b <http://xmlns.com/foaf/0.1/mbox> <mailto:timbl@w3.org> .
<http://www.w3.org/People/Eric/ericP-foaf.rdf#ericP> <http://xmlns.com/foaf/0.1/knows> <http://getopenid.com/amyvdh> .
`},
	{name: "7.3 collections with numbers and nesting", doc: `@prefix : <http://example.org/stuff/1.0/> .
(1 2.0 3E1) :p "w" .
(1 [:p :q] ( 2 ) ) :p2 :o .
`, want: `_:b0 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .
_:b0 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> _:b1 .
_:b1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> "2.0"^^<http://www.w3.org/2001/XMLSchema#decimal> .
_:b1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> _:b2 .
_:b2 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> "3E1"^^<http://www.w3.org/2001/XMLSchema#double> .
_:b2 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> <http://www.w3.org/1999/02/22-rdf-syntax-ns#nil> .
_:b0 <http://example.org/stuff/1.0/p> "w" .
_:c0 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .
_:c0 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> _:c1 .
_:c1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> _:d .
_:d <http://example.org/stuff/1.0/p> <http://example.org/stuff/1.0/q> .
_:c1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> _:c2 .
_:c2 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> _:e0 .
_:e0 <http://www.w3.org/1999/02/22-rdf-syntax-ns#first> "2"^^<http://www.w3.org/2001/XMLSchema#integer> .
_:e0 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> <http://www.w3.org/1999/02/22-rdf-syntax-ns#nil> .
_:c2 <http://www.w3.org/1999/02/22-rdf-syntax-ns#rest> <http://www.w3.org/1999/02/22-rdf-syntax-ns#nil> .
_:c0 <http://example.org/stuff/1.0/p2> <http://example.org/stuff/1.0/o> .
`},
	{name: "7.3 strings with escapes and long strings", doc: `@prefix : <http://example.org/stuff/1.0/> .
:a :b "The first line\nThe second line\n  more" .
:a :b """The first line
The second line
  more""" .
:a :c 'it\'s' , "tab\there", "\u00e9\U0001F600", """a""b""", '''b''c''', "" , '' , """""" .
`, want: `<http://example.org/stuff/1.0/a> <http://example.org/stuff/1.0/b> "The first line\nThe second line\n  more" .
<http://example.org/stuff/1.0/a> <http://example.org/stuff/1.0/c> "it's" .
<http://example.org/stuff/1.0/a> <http://example.org/stuff/1.0/c> "tab\there" .
<http://example.org/stuff/1.0/a> <http://example.org/stuff/1.0/c> "é😀" .
<http://example.org/stuff/1.0/a> <http://example.org/stuff/1.0/c> "a\"\"b" .
<http://example.org/stuff/1.0/a> <http://example.org/stuff/1.0/c> "b''c" .
<http://example.org/stuff/1.0/a> <http://example.org/stuff/1.0/c> "" .
`},
	{name: "prefixed names: dots, escapes, percent, colons, a-prefix", doc: `@prefix : <http://ex/> . @prefix a: <http://a/> . PrEfIx ab.c: <http://abc/>
:s.x :p.q :o.r.
:s a :c , a:d ; a:b ab.c:x .
:s :p :a\~b\.c , :%20x , :x:y: , :0 , :_u , :café .
:s :p : .
`, want: `<http://ex/s.x> <http://ex/p.q> <http://ex/o.r> .
<http://ex/s> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://ex/c> .
<http://ex/s> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://a/d> .
<http://ex/s> <http://a/b> <http://abc/x> .
<http://ex/s> <http://ex/p> <http://ex/a~b.c> .
<http://ex/s> <http://ex/p> <http://ex/%20x> .
<http://ex/s> <http://ex/p> <http://ex/x:y:> .
<http://ex/s> <http://ex/p> <http://ex/0> .
<http://ex/s> <http://ex/p> <http://ex/_u> .
<http://ex/s> <http://ex/p> <http://ex/café> .
<http://ex/s> <http://ex/p> <http://ex/> .
`},
	{name: "numbers and booleans", doc: `@prefix : <http://ex/> .
:s :p 1, -2, +3, 1.5, .5, -0.5, 1e3, 1.e3, 1.5E-3, .5e+2, true, false.
:s :q 7.
`, want: `<http://ex/s> <http://ex/p> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .
<http://ex/s> <http://ex/p> "-2"^^<http://www.w3.org/2001/XMLSchema#integer> .
<http://ex/s> <http://ex/p> "+3"^^<http://www.w3.org/2001/XMLSchema#integer> .
<http://ex/s> <http://ex/p> "1.5"^^<http://www.w3.org/2001/XMLSchema#decimal> .
<http://ex/s> <http://ex/p> ".5"^^<http://www.w3.org/2001/XMLSchema#decimal> .
<http://ex/s> <http://ex/p> "-0.5"^^<http://www.w3.org/2001/XMLSchema#decimal> .
<http://ex/s> <http://ex/p> "1e3"^^<http://www.w3.org/2001/XMLSchema#double> .
<http://ex/s> <http://ex/p> "1.e3"^^<http://www.w3.org/2001/XMLSchema#double> .
<http://ex/s> <http://ex/p> "1.5E-3"^^<http://www.w3.org/2001/XMLSchema#double> .
<http://ex/s> <http://ex/p> ".5e+2"^^<http://www.w3.org/2001/XMLSchema#double> .
<http://ex/s> <http://ex/p> "true"^^<http://www.w3.org/2001/XMLSchema#boolean> .
<http://ex/s> <http://ex/p> "false"^^<http://www.w3.org/2001/XMLSchema#boolean> .
<http://ex/s> <http://ex/q> "7"^^<http://www.w3.org/2001/XMLSchema#integer> .
`},
	{name: "document base, @base chain, IRI escapes, lang case, BOM", base: "http://doc.example/dir/file.ttl", doc: "\ufeff" + `<a> <#p> <../up> .
@base <sub/> .
<b> <c> "x"@EN-gb, "y"^^<dt> .
<\u0041> <p> <q> .
[ <p> <q> ] .
_:n.1 <p> _:n.1 .
`, want: `<http://doc.example/dir/a> <http://doc.example/dir/file.ttl#p> <http://doc.example/up> .
<http://doc.example/dir/sub/b> <http://doc.example/dir/sub/c> "x"@en-gb .
<http://doc.example/dir/sub/b> <http://doc.example/dir/sub/c> "y"^^<http://doc.example/dir/sub/dt> .
<http://doc.example/dir/sub/A> <http://doc.example/dir/sub/p> <http://doc.example/dir/sub/q> .
_:z <http://doc.example/dir/sub/p> <http://doc.example/dir/sub/q> .
_:n.1 <http://doc.example/dir/sub/p> _:n.1 .
`},
	{name: "trailing semicolons and empty document parts", doc: `# only a comment
@prefix : <http://ex/> .
:s :p :o ;; :q :r ; .
[ :p :o ; ] :q :r .
`, want: `<http://ex/s> <http://ex/p> <http://ex/o> .
<http://ex/s> <http://ex/q> <http://ex/r> .
_:b <http://ex/p> <http://ex/o> .
_:b <http://ex/q> <http://ex/r> .
`},
}

func TestTurtleSpecExamples(t *testing.T) {
	for _, tc := range turtleCases {
		t.Run(tc.name, func(t *testing.T) {
			got := mustTurtle(t, tc.doc, tc.base)
			want := mustTurtle(t, tc.want, "")
			if !Isomorphic(got, want) {
				t.Errorf("got\n%swant\n%s", dump(got), dump(want))
			}
		})
	}
}

// TestTurtleBlankLabels checks that written labels come back as written
// and invented ones cannot collide with them.
func TestTurtleBlankLabels(t *testing.T) {
	got := mustTurtle(t, `@prefix : <http://ex/> . _:b1 :p [ :q _:genid1 ] , ( _:x ) , _:genid-1 .`, "")
	// A written label that starts like an invented one is renamed.
	written := map[string]bool{"b1": true, "genid1": true, "x": true, "genid-w1": true}
	invented := map[string]bool{}
	for _, tr := range got {
		for _, x := range []Term{tr.S, tr.O} {
			if x.IsBlank() && !written[x.Value] {
				if !strings.HasPrefix(x.Value, genBlankPrefix) {
					t.Errorf("invented label %q does not start with %q", x.Value, genBlankPrefix)
				}
				invented[x.Value] = true
			}
		}
	}
	if len(invented) != 2 {
		t.Errorf("invented %d labels, want 2 (one [ ], one list node): %v", len(invented), invented)
	}
	for _, tr := range got {
		if tr.P.Value == "http://ex/p" && tr.S != Blank("b1") {
			t.Errorf("subject of :p is %v, want _:b1 as written", tr.S)
		}
	}
}

func TestTurtleErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		line, col int
		msg       string
	}{
		{"undeclared prefix", "<a> <b> <c> .\n  x:y <b> <c> .", 2, 3, "undeclared prefix"},
		{"missing dot", "<a> <b> <c>\n<d> <e> <f> .", 2, 1, "want '.'"},
		{"unterminated IRI", "<a> <b> <c", 1, 11, "'>'"},
		{"space in IRI", "<a> <b> <c d> .", 1, 11, "not allowed in IRI"},
		{"escaped space in IRI", `<a> <b> <c\u0020> .`, 1, 17, "not allowed in IRI"},
		{"unterminated string", "<a> <b> \"abc", 1, 13, "unterminated string"},
		{"newline in short string", "<a> <b> \"ab\ncd\" .", 2, 1, "line break"},
		{"bad string escape", `<a> <b> "\q" .`, 1, 12, `bad escape \q`},
		{"bad unicode escape", `<a> <b> "\u00ZZ" .`, 1, 15, "bad hex digit"},
		{"surrogate escape", `<a> <b> "\uD800" .`, 1, 16, "not a Unicode scalar"},
		{"literal subject", `"a" <b> <c> .`, 1, 1, "a subject"},
		{"literal predicate", `<a> "b" <c> .`, 1, 5, "a predicate"},
		{"blank predicate", `<a> _:b <c> .`, 1, 5, "a predicate"},
		{"unknown directive", `@foo <a> .`, 1, 5, "unknown directive"},
		{"bare word", `<a> <b> maybe .`, 1, 9, "unexpected word"},
		{"unclosed list", "@prefix : <http://ex/> .\n:a :b ( :c", 2, 11, "unexpected end"},
		{"unclosed bnode", "@prefix : <http://ex/> .\n:a :b [ :c :d", 2, 14, "unexpected end"},
		{"empty lang", `<a> <b> "x"@ .`, 1, 13, "language tag"},
		{"bad datatype", `<a> <b> "x"^^"y" .`, 1, 14, "datatype"},
		{"no object", `<a> <b> .`, 1, 9, "an object"},
		{"invalid utf8", "<a> <b> \"\xff\" .", 1, 10, "invalid UTF-8"},
		{"bad local escape", "@prefix : <http://ex/> .\n:a :b :c\\q .", 2, 11, "bad escape"},
		{"dangling comma", "<a> <b> <c> , .", 1, 15, "an object"},
		{"PREFIX without colon", "PREFIX foo <http://x/>", 1, 11, "':'"},
		{"bare number sign", "<a> <b> - .", 1, 10, "a number"},
		{"quote before the end of a long string", `<a> <b> """a"""" .`, 1, 16, "want '.'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := collectSeq(parseTurtle(strings.NewReader(tc.doc), ""))
			var te *SyntaxError
			if !errors.As(err, &te) {
				t.Fatalf("error %v, want *SyntaxError", err)
			}
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("error %v does not unwrap to ErrSyntax", err)
			}
			if te.Line != tc.line || te.Col != tc.col || !strings.Contains(te.Msg, tc.msg) {
				t.Errorf("got %d:%d %q, want %d:%d containing %q", te.Line, te.Col, te.Msg, tc.line, tc.col, tc.msg)
			}
		})
	}
}

// TestTurtleDeepNesting: nesting past the limit is an error, not a stack
// overflow.
func TestTurtleDeepNesting(t *testing.T) {
	for _, open := range []string{"[ <p> ", "( "} {
		doc := "<a> <b> " + strings.Repeat(open, turtleMaxDepth+1)
		_, err := collectSeq(parseTurtle(strings.NewReader(doc), ""))
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "nesting") {
			t.Errorf("%q x %d: error %v, want nesting error", open, turtleMaxDepth+1, err)
		}
	}
}

// TestTurtleStopEarly: a consumer that stops gets no more triples and the
// parser stops reading.
func TestTurtleStopEarly(t *testing.T) {
	n := 0
	for _, err := range parseTurtle(strings.NewReader("<a> <b> <c>, <d>, <e> ."), "") {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	if n != 1 {
		t.Errorf("got %d triples", n)
	}
}

// TestTurtleWriterRoundTrip: every spec example, written by the Turtle
// writer and read back, is the same graph; blank node labels that are
// already safe survive unchanged.
func TestTurtleWriterRoundTrip(t *testing.T) {
	for _, tc := range turtleCases {
		t.Run(tc.name, func(t *testing.T) {
			in := mustTurtle(t, tc.doc, tc.base)
			back, out := roundTrip(t, in, newTurtleWriter, parseTurtle)
			if !Isomorphic(in, back) {
				t.Errorf("round trip changed the graph\nin:\n%sout:\n%s", dump(in), out)
			}
		})
	}
	odd := []Triple{
		{Blank("plain1"), IRI("http://ex/p"), Literal("quote \" backslash \\ nl \n cr \r tab \t bell \a del \x7f")},
		{Blank("plain1"), IRI("http://ex/p"), IRI("http://ex/é/%20?x#y")},
		{Blank("plain1"), IRI("http://ex/q"), Blank("plain1")},
		{Blank("-b1"), IRI(RDFNS + "type"), IRI("http://www.w3.org/2002/07/owl#Thing")},
		{Blank("has_underscore.and.dots"), IRI(XSDNS + "p"), TypedLiteral("5", XSDInteger)},
		{IRI("rel/iri"), IRI("http://ex/p"), LangLiteral("x", "EN-gb")},
		{IRI(""), IRI("http://ex/p"), TypedLiteral("x", "http://ex/dt")},
	}
	back, out := roundTrip(t, odd, newTurtleWriter, parseTurtle)
	if !Isomorphic(odd, back) {
		t.Errorf("round trip changed the graph\nin:\n%sout:\n%s", dump(odd), out)
	}
	if back[0].S != Blank("plain1") {
		t.Errorf("safe label changed: %v", back[0].S)
	}
	if !strings.Contains(out, " a owl:Thing .") || !strings.Contains(out, " xsd:p 5 .") {
		t.Errorf("writer did not use the 'a' and integer shorthands:\n%s", out)
	}
	if !strings.Contains(out, ` ;
	`) || !strings.Contains(out, " ,\n") {
		t.Errorf("writer did not group same-subject / same-predicate triples:\n%s", out)
	}
}

func TestTurtleWriterRefuses(t *testing.T) {
	bad := []struct {
		tr   Triple
		want error
	}{
		{Triple{Literal("s"), IRI("http://p"), IRI("http://o")}, ErrInvalidTriple},
		{Triple{IRI("http://s"), Blank("p"), IRI("http://o")}, ErrInvalidTriple},
		{Triple{IRI("http://s"), IRI("http://p"), Term{}}, ErrInvalidTriple},
		{Triple{IRI("http://s"), IRI("http://p"), Literal("\xff")}, ErrNotSerializable},
		{Triple{IRI("http://s"), IRI("http://p"), IRI("http://ex/with space")}, ErrNotSerializable},
		{Triple{IRI("http://s b"), IRI("http://p"), IRI("http://o")}, ErrNotSerializable},
		{Triple{IRI("http://s"), IRI("http://p"), TypedLiteral("x", "http://ex/<dt>")}, ErrNotSerializable},
		{Triple{IRI("http://s"), IRI("http://p"), Term{Kind: KindLiteral, Value: "x", Lang: "e n", Datatype: RDFLangString}}, ErrNotSerializable},
	}
	for _, tc := range bad {
		w := newTurtleWriter(io.Discard)
		if err := w.Write(tc.tr); !errors.Is(err, tc.want) {
			t.Errorf("Write(%v) = %v, want %v", tc.tr, err, tc.want)
		}
	}
}

// turtleBad are documents the Turtle grammar rejects, in the manner of the
// W3C test suite's negative syntax tests; TestRapperAgrees checks that
// rapper rejects them too.
var turtleBad = []string{
	`@prefix : <http://ex/> . [] .`,                     // ANON subject needs predicates
	`@prefix : <http://ex/> . ( :a ) .`,                 // so does a collection subject
	`@PREFIX : <http://ex/> .`,                          // @prefix is case-sensitive
	`PREFIX : <http://ex/> . :a :b :c .`,                // SPARQL PREFIX takes no '.'
	`@prefix : <http://ex/>`,                            // @prefix needs its '.'
	`@base <http://ex/>`,                                // @base too
	`@prefix : <http://ex/> . :a :b "x"@en- .`,          // empty subtag
	`@prefix : <http://ex/> . :a :b "x"^^"y" .`,         // datatype must be an IRI
	`@prefix : <http://ex/> . :a :b :c :d .`,            // two objects without ','
	`@prefix : <http://ex/> . :a :b :c`,                 // no final '.'
	`@prefix : <http://ex/> . :a :b "abc' .`,            // mismatched quotes
	`@prefix : <http://ex/> . :a :b 'x` + "\n" + `y' .`, // line break in a short string
	`@prefix : <http://ex/> . :a :b :c\u0041 .`,         // \u escape in a local name
	`@prefix : <http://ex/> . :a :b <http://ex/\q> .`,   // bad IRI escape
	`@prefix : <http://ex/> . :a :b <http://ex/ x> .`,   // space in IRI
	`@prefix : <http://ex/> . :a [ :b :c ] .`,           // bnode list as predicate
	`@prefix : <http://ex/> . :a "p" :c .`,              // literal predicate
	`@prefix : <http://ex/> . "s" :p :c .`,              // literal subject
	`@prefix : <http://ex/> . :a :b true:x .`,           // undeclared prefix
	`@prefix : <http://ex/> . :a :b _:.x .`,             // label cannot start with '.'
	`@prefix : <http://ex/> . :a :b :c , .`,             // dangling ','
	`@prefix : <http://ex/> . :a :b ( :c .`,             // unclosed collection
	`@prefix : <http://ex/> . :a :b [ :c :d .`,          // unclosed bnode
	`@prefix : <http://ex/> . :a :b """x"""" .`,         // a quote after the end
	`@prefix : <http://ex/> . :a :b 1.0e .`,             // exponent without digits
	`@prefix x.: <http://ex/> .`,                        // prefix name ending in '.'
	`@prefix : <http://ex/> . :a :b "\x" .`,             // bad string escape
}

func TestTurtleRejects(t *testing.T) {
	for _, doc := range turtleBad {
		if _, err := collectSeq(parseTurtle(strings.NewReader(doc), "")); !errors.Is(err, ErrSyntax) {
			t.Errorf("%s\nparsed: err %v, want a syntax error", doc, err)
		}
	}
}

// TestTurtleReplacementCharacter: a U+FFFD written in the document is a
// character like any other; only bytes that are not UTF-8 are errors.
func TestTurtleReplacementCharacter(t *testing.T) {
	got := mustTurtle(t, "@prefix : <http://ex/\uFFFD/> . :a\uFFFD :b \"\uFFFD\" .", "")
	want := Triple{IRI("http://ex/\uFFFD/a\uFFFD"), IRI("http://ex/\uFFFD/b"), Literal("\uFFFD")}
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, doc := range []string{"<a> <b> \"\xff\" .", "<a\xff> <b> <c> .", "@prefix : <http://ex/> . :a\xff :b :c ."} {
		_, err := collectSeq(parseTurtle(strings.NewReader(doc), ""))
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("%q: %v, want an invalid UTF-8 error", doc, err)
		}
	}
}
