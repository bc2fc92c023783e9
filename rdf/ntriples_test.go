package rdf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// collect parses an N-Triples document and returns its triples or the
// first error.
func collect(t testing.TB, doc string) ([]Triple, error) {
	t.Helper()
	var out []Triple
	for tr, err := range Parse(strings.NewReader(doc), NTriples, "") {
		if err != nil {
			return out, err
		}
		out = append(out, tr)
	}
	return out, nil
}

// writeNT writes ts with the N-Triples writer and returns the document.
func writeNT(t testing.TB, ts []Triple) string {
	t.Helper()
	var buf bytes.Buffer
	w := newNTriplesWriter(&buf)
	for _, tr := range ts {
		if err := w.Write(tr); err != nil {
			t.Fatalf("write %#v: %v", tr, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestParseNTriplesValid(t *testing.T) {
	s, p := IRI("http://ex/s"), IRI("http://ex/p")
	tests := []struct {
		name string
		doc  string
		want []Triple
	}{
		{"empty", "", nil},
		{"comments and blank lines", "# c\n\n   \t\n# <a> <b> <c> .\n", nil},
		{"space before lang and datatype", "<http://ex/s> <http://ex/p> \"a\" @en .\n<http://ex/s> <http://ex/p> \"1\"  ^^  <http://ex/d> .", []Triple{{s, p, LangLiteral("a", "en")}, {s, p, TypedLiteral("1", "http://ex/d")}}},
		{"byte order mark", "\xEF\xBB\xBF<http://ex/s> <http://ex/p> <http://ex/o> .\n", []Triple{{s, p, IRI("http://ex/o")}}},
		{"iri object", "<http://ex/s> <http://ex/p> <http://ex/o> .\n", []Triple{{s, p, IRI("http://ex/o")}}},
		{"no final newline", "<http://ex/s> <http://ex/p> <http://ex/o> .", []Triple{{s, p, IRI("http://ex/o")}}},
		{"no spaces", "<http://ex/s><http://ex/p><http://ex/o>.", []Triple{{s, p, IRI("http://ex/o")}}},
		{"tabs and trailing comment", "\t<http://ex/s>\t<http://ex/p>\t<http://ex/o>\t. # done\n", []Triple{{s, p, IRI("http://ex/o")}}},
		{"crlf", "<http://ex/s> <http://ex/p> \"a\" .\r\n<http://ex/s> <http://ex/p> \"b\" .\r\n", []Triple{{s, p, Literal("a")}, {s, p, Literal("b")}}},
		{"lone cr", "<http://ex/s> <http://ex/p> \"a\" .\r<http://ex/s> <http://ex/p> \"b\" .", []Triple{{s, p, Literal("a")}, {s, p, Literal("b")}}},
		{"plain literal is xsd:string", `<http://ex/s> <http://ex/p> "x" .`, []Triple{{s, p, Literal("x")}}},
		{"explicit xsd:string", `<http://ex/s> <http://ex/p> "x"^^<http://www.w3.org/2001/XMLSchema#string> .`, []Triple{{s, p, Literal("x")}}},
		{"lang lower-cased", `<http://ex/s> <http://ex/p> "chat"@EN-gb .`, []Triple{{s, p, LangLiteral("chat", "en-gb")}}},
		{"datatype", `<http://ex/s> <http://ex/p> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .`, []Triple{{s, p, TypedLiteral("1", "http://www.w3.org/2001/XMLSchema#integer")}}},
		{"echars", `<http://ex/s> <http://ex/p> "\t\b\n\r\f\"\'\\" .`, []Triple{{s, p, Literal("\t\b\n\r\f\"'\\")}}},
		{"uchars", `<http://ex/s> <http://ex/p> "\u00E9\U0001F600" .`, []Triple{{s, p, Literal("é😀")}}},
		{"raw utf-8 and tab in literal", "<http://ex/s> <http://ex/p> \"é\tx\" .", []Triple{{s, p, Literal("é\tx")}}},
		{"uchar in iri", `<http://ex/\u00E9\u0020> <http://ex/p> <http://ex/o> .`, []Triple{{IRI("http://ex/é "), p, IRI("http://ex/o")}}},
		{"blank nodes", "_:b1 <http://ex/p> _:b.2 .\n_:1a <http://ex/p> _:a-b_c .", []Triple{{Blank("b1"), p, Blank("b.2")}, {Blank("1a"), p, Blank("a-b_c")}}},
		{"blank label then dot", "_:a <http://ex/p> _:b.", []Triple{{Blank("a"), p, Blank("b")}}},
		{"unicode blank label", "_:é·x <http://ex/p> _:a .", []Triple{{Blank("é·x"), p, Blank("a")}}},
		{"same subject and predicate", "<http://ex/s> <http://ex/p> \"1\" .\n<http://ex/s> <http://ex/p> \"2\" .\n<http://ex/s2> <http://ex/p2> \"3\" .",
			[]Triple{{s, p, Literal("1")}, {s, p, Literal("2")}, {IRI("http://ex/s2"), IRI("http://ex/p2"), Literal("3")}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := collect(t, tc.doc)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d triples %v, want %d %v", len(got), got, len(tc.want), tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("triple %d: got %#v, want %#v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestParseNTriplesErrors(t *testing.T) {
	tests := []struct {
		name      string
		doc       string
		line, col int
		msg       string
	}{
		{"graph label", "<http://ex/s> <http://ex/p> <http://ex/o> <http://ex/g> .", 1, 43, "N-Quads"},
		{"blank graph label", "<http://ex/s> <http://ex/p> <http://ex/o> _:g .", 1, 43, "N-Quads"},
		{"missing dot", "<http://ex/s> <http://ex/p> <http://ex/o>", 1, 42, "expected '.'"},
		{"literal subject", `"s" <http://ex/p> <http://ex/o> .`, 1, 1, "literal cannot be a subject"},
		{"blank predicate", "<http://ex/s> _:p <http://ex/o> .", 1, 15, "predicate"},
		{"relative iri", "<s> <http://ex/p> <http://ex/o> .", 1, 1, "relative IRI"},
		{"space in iri", "<http://ex/a b> <http://ex/p> <http://ex/o> .", 1, 13, "not allowed in an IRI"},
		{"unterminated iri", "<http://ex/s", 1, 1, "unterminated IRI"},
		{"unterminated literal", `<http://ex/s> <http://ex/p> "abc .`, 1, 29, "unterminated string"},
		{"bad escape", `<http://ex/s> <http://ex/p> "a\q" .`, 1, 31, "invalid escape"},
		{"bad uchar", `<http://ex/s> <http://ex/p> "\u00G0" .`, 1, 30, "hex digit"},
		{"surrogate", `<http://ex/s> <http://ex/p> "\uD800" .`, 1, 30, "scalar"},
		{"echar in iri", `<http://ex/\n> <http://ex/p> <http://ex/o> .`, 1, 12, "invalid escape"},
		{"bad lang", `<http://ex/s> <http://ex/p> "a"@ .`, 1, 32, "language tag"},
		{"bad lang subtag", `<http://ex/s> <http://ex/p> "a"@en- .`, 1, 35, "subtag"},
		{"single caret", `<http://ex/s> <http://ex/p> "a"^<http://ex/d> .`, 1, 32, "'^^'"},
		{"datatype not iri", `<http://ex/s> <http://ex/p> "a"^^"b" .`, 1, 34, "datatype IRI"},
		{"bad blank label", "_:-a <http://ex/p> <http://ex/o> .", 1, 3, "blank node label"},
		{"colon in blank label", "_:a:b <http://ex/p> <http://ex/o> .", 1, 4, "predicate"},
		{"underscore only", "_ <http://ex/p> <http://ex/o> .", 1, 1, "'_:'"},
		{"garbage after dot", "<http://ex/s> <http://ex/p> <http://ex/o> . x", 1, 45, "after the end"},
		{"second line", "<http://ex/s> <http://ex/p> <http://ex/o> .\n\n<http://ex/s> <http://ex/p> .", 3, 29, "object"},
		{"column counts runes", "<http://ex/é> <http://ex/p> \"\\x\" .", 1, 30, "invalid escape"},
		{"invalid utf-8", "<http://ex/s> <http://ex/p> \"a\xffb\" .", 1, 31, "UTF-8"},
		{"turtle prefix", "@prefix ex: <http://ex/> .", 1, 1, "subject"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := collect(t, tc.doc)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("%v does not unwrap to ErrSyntax", err)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("%v is not a *SyntaxError", err)
			}
			if se.Line != tc.line || se.Col != tc.col || !strings.Contains(se.Msg, tc.msg) {
				t.Errorf("got line %d col %d %q, want line %d col %d containing %q", se.Line, se.Col, se.Msg, tc.line, tc.col, tc.msg)
			}
		})
	}
}

// TestParseNTriplesStopsAtFirstError checks that triples before the error
// are yielded and nothing after it.
func TestParseNTriplesStopsAtFirstError(t *testing.T) {
	doc := "<http://ex/s> <http://ex/p> \"1\" .\nbad\n<http://ex/s> <http://ex/p> \"2\" .\n"
	n, errs := 0, 0
	for _, err := range Parse(strings.NewReader(doc), NTriples, "") {
		if err != nil {
			errs++
			continue
		}
		n++
	}
	if n != 1 || errs != 1 {
		t.Errorf("got %d triples and %d errors, want 1 and 1", n, errs)
	}
}

func TestParseNTriplesLongLines(t *testing.T) {
	// A literal longer than the reader's buffer still parses.
	big := strings.Repeat("x", 200<<10)
	got, err := collect(t, "<http://ex/s> <http://ex/p> \""+big+"\" .\n<http://ex/s> <http://ex/p> \"y\" .\n")
	if err != nil || len(got) != 2 || got[0].O.Value != big || got[1].O.Value != "y" {
		t.Fatalf("long line: %d triples, err %v", len(got), err)
	}
	// A line over the limit is refused without reading it whole.
	r := io.MultiReader(strings.NewReader("<http://ex/s> <http://ex/p> \""), infiniteX{})
	var lastErr error
	for _, err := range Parse(r, NTriples, "") {
		lastErr = err
	}
	var se *SyntaxError
	if !errors.As(lastErr, &se) || se.Line != 1 || !strings.Contains(se.Msg, "longer than") {
		t.Fatalf("endless line: got %v", lastErr)
	}
}

type infiniteX struct{}

func (infiniteX) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

type failingReader struct{ n int }

var errBoom = errors.New("boom")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n > 0 {
		f.n = 0
		return copy(p, "<http://ex/s> <http://ex/p> <http://ex/o> .\n"), nil
	}
	return 0, errBoom
}

func TestParseNTriplesReadError(t *testing.T) {
	got, err := collect(t, "")
	_ = got
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var last error
	for _, err := range Parse(&failingReader{n: 1}, NTriples, "") {
		if err == nil {
			n++
		}
		last = err
	}
	if n != 1 || !errors.Is(last, errBoom) || errors.Is(last, ErrSyntax) {
		t.Fatalf("got %d triples, last error %v", n, last)
	}
}

func TestTermString(t *testing.T) {
	tests := []struct {
		term Term
		want string
	}{
		{IRI("http://ex/a"), "<http://ex/a>"},
		{IRI("http://ex/a b<>\"{}|^`\\"), `<http://ex/a\u0020b\u003C\u003E\u0022\u007B\u007D\u007C\u005E\u0060\u005C>`},
		{IRI("http://ex/é"), "<http://ex/é>"},
		{IRI("http://ex/\xff"), "<http://ex/\uFFFD>"},
		{Blank("b1"), "_:b1"},
		{Literal("x"), `"x"`},
		{Term{Kind: KindLiteral, Value: "x"}, `"x"`},
		{Literal("a\"b\\c\nd\re\tf\bg\fh\x00i\x7fj\x1f"), `"a\"b\\c\nd\re\tf\bg\fh\u0000i\u007Fj\u001F"`},
		{Literal("é😀"), `"é😀"`},
		{Literal("\uFFFE\uFFFF\uFFFD"), "\"\\uFFFE\\uFFFF\uFFFD\""},
		{Literal("a\xffb"), "\"a\uFFFDb\""},
		{LangLiteral("chat", "FR"), `"chat"@fr`},
		{TypedLiteral("1", "http://www.w3.org/2001/XMLSchema#integer"), `"1"^^<http://www.w3.org/2001/XMLSchema#integer>`},
		{TypedLiteral("1", "http://ex/d t"), `"1"^^<http://ex/d\u0020t>`},
		{Term{}, ""},
	}
	for _, tc := range tests {
		if got := tc.term.String(); got != tc.want {
			t.Errorf("%#v.String() = %s, want %s", tc.term, got, tc.want)
		}
	}
}

func TestTripleString(t *testing.T) {
	tr := Triple{Blank("a"), IRI("http://ex/p"), LangLiteral("x", "en")}
	if got, want := tr.String(), `_:a <http://ex/p> "x"@en .`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestParseTerm(t *testing.T) {
	valid := []Term{
		IRI("http://ex/a"), IRI("http://ex/a b\\"), Blank("x.y"), Literal(""), Literal("a\"\n\x01"),
		LangLiteral("x", "en-us"), TypedLiteral("1", "http://ex/dt"), Literal("😀"),
	}
	for _, want := range valid {
		got, err := ParseTerm(want.String())
		if err != nil || got != want {
			t.Errorf("ParseTerm(%s) = %#v, %v; want %#v", want.String(), got, err, want)
		}
	}
	if got, err := ParseTerm("  <http://ex/a>\t"); err != nil || got != IRI("http://ex/a") {
		t.Errorf("surrounding space: %v %v", got, err)
	}
	for _, bad := range []string{"", " ", "<http://ex/a> x", "<a>", "_:", "\"x", "x", "<http://ex/a> <http://ex/b>", "\"a\"@", "\xff"} {
		if _, err := ParseTerm(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseTerm(%q): got %v, want a syntax error", bad, err)
		}
	}
}

func TestNTriplesWriter(t *testing.T) {
	in := []Triple{
		{IRI("http://ex/s"), IRI("http://ex/p"), Literal("a\nb")},
		{Blank("b0"), IRI("http://ex/p"), LangLiteral("x", "en")},
		{IRI("http://ex/s"), IRI("http://ex/p"), TypedLiteral("1", "http://ex/dt")},
		{IRI("http://ex/s"), IRI("http://ex/p"), Blank("b0")},
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, NTriples)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range in {
		if err := w.Write(tr); err != nil {
			t.Fatal(err)
		}
	}
	if buf.Len() != 0 {
		t.Error("writer is not buffered")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := "<http://ex/s> <http://ex/p> \"a\\nb\" .\n_:b0 <http://ex/p> \"x\"@en .\n<http://ex/s> <http://ex/p> \"1\"^^<http://ex/dt> .\n<http://ex/s> <http://ex/p> _:b0 .\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	got, err := collect(t, buf.String())
	if err != nil || fmt.Sprint(got) != fmt.Sprint(in) {
		t.Errorf("re-parse: %v %v", got, err)
	}
	if err := w.Write(in[0]); err == nil {
		t.Error("write after Close succeeded")
	}
}

func TestNTriplesWriterInvalid(t *testing.T) {
	p := IRI("http://ex/p")
	for _, tr := range []Triple{
		{Literal("s"), p, Literal("o")},
		{IRI("http://ex/s"), Blank("p"), Literal("o")},
		{IRI("http://ex/s"), p, Term{}},
		{Term{}, p, Literal("o")},
		{Blank("a b"), p, Literal("o")},
		{IRI("http://ex/s"), p, Blank("x.")},
	} {
		w := newNTriplesWriter(io.Discard)
		if err := w.Write(tr); !errors.Is(err, ErrInvalidTriple) {
			t.Errorf("Write(%v): got %v, want ErrInvalidTriple", tr, err)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errBoom }

func TestNTriplesWriterError(t *testing.T) {
	w := newNTriplesWriter(failingWriter{})
	tr := Triple{IRI("http://ex/s"), IRI("http://ex/p"), Literal("o")}
	if err := w.Write(tr); err != nil {
		t.Fatal(err) // buffered: nothing written yet
	}
	if err := w.Close(); !errors.Is(err, errBoom) {
		t.Fatalf("Close: got %v, want boom", err)
	}
}
