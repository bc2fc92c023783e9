package server

// The RDF operations the server needs, in one place so that they can follow
// package rdf as it grows (Graph, Hash, Negotiate, the N-Triples writer).
// Until then they are implemented here, as small as possible.

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/resourcesync-go/resourcesync/rdf"
)

const rdfsLabel = "http://www.w3.org/2000/01/rdf-schema#label"

// graph is an immutable in-memory graph indexed by subject.
type graph struct {
	bySubj   map[rdf.Term][]rdf.Triple
	subjects []rdf.Term // every subject, sorted by N-Triples form
	n        int
}

func newGraph(ts []rdf.Triple) *graph {
	g := &graph{bySubj: map[rdf.Term][]rdf.Triple{}}
	seen := map[rdf.Triple]bool{}
	for _, t := range ts {
		if seen[t] {
			continue
		}
		seen[t] = true
		if _, ok := g.bySubj[t.S]; !ok {
			g.subjects = append(g.subjects, t.S)
		}
		g.bySubj[t.S] = append(g.bySubj[t.S], t)
		g.n++
	}
	sort.Slice(g.subjects, func(i, j int) bool { return termKey(g.subjects[i]) < termKey(g.subjects[j]) })
	return g
}

func termKey(t rdf.Term) string { return ntTerm(t) }

// Len returns the number of triples.
func (g *graph) Len() int { return g.n }

// resources returns the IRI subjects (the resources of the collection) in
// sorted order.
func (g *graph) resources() []rdf.Term {
	var out []rdf.Term
	for _, s := range g.subjects {
		if s.IsIRI() {
			out = append(out, s)
		}
	}
	return out
}

// fragment returns r's statements plus their blank-node closure
// (SD-SRV-26); cycles are visited once.
func (g *graph) fragment(r rdf.Term) []rdf.Triple {
	return g.closure([]rdf.Term{r}, map[rdf.Term]bool{})
}

func (g *graph) closure(start []rdf.Term, seen map[rdf.Term]bool) []rdf.Triple {
	var out []rdf.Triple
	queue := slices.Clone(start)
	for _, s := range start {
		seen[s] = true
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, t := range g.bySubj[s] {
			out = append(out, t)
			if t.O.IsBlank() && !seen[t.O] {
				seen[t.O] = true
				queue = append(queue, t.O)
			}
		}
	}
	return out
}

// label returns r's rdfs:label (the first in N-Triples order), or "".
func (g *graph) label(r rdf.Term) string {
	best := ""
	for _, t := range g.bySubj[r] {
		if t.P.Value == rdfsLabel && t.P.IsIRI() && t.O.IsLiteral() && (best == "" || t.O.Value < best) {
			best = t.O.Value
		}
	}
	return best
}

// hashTriples returns a hash of ts that does not depend on their order.
// TODO(rdfcore): rdf.Hash, canonical over blank-node labels.
func hashTriples(ts []rdf.Triple) [32]byte {
	lines := make([]string, len(ts))
	for i, t := range ts {
		lines[i] = ntTriple(t)
	}
	slices.Sort(lines)
	return sha256.Sum256([]byte(strings.Join(lines, "")))
}

// ntTriple is t as one N-Triples line.
func ntTriple(t rdf.Triple) string {
	return ntTerm(t.S) + " " + ntTerm(t.P) + " " + ntTerm(t.O) + " .\n"
}

func ntTerm(t rdf.Term) string {
	switch t.Kind {
	case rdf.KindIRI:
		return "<" + escIRI(t.Value) + ">"
	case rdf.KindBlank:
		return "_:" + t.Value
	case rdf.KindLiteral:
		s := `"` + escLit(t.Value) + `"`
		switch {
		case t.Lang != "":
			return s + "@" + t.Lang
		case t.Datatype != "" && t.Datatype != rdf.XSDString:
			return s + "^^<" + escIRI(t.Datatype) + ">"
		}
		return s
	}
	return ""
}

func escIRI(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r <= 0x20 || strings.ContainsRune(`<>"{}|^`+"`\\", r) {
			fmt.Fprintf(&b, `\u%04X`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func escLit(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// writeTriples writes ts in format f.
func writeTriples(w io.Writer, f rdf.Format, ts iter.Seq[rdf.Triple]) error {
	if f == rdf.NTriples {
		bw := bufio.NewWriter(w)
		for t := range ts {
			if _, err := bw.WriteString(ntTriple(t)); err != nil {
				return err
			}
		}
		return bw.Flush()
	}
	wr, err := rdf.NewWriter(w, f)
	if err != nil {
		return err
	}
	if wr == nil {
		return rdf.ErrUnsupported
	}
	for t := range ts {
		if err := wr.Write(t); err != nil {
			return err
		}
	}
	return wr.Close()
}

// canWrite reports whether package rdf has a writer for f.
func canWrite(f rdf.Format) bool {
	if f == rdf.NTriples {
		return true
	}
	w, err := rdf.NewWriter(io.Discard, f)
	return err == nil && w != nil
}

// parse reads a document of format f.
func parse(r io.Reader, f rdf.Format, base string) iter.Seq2[rdf.Triple, error] {
	if f == rdf.NTriples && !ntReady() {
		return parseNT(r)
	}
	return rdf.Parse(r, f, base)
}

// ntReady reports whether package rdf reads N-Triples yet.
func ntReady() bool {
	for _, err := range rdf.Parse(strings.NewReader(""), rdf.NTriples, "") {
		return !errors.Is(err, rdf.ErrUnsupported)
	}
	return true
}

// parseNT is a minimal N-Triples reader (IRIs, blank nodes, literals with
// the common escapes), used until package rdf has the real one.
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
			var ts [3]rdf.Term
			for i := range ts {
				var err error
				ts[i], s, err = ntParseTerm(strings.TrimLeft(s, " \t"))
				if err != nil {
					yield(rdf.Triple{}, fmt.Errorf("line %d: %w", line, err))
					return
				}
			}
			if strings.TrimSpace(s) != "." {
				yield(rdf.Triple{}, fmt.Errorf("line %d: want '.'", line))
				return
			}
			if !yield(rdf.Triple{S: ts[0], P: ts[1], O: ts[2]}, nil) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			yield(rdf.Triple{}, err)
		}
	}
}

func ntParseTerm(s string) (rdf.Term, string, error) {
	switch {
	case strings.HasPrefix(s, "<"):
		i := strings.IndexByte(s, '>')
		if i < 0 {
			return rdf.Term{}, s, errors.New("unterminated IRI")
		}
		return rdf.IRI(s[1:i]), s[i+1:], nil
	case strings.HasPrefix(s, "_:"):
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			return rdf.Term{}, s, errors.New("blank node at end of line")
		}
		return rdf.Blank(s[2:i]), s[i:], nil
	case strings.HasPrefix(s, `"`):
		var b strings.Builder
		i := 1
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				case 'r':
					b.WriteByte('\r')
				case 't':
					b.WriteByte('\t')
				case 'u', 'U':
					n := 4
					if s[i] == 'U' {
						n = 8
					}
					if i+n >= len(s) {
						return rdf.Term{}, s, errors.New("bad escape")
					}
					v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
					if err != nil {
						return rdf.Term{}, s, errors.New("bad escape")
					}
					b.WriteRune(rune(v))
					i += n
				default:
					b.WriteByte(s[i])
				}
				continue
			}
			b.WriteByte(s[i])
		}
		if i >= len(s) {
			return rdf.Term{}, s, errors.New("unterminated literal")
		}
		rest := s[i+1:]
		switch {
		case strings.HasPrefix(rest, "@"):
			j := strings.IndexAny(rest, " \t.")
			if j < 0 {
				j = len(rest)
			}
			return rdf.LangLiteral(b.String(), rest[1:j]), rest[j:], nil
		case strings.HasPrefix(rest, "^^<"):
			j := strings.IndexByte(rest, '>')
			if j < 0 {
				return rdf.Term{}, s, errors.New("unterminated datatype")
			}
			return rdf.TypedLiteral(b.String(), rest[3:j]), rest[j+1:], nil
		}
		return rdf.Literal(b.String()), rest, nil
	}
	return rdf.Term{}, s, fmt.Errorf("unexpected %.10q", s)
}

// offer is a media type the server can answer with, and the format behind
// it.
type offer struct {
	Type   string     // the media type, as labelled in the response and in links
	Format rdf.Format // what is written
	Param  string     // the value of ?format= that selects it
}

// negotiate picks the offer Accept prefers (RFC 9110 12.5.1: the most
// specific matching range gives the q; ties go to the earlier offer). An
// absent Accept takes the first offer; ok is false when nothing is
// acceptable (406).
// TODO(rdfcore): rdf.Negotiate.
func negotiate(accept string, offers []offer) (offer, bool) {
	if strings.TrimSpace(accept) == "" {
		return offers[0], true
	}
	type rng struct {
		typ, sub string
		q        float64
	}
	var rs []rng
	for _, part := range strings.Split(accept, ",") {
		fields := strings.Split(part, ";")
		mt := strings.ToLower(strings.TrimSpace(fields[0]))
		typ, sub, ok := strings.Cut(mt, "/")
		if !ok {
			continue
		}
		q := 1.0
		for _, p := range fields[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f >= 0 && f <= 1 {
					q = f
				}
			}
		}
		rs = append(rs, rng{typ, sub, q})
	}
	best, bestQ := -1, 0.0
	for i, o := range offers {
		typ, sub, _ := strings.Cut(o.Type, "/")
		spec, q := -1, 0.0
		for _, r := range rs {
			s := -1
			switch {
			case r.typ == typ && r.sub == sub:
				s = 2
			case r.typ == typ && r.sub == "*":
				s = 1
			case r.typ == "*" && r.sub == "*":
				s = 0
			}
			if s > spec {
				spec, q = s, r.q
			}
		}
		if q > bestQ {
			best, bestQ = i, q
		}
	}
	if best < 0 {
		return offer{}, false
	}
	return offers[best], true
}

// all returns every triple of g, subject by subject.
func (g *graph) all() []rdf.Triple {
	out := make([]rdf.Triple, 0, g.n)
	for _, s := range g.subjects {
		out = append(out, g.bySubj[s]...)
	}
	return out
}
