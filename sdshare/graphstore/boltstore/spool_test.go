package boltstore

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// TestSpoolTermRoundTrip: every kind of term reads back as written.
func TestSpoolTermRoundTrip(t *testing.T) {
	terms := []rdf.Term{
		rdf.IRI("http://x/a"),
		rdf.Blank("b1"),
		rdf.Literal("plain"),
		{Kind: rdf.KindLiteral, Value: "chat", Lang: "fr", Datatype: rdf.RDFLangString},
		{Kind: rdf.KindLiteral, Value: "1", Datatype: "http://www.w3.org/2001/XMLSchema#integer"},
		{Kind: rdf.KindLiteral, Value: "odd", Lang: "en", Datatype: rdf.XSDString},
		{Kind: rdf.KindLiteral, Value: strings.Repeat("long ", 30000), Datatype: rdf.XSDString},
		rdf.IRI(""),
	}
	for _, want := range terms {
		checkSpoolTerm(t, want)
	}
}

func checkSpoolTerm(t *testing.T, want rdf.Term) {
	t.Helper()
	b := appendSpoolTerm(nil, want)
	got, err := readSpoolTerm(bufio.NewReader(bytes.NewReader(b)))
	if err != nil || got != want {
		t.Fatalf("read back %#v, %v; want %#v", got, err, want)
	}
	// Cut short, it is an error, never a term.
	if len(b) > 1 {
		if _, err := readSpoolTerm(bufio.NewReader(bytes.NewReader(b[:len(b)-1]))); err == nil {
			t.Fatalf("%#v cut short read back", want)
		}
	}
}

// FuzzSpoolTerm: any term round-trips; any bytes read as a term or fail,
// without a panic.
func FuzzSpoolTerm(f *testing.F) {
	f.Add(uint8(rdf.KindLiteral), "v", "en", rdf.RDFLangString, []byte{3, 1, 'v', 1})
	f.Add(uint8(rdf.KindIRI), "http://x/", "", "", []byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, kind uint8, value, lang, datatype string, raw []byte) {
		k := rdf.Kind(kind % uint8(rdf.KindLiteral+1))
		tm := rdf.Term{Kind: k, Value: value}
		if k == rdf.KindLiteral {
			tm.Lang, tm.Datatype = lang, datatype
		}
		checkSpoolTerm(t, tm)
		readSpoolTerm(bufio.NewReader(bytes.NewReader(raw)))
	})
}
