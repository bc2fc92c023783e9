package xmlscan

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

var lim = Limits{MaxDepth: 16, MaxAttrs: 8, MaxTokenBytes: 1 << 16, MaxDocumentBytes: -1}

// tokens renders the token stream compactly: S{space}local[attrs] E{..} T"text".
func tokens(r io.Reader) (string, error) {
	s := New(r, lim)
	var b strings.Builder
	for {
		k, err := s.Next()
		if err == io.EOF {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), err
		}
		switch k {
		case StartElement:
			fmt.Fprintf(&b, "S{%s}%s", s.Name().Space, s.Name().Local)
			for _, a := range s.Attrs() {
				fmt.Fprintf(&b, "[{%s}%s=%q]", a.Name.Space, a.Name.Local, a.Value)
			}
			fmt.Fprintf(&b, "@%d ", s.Depth())
		case EndElement:
			fmt.Fprintf(&b, "E{%s}%s ", s.Name().Space, s.Name().Local)
		case CharData:
			fmt.Fprintf(&b, "T%q ", s.Text())
		}
	}
}

func TestTokens(t *testing.T) {
	tests := []struct{ in, want string }{
		{`<a/>`, `S{}a@1 E{}a `},
		{`<?xml version="1.0" encoding="utf-8"?><!-- c --><?pi x?><a>x</a>`, `S{}a@1 T"x" E{}a `},
		{"\xef\xbb\xbf<a/>", `S{}a@1 E{}a `},
		{`<a xmlns="urn:d" xmlns:p="urn:p"><p:b p:x="1" y='2'/><c/></a>`,
			`S{urn:d}a@1 S{urn:p}b[{urn:p}x="1"][{}y="2"]@2 E{urn:p}b S{urn:d}c@2 E{urn:d}c E{urn:d}a `},
		{`<a xmlns:p="urn:1"><b xmlns:p="urn:2"><p:c/></b><p:c/></a>`,
			`S{}a@1 S{}b@2 S{urn:2}c@3 E{urn:2}c E{}b S{urn:1}c@2 E{urn:1}c E{}a `},
		{`<a>&lt;&gt;&amp;&apos;&quot;&#65;&#x263a;</a>`, `S{}a@1 T"<>&'\"A☺" E{}a `},
		{`<a><![CDATA[<&>]]></a>`, `S{}a@1 T"<&>" E{}a `},
		{"<a>x\r\ny\rz</a>", `S{}a@1 T"x\ny\nz" E{}a `},
		{"<a b=\"x\ty\r\nz&#10;&amp;\"/>", `S{}a[{}b="x y z\n&"]@1 E{}a `},
		{"<a b='longer than eight ascii bytes &amp; more \u00e9\u00e9'/>", `S{}a[{}b="longer than eight ascii bytes & more éé"]@1 E{}a `},
		{`<a></a >`, `S{}a@1 E{}a `},
		{"<a>\n</a>\n<!-- trailing -->\n", `S{}a@1 T"\n" E{}a `},
	}
	for _, tt := range tests {
		for name, r := range map[string]io.Reader{"whole": strings.NewReader(tt.in), "one byte": iotest.OneByteReader(strings.NewReader(tt.in))} {
			got, err := tokens(r)
			if err != nil {
				t.Errorf("%q (%s): %v", tt.in, name, err)
				continue
			}
			if got != tt.want {
				t.Errorf("%q (%s):\n got %s\nwant %s", tt.in, name, got, tt.want)
			}
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		in        string
		want      error
		line, col int
	}{
		{"<a>\n  <b>&bogus;</b></a>", ErrEntity, 2, 6},
		{"<a>\n\n<!DOCTYPE a></a>", ErrDTD, 3, 1},
		{"<a>\n  x\x00</a>", ErrInvalidChar, 2, 4},
		{"<a>\n\xc3\x28</a>", ErrInvalidUTF8, 2, 1},
		{"<a b='1' b='2'/>", ErrSyntax, 1, 1},
		{"<a><b></a>", ErrSyntax, 1, 7},
		{"<a>", ErrTruncated, 1, 4},
		{"<a b='1", ErrSyntax, 1, 1},
		{"x<a/>", ErrSyntax, 1, 1},
		{"<a/><b/>", ErrSyntax, 1, 5},
		{"<p:a/>", ErrSyntax, 1, 1},
		{"<a>]]></a>", ErrSyntax, 1, 4},
		{"<a><!-- a -- b --></a>", ErrSyntax, 1, 11},
		{"<a b=1/>", ErrSyntax, 1, 6},
		{"<a><?xml version='1.0'?></a>", ErrSyntax, 1, 4},
		{"<a>&#0;</a>", ErrSyntax, 1, 4},
		{"<a>&#xD800;</a>", ErrSyntax, 1, 4},
		{"<a c='1' d='2' e='3' f='4' g='5' h='6' i='7' j='8' k='9'/>", ErrAttrs, 1, 1},
		{strings.Repeat("<a>", 17), ErrDepth, 1, 49},
		{"<a>" + strings.Repeat("x", 1<<17) + "</a>", ErrTokenTooLarge, 1, 4},
	}
	for _, tt := range tests {
		_, err := tokens(strings.NewReader(tt.in))
		var se *Error
		if !errors.Is(err, tt.want) || !errors.As(err, &se) {
			t.Errorf("%.40q: err = %v, want %v", tt.in, err, tt.want)
			continue
		}
		if se.Line != tt.line || se.Col != tt.col {
			t.Errorf("%.40q: at %d:%d, want %d:%d (%v)", tt.in, se.Line, se.Col, tt.line, tt.col, err)
		}
	}
}

func TestDocumentLimit(t *testing.T) {
	s := New(strings.NewReader("<a>"+strings.Repeat("<b/>", 100000)+"</a>"), Limits{MaxDepth: 4, MaxAttrs: 4, MaxTokenBytes: 1024, MaxDocumentBytes: 100000})
	for {
		_, err := s.Next()
		if err != nil {
			if !errors.Is(err, ErrDocumentTooLarge) {
				t.Fatalf("err = %v", err)
			}
			return
		}
	}
}

// FuzzScanner checks that the scanner never panics, that every error is an
// *Error, and that the token stream does not depend on how reads split
// the input.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`<a/>`, `<?xml version="1.0"?><a xmlns:p="u"><p:b c="&amp;"/>x<![CDATA[y]]></a>`,
		"\xef\xbb\xbf<a>\r\n</a>", `<a><!-- c --><?pi?></a>`, `<!DOCTYPE a><a/>`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		whole, err1 := tokens(strings.NewReader(string(b)))
		split, err2 := tokens(iotest.OneByteReader(strings.NewReader(string(b))))
		if whole != split || (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("read splitting changes the result:\n%s %v\n%s %v", whole, err1, split, err2)
		}
		var se *Error
		if err1 != nil && !errors.As(err1, &se) {
			t.Fatalf("error %T %v is not an *Error", err1, err1)
		}
	})
}
