package ldes

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// Vocabularies.
const (
	TreeNS    = "https://w3id.org/tree#"
	LDESNS    = "https://w3id.org/ldes#"
	ASNS      = "https://www.w3.org/ns/activitystreams#"
	DCTermsNS = "http://purl.org/dc/terms/"
	SchemaNS  = "http://schema.org/"
	ProvNS    = "http://www.w3.org/ns/prov#"
	RDFType   = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
)

// MaxTriples bounds the statements of one document, which is indexed in
// memory (about 200 bytes a statement): 50 MB at most, and 2,500 times the
// page of 100 members of 10 statements publishers commonly use.
const MaxTriples = 250_000

// ErrNotLDES is returned for a document that names no tree:member, no
// tree:relation and no ldes:EventStream.
var ErrNotLDES = errors.New("not a Linked Data Event Stream document")

// Relation is one tree:relation of a node.
type Relation struct {
	Type  string // the relation's class, e.g. TreeNS+"GreaterThanOrEqualToRelation"; "" when untyped
	Node  string // tree:node
	Path  string // tree:path, when an IRI
	Value string // tree:value's lexical form
}

// Member is one tree:member, read as a change to one object.
type Member struct {
	ID       string
	Object   string
	Time     time.Time // zero when the member has none
	Deleted  bool
	Length   int64 // -1 when not given
	Format   string
	SHA256   string // hex, "" when not given
	VersionO string // the versionOf value, "" when none (Object is then the member or its as:object)
	// Triples are the member's statements with those of the blank nodes
	// they reach (its SDShare fragment), as written in the document.
	Triples []rdf.Triple
}

// Doc is what one document says.
type Doc struct {
	// Stream is the ldes:EventStream's IRI, "" when the document names none.
	Stream string
	// TimestampPath and VersionOfPath are the stream's, when given.
	TimestampPath, VersionOfPath string
	// Views are the stream's tree:view nodes.
	Views     []string
	Relations []Relation
	Members   []Member
}

// Decode reads one document in format f; base resolves relative IRIs and
// url names the document in errors.
func Decode(r io.Reader, f rdf.Format, base, url string) (*Doc, error) {
	bySubj := map[string][]rdf.Triple{}
	var memberIDs []string
	seenMember := map[string]bool{}
	n := 0
	d := &Doc{}
	implied, isNode := "", false
	for t, err := range rdf.Parse(r, f, base) {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", url, err)
		}
		if n++; n > MaxTriples {
			return nil, fmt.Errorf("%s: more than %d statements in one document", url, MaxTriples)
		}
		k := key(t.S)
		bySubj[k] = append(bySubj[k], t)
		switch t.P.Value {
		case TreeNS + "member":
			if t.O.IsLiteral() {
				continue // a member is a node, not a value
			}
			if mk := key(t.O); !seenMember[mk] {
				seenMember[mk] = true
				memberIDs = append(memberIDs, mk)
			}
		case RDFType:
			if t.O.Value == LDESNS+"EventStream" && d.Stream == "" {
				d.Stream = t.S.Value
			}
			if t.O.Value == TreeNS+"Node" {
				isNode = true
			}
		case LDESNS + "timestampPath", TreeNS + "view":
			// A stream that does not say its class (ldes-client's
			// test streams) is known by its properties.
			if implied == "" && t.S.IsIRI() {
				implied = t.S.Value
			}
		}
	}
	if d.Stream == "" {
		d.Stream = implied
	}
	if d.Stream != "" {
		for _, t := range bySubj[key(rdf.IRI(d.Stream))] {
			switch t.P.Value {
			case LDESNS + "timestampPath":
				d.TimestampPath = t.O.Value
			case LDESNS + "versionOfPath":
				d.VersionOfPath = t.O.Value
			case TreeNS + "view":
				if t.O.IsIRI() {
					d.Views = append(d.Views, t.O.Value)
				}
			}
		}
	}
	for _, ts := range bySubj {
		for _, t := range ts {
			if t.P.Value != TreeNS+"relation" {
				continue
			}
			rel := Relation{}
			for _, rt := range bySubj[key(t.O)] {
				switch rt.P.Value {
				case RDFType:
					rel.Type = rt.O.Value
				case TreeNS + "node":
					if rt.O.IsIRI() {
						rel.Node = rt.O.Value
					}
				case TreeNS + "path":
					if rt.O.IsIRI() {
						rel.Path = rt.O.Value
					}
				case TreeNS + "value":
					rel.Value = rt.O.Value
				}
			}
			if rel.Node != "" {
				d.Relations = append(d.Relations, rel)
			}
		}
	}
	if d.Stream == "" && !isNode && len(memberIDs) == 0 && len(d.Relations) == 0 {
		return nil, fmt.Errorf("%s: %w", url, ErrNotLDES)
	}
	given := 0
	for _, mk := range memberIDs {
		m, err := d.member(mk, bySubj)
		if err != nil {
			return nil, fmt.Errorf("%s: member %s: %w", url, strings.TrimPrefix(mk, "<"), err)
		}
		// Members sharing blank nodes each get a copy of them: without
		// this bound a document of n+m statements gives n×m.
		if given += len(m.Triples); given > MaxTriples {
			return nil, fmt.Errorf("%s: its members reach more than %d statements (blank nodes shared among them)", url, MaxTriples)
		}
		d.Members = append(d.Members, m)
	}
	return d, nil
}

// key names a subject: blank nodes and IRIs never collide.
func key(t rdf.Term) string {
	if t.IsBlank() {
		return "_:" + t.Value
	}
	return t.Value
}

func (d *Doc) member(mk string, bySubj map[string][]rdf.Triple) (Member, error) {
	m := Member{ID: mk, Length: -1}
	m.Triples = closure(mk, bySubj)
	var asObject, isVersionOf string
	var times []string
	for _, t := range bySubj[mk] {
		p, o := t.P.Value, t.O
		switch {
		case d.VersionOfPath != "" && p == d.VersionOfPath && o.IsIRI():
			m.VersionO = o.Value
		case p == DCTermsNS+"isVersionOf" && o.IsIRI():
			isVersionOf = o.Value
		case p == ASNS+"object" && o.IsIRI():
			asObject = o.Value
		case p == RDFType:
			switch o.Value {
			case ASNS + "Delete", ASNS + "Remove", LDESNS + "DeletedLDESMember":
				m.Deleted = true
			}
		case p == SchemaNS+"contentSize" || p == "https://schema.org/contentSize":
			if v, err := strconv.ParseInt(strings.TrimSpace(o.Value), 10, 64); err == nil && v >= 0 {
				m.Length = v
			}
		case p == SchemaNS+"encodingFormat" || p == "https://schema.org/encodingFormat":
			m.Format = o.Value
		case p == SchemaNS+"sha256" || p == "https://schema.org/sha256":
			m.SHA256 = strings.ToLower(o.Value)
		}
		if o.IsLiteral() && (d.TimestampPath != "" && p == d.TimestampPath ||
			d.TimestampPath == "" && (p == ASNS+"published" || p == ProvNS+"generatedAtTime" || p == DCTermsNS+"modified")) {
			times = append(times, o.Value)
		}
	}
	switch {
	case m.VersionO != "":
		m.Object = m.VersionO
	case isVersionOf != "":
		m.Object = isVersionOf
	case asObject != "":
		m.Object = asObject
	case !strings.HasPrefix(mk, "_:"):
		m.Object = mk
	default:
		return m, errors.New("a blank node member names no object it is a version of")
	}
	for _, s := range times {
		t, err := parseTime(s)
		if err != nil {
			return m, fmt.Errorf("timestamp %q: %w", s, err)
		}
		if t.After(m.Time) {
			m.Time = t
		}
	}
	return m, nil
}

// Sniff reports whether head, the start of a document, looks like an LDES
// document in a syntax Decode reads or in JSON-LD (the consumer then asks
// for Turtle): it names an ldes:EventStream, or a tree:member or
// tree:relation.
func Sniff(head []byte) bool {
	s := string(head)
	if strings.Contains(s, "EventStream") && (strings.Contains(s, LDESNS) || strings.Contains(s, "ldes:")) {
		return true
	}
	return strings.Contains(s, TreeNS) && (strings.Contains(s, "member") || strings.Contains(s, "relation") || strings.Contains(s, "view"))
}

// parseTime reads an xsd:dateTime; one without a zone is taken as UTC.
func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		if t2, err2 := time.Parse("2006-01-02T15:04:05.999999999", s); err2 == nil {
			return t2, nil
		}
	}
	return t, err
}

// closure is the statements of subject k and, recursively, of the blank
// nodes they reach, each once (cycle-safe).
func closure(k string, bySubj map[string][]rdf.Triple) []rdf.Triple {
	var out []rdf.Triple
	seen := map[string]bool{k: true}
	todo := []string{k}
	for len(todo) > 0 {
		s := todo[0]
		todo = todo[1:]
		for _, t := range bySubj[s] {
			out = append(out, t)
			if t.O.IsBlank() {
				if ok := key(t.O); !seen[ok] {
					seen[ok] = true
					todo = append(todo, ok)
				}
			}
		}
	}
	return out
}
