package rdf

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"testing"
)

// chunkReader serves one chunk per Read and counts the chunks asked for.
type chunkReader struct {
	chunks []string
	served int
}

func (c *chunkReader) Read(b []byte) (int, error) {
	if c.served == len(c.chunks) {
		return 0, io.EOF
	}
	n := copy(b, c.chunks[c.served])
	if n < len(c.chunks[c.served]) {
		c.chunks[c.served] = c.chunks[c.served][n:]
	} else {
		c.served++
	}
	return n, nil
}

// TestReadersStream: a reader yields a triple as soon as the token that
// completes it has been read, before it asks for more input, so a
// document is never read whole.
func TestReadersStream(t *testing.T) {
	tests := []struct {
		name   string
		parse  func(io.Reader, string) iter.Seq2[Triple, error]
		chunks []string
		first  Triple
	}{
		{"turtle", parseTurtle, []string{
			"@prefix ex: <http://ex/> .\nex:a ex:p ex:b ",
			" ;\n ex:q \"x\" .\n",
			"ex:c ex:p ex:d .\n",
		}, Triple{IRI("http://ex/a"), IRI("http://ex/p"), IRI("http://ex/b")}},
		{"rdfxml", parseRDFXML, []string{
			`<rdf:RDF ` + rdfDecl + ` xmlns:ex="http://ex/"><rdf:Description rdf:about="http://ex/a"><ex:p rdf:resource="http://ex/b"/>`,
			`<ex:q>x</ex:q></rdf:Description>`,
			`<rdf:Description rdf:about="http://ex/c"><ex:p>y</ex:p></rdf:Description></rdf:RDF>`,
		}, Triple{IRI("http://ex/a"), IRI("http://ex/p"), IRI("http://ex/b")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &chunkReader{chunks: tc.chunks}
			next, stop := iter.Pull2(tc.parse(r, ""))
			defer stop()
			tr, err, ok := next()
			if !ok || err != nil || tr != tc.first {
				t.Fatalf("first: %v %v %v, want %v", tr, err, ok, tc.first)
			}
			if r.served != 1 {
				t.Errorf("the first triple came after %d chunks were read, want 1", r.served)
			}
			n := 1
			for {
				_, err, ok := next()
				if !ok {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			if n != 3 || r.served != len(tc.chunks) {
				t.Errorf("got %d triples from %d chunks, want 3 from %d", n, r.served, len(tc.chunks))
			}
		})
	}
}

// TestTurtleCRLFAndPositions: Windows line ends count as one line break
// and columns count characters, not bytes.
func TestTurtleCRLFAndPositions(t *testing.T) {
	_, err := collectSeq(parseTurtle(strings.NewReader("<a> <b> \"é\" .\r\n<a> <b> \"é\" x ."), ""))
	se, ok := err.(*SyntaxError)
	if !ok || se.Line != 2 || se.Col != 13 {
		t.Errorf("error %v, want line 2 col 13", err)
	}
}

// TestWritersAfterClose: Close is idempotent, a Write after it fails, and
// a failing io.Writer's error is returned (and kept).
func TestWritersAfterClose(t *testing.T) {
	tr := Triple{IRI("http://ex/s"), IRI("http://ex/p"), Literal("o")}
	for _, nw := range []struct {
		name string
		newW func(io.Writer) Writer
	}{{"turtle", newTurtleWriter}, {"rdfxml", newRDFXMLWriter}} {
		var buf strings.Builder
		w := nw.newW(&buf)
		if err := w.Write(tr); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		n := buf.Len()
		if err := w.Close(); err != nil || buf.Len() != n {
			t.Errorf("%s: second Close: %v, wrote %d more bytes", nw.name, err, buf.Len()-n)
		}
		if err := w.Write(tr); err == nil {
			t.Errorf("%s: Write after Close succeeded", nw.name)
		}
		w = nw.newW(&brokenReaderWriter{})
		err := w.Write(tr)
		if err == nil {
			err = w.Close()
		}
		if !errors.Is(err, errDisk) {
			t.Errorf("%s: failing writer: %v, want errDisk", nw.name, err)
		}
	}
}

type brokenReaderWriter struct{}

func (brokenReaderWriter) Write([]byte) (int, error) { return 0, errDisk }

// TestTurtlePrefixLimit: the prefix table is bounded.
func TestTurtlePrefixLimit(t *testing.T) {
	var b strings.Builder
	for i := range turtleMaxPrefixes + 1 {
		fmt.Fprintf(&b, "@prefix p%d: <http://ex/%d/> .\n", i, i)
	}
	_, err := collectSeq(parseTurtle(strings.NewReader(b.String()), ""))
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "prefixes") {
		t.Errorf("error %v, want the prefix limit", err)
	}
}
