package feed

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// ToJSONLD writes the JSON-LD of the Turtle document read from r (an LDES
// document of this package; base is its URL): expanded JSON-LD, a
// @graph of one node object per subject in the order of first mention,
// every IRI in full, so that it needs no context. A document is one page
// (at most PageSize members), so it is held whole.
func ToJSONLD(w io.Writer, r io.Reader, base string) error {
	type node struct {
		id    string
		props map[string][]any
		order []string
	}
	var nodes []*node
	index := map[string]*node{}
	for tr, err := range rdf.Parse(r, rdf.Turtle, base) {
		if err != nil {
			return fmt.Errorf("feed: %w", err)
		}
		id := tr.S.Value
		if tr.S.IsBlank() {
			id = "_:" + id
		}
		n := index[id]
		if n == nil {
			n = &node{id: id, props: map[string][]any{}}
			index[id] = n
			nodes = append(nodes, n)
		}
		key, val := tr.P.Value, jsonldValue(tr.O)
		if key == rdf.RDFNS+"type" && tr.O.IsIRI() {
			key, val = "@type", tr.O.Value
		}
		if _, ok := n.props[key]; !ok {
			n.order = append(n.order, key)
		}
		n.props[key] = append(n.props[key], val)
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(`{"@graph":[`)
	for i, n := range nodes {
		if i > 0 {
			bw.WriteString(",\n")
		}
		bw.WriteString(`{"@id":`)
		writeJSON(bw, n.id)
		for _, k := range n.order {
			bw.WriteByte(',')
			writeJSON(bw, k)
			bw.WriteByte(':')
			writeJSON(bw, n.props[k])
		}
		bw.WriteByte('}')
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

func jsonldValue(t rdf.Term) any {
	switch {
	case t.IsIRI():
		return map[string]string{"@id": t.Value}
	case t.IsBlank():
		return map[string]string{"@id": "_:" + t.Value}
	case t.Lang != "":
		return map[string]string{"@value": t.Value, "@language": t.Lang}
	case t.Datatype != "" && t.Datatype != rdf.XSDString:
		return map[string]string{"@value": t.Value, "@type": t.Datatype}
	}
	return map[string]string{"@value": t.Value}
}

func writeJSON(w *bufio.Writer, v any) {
	b, _ := json.Marshal(v)
	w.Write(b)
}
