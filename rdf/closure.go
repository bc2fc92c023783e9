package rdf

// Closure returns the SDShare fragment of resource r (SD-SRV-26, also the
// S' of the client's fragment update, SD-CLI-12): r's statements, then,
// recursively, the statements of every blank node reached as an object.
// The walk stops at IRIs and literals, so the statements of an IRI object
// (and of its blank nodes) are not included; each blank node is visited
// once, so cycles of blank nodes end. bySubject is any subject index (an
// in-memory Graph, a store); its first error ends the walk and is
// returned. The result lists r's statements first, then each blank node's
// in the order they were reached.
func Closure(r Term, bySubject func(Term) ([]Triple, error)) ([]Triple, error) {
	out, err := bySubject(r)
	if err != nil {
		return nil, err
	}
	out = append([]Triple(nil), out...) // never alias the index's slice
	var seen map[Term]struct{}
	for i := 0; i < len(out); i++ {
		o := out[i].O
		if o.Kind != KindBlank || o == r {
			continue
		}
		if seen == nil {
			seen = make(map[Term]struct{})
		}
		if _, ok := seen[o]; ok {
			continue
		}
		seen[o] = struct{}{}
		more, err := bySubject(o)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}
