package sparql

// TODO(after merging rdfcore): delete this file; use rdf.Parse(r, rdf.NTriples, "").

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/resourcesync-go/resourcesync/rdf"
)

func parseNT(r io.Reader) iter.Seq2[rdf.Triple, error] {
	return func(yield func(rdf.Triple, error) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		line := 0
		for sc.Scan() {
			line++
			s := strings.TrimSpace(sc.Text())
			if s == "" || s[0] == '#' {
				continue
			}
			var t rdf.Triple
			var err error
			rest := s
			for i, dst := range []*rdf.Term{&t.S, &t.P, &t.O} {
				rest = strings.TrimLeft(rest, " \t")
				*dst, rest, err = ntTerm(rest)
				if err == nil && i < 2 && dst.IsLiteral() {
					err = fmt.Errorf("literal in position %d", i+1)
				}
				if err != nil {
					break
				}
			}
			if err == nil && strings.TrimSpace(rest) != "." {
				err = fmt.Errorf("expected '.', got %q", rest)
			}
			if err != nil {
				yield(rdf.Triple{}, fmt.Errorf("line %d: %w", line, err))
				return
			}
			if !yield(t, nil) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			yield(rdf.Triple{}, fmt.Errorf("line %d: %w", line+1, err))
		}
	}
}

func ntTerm(s string) (rdf.Term, string, error) {
	switch {
	case strings.HasPrefix(s, "<"):
		i := strings.IndexByte(s, '>')
		if i < 0 {
			return rdf.Term{}, s, fmt.Errorf("unterminated IRI")
		}
		v, err := unescape(s[1:i])
		return rdf.IRI(v), s[i+1:], err
	case strings.HasPrefix(s, "_:"):
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			i = len(s)
		}
		if i == 2 {
			return rdf.Term{}, s, fmt.Errorf("empty blank node label")
		}
		return rdf.Blank(s[2:i]), s[i:], nil
	case strings.HasPrefix(s, `"`):
		i := 1
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' {
				i++
			}
		}
		if i >= len(s) {
			return rdf.Term{}, s, fmt.Errorf("unterminated literal")
		}
		lex, err := unescape(s[1:i])
		if err != nil {
			return rdf.Term{}, s, err
		}
		rest := s[i+1:]
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
				return rdf.Term{}, s, fmt.Errorf("unterminated datatype")
			}
			return rdf.TypedLiteral(lex, rest[3:j]), rest[j+1:], nil
		}
		return rdf.Literal(lex), rest, nil
	}
	return rdf.Term{}, s, fmt.Errorf("unexpected %q", s[:min(len(s), 10)])
}

func unescape(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("invalid UTF-8")
	}
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("bad escape")
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case '"', '\'', '\\':
			b.WriteByte(s[i])
		case 'u', 'U':
			n := 4
			if s[i] == 'U' {
				n = 8
			}
			if i+1+n > len(s) {
				return "", fmt.Errorf("bad escape")
			}
			v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			if err != nil || !utf8.ValidRune(rune(v)) {
				return "", fmt.Errorf("bad escape")
			}
			b.WriteRune(rune(v))
			i += n
		default:
			return "", fmt.Errorf("bad escape")
		}
	}
	return b.String(), nil
}
