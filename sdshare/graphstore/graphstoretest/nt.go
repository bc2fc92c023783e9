package graphstoretest

import (
	"fmt"
	"strings"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// NT parses the small N-Triples subset the suite's cases are written in:
// one triple per line, <IRI>, _:label, "lexical" with an optional @lang or
// ^^<datatype>, no escapes. Blank lines and # comments are skipped. It
// keeps the suite free of the rdf package's parser, which stores may not
// want to depend on in their tests. It panics on anything else, since its
// input is the suite's own source.
func NT(doc string) []rdf.Triple {
	var out []rdf.Triple
	for n, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		rest := strings.TrimSuffix(strings.TrimSpace(line), ".")
		var terms []rdf.Term
		for range 3 {
			rest = strings.TrimSpace(rest)
			t, r, err := term(rest)
			if err != nil {
				panic(fmt.Sprintf("graphstoretest.NT line %d: %v: %q", n+1, err, line))
			}
			terms, rest = append(terms, t), r
		}
		if strings.TrimSpace(rest) != "" {
			panic(fmt.Sprintf("graphstoretest.NT line %d: trailing %q", n+1, rest))
		}
		out = append(out, rdf.Triple{S: terms[0], P: terms[1], O: terms[2]})
	}
	return out
}

func term(s string) (rdf.Term, string, error) {
	switch {
	case strings.HasPrefix(s, "<"):
		i := strings.IndexByte(s, '>')
		if i < 0 {
			return rdf.Term{}, "", fmt.Errorf("unterminated IRI")
		}
		return rdf.IRI(s[1:i]), s[i+1:], nil
	case strings.HasPrefix(s, "_:"):
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			i = len(s)
		}
		return rdf.Blank(s[2:i]), s[i:], nil
	case strings.HasPrefix(s, `"`):
		i := strings.IndexByte(s[1:], '"')
		if i < 0 {
			return rdf.Term{}, "", fmt.Errorf("unterminated literal")
		}
		lex, rest := s[1:i+1], s[i+2:]
		switch {
		case strings.HasPrefix(rest, "@"):
			j := strings.IndexAny(rest, " \t")
			if j < 0 {
				j = len(rest)
			}
			return rdf.LangLiteral(lex, rest[1:j]), rest[j:], nil
		case strings.HasPrefix(rest, "^^<"):
			j := strings.IndexByte(rest, '>')
			if j < 0 {
				return rdf.Term{}, "", fmt.Errorf("unterminated datatype")
			}
			return rdf.TypedLiteral(lex, rest[3:j]), rest[j+1:], nil
		}
		return rdf.Literal(lex), rest, nil
	}
	return rdf.Term{}, "", fmt.Errorf("no term")
}
