package boltstore_test

import (
	"iter"
	"strconv"

	"github.com/resourcesync-go/resourcesync/rdf"
)

var genPreds = func() []rdf.Term {
	var ps []rdf.Term
	for _, p := range []string{"title", "description", "created", "creator", "subject", "seeAlso", "part", "type"} {
		ps = append(ps, rdf.IRI("http://purl.org/dc/terms/"+p))
	}
	return ps
}()

// generated yields a snapshot of n triples shaped like a real collection:
// 8 statements per resource, mostly distinct literals (titles, dates,
// language-tagged text), links between resources, and every 16th triple
// a blank node with two statements of its own. Labels are scoped to the
// snapshot, as a parser would yield them.
func generated(n int) iter.Seq2[rdf.Triple, error] {
	return func(yield func(rdf.Triple, error) bool) {
		i := 0
		emit := func(t rdf.Triple) bool {
			if i >= n {
				return false
			}
			i++
			return yield(t, nil)
		}
		for r := 0; i < n; r++ {
			s := rdf.IRI("http://example.org/collection/resource/" + strconv.Itoa(r))
			for k, p := range genPreds {
				var o rdf.Term
				switch k {
				case 0:
					o = rdf.Literal("Resource number " + strconv.Itoa(r))
				case 1:
					o = rdf.LangLiteral("A description of resource "+strconv.Itoa(r)+", long enough to look like text.", "en")
				case 2:
					o = rdf.TypedLiteral("2026-11-"+strconv.Itoa(10+r%20)+"T10:00:00Z", "http://www.w3.org/2001/XMLSchema#dateTime")
				case 3:
					o = rdf.IRI("http://example.org/people/" + strconv.Itoa(r%1000))
				case 4:
					o = rdf.Literal("topic " + strconv.Itoa(r%500))
				case 5:
					o = rdf.IRI("http://example.org/collection/resource/" + strconv.Itoa((r*7919)%(n/8+1)))
				case 7:
					o = rdf.IRI("http://example.org/types/T" + strconv.Itoa(r%20))
				}
				if k == 6 {
					if r%2 == 0 {
						b := rdf.Blank("p" + strconv.Itoa(r))
						if !emit(rdf.Triple{S: s, P: p, O: b}) ||
							!emit(rdf.Triple{S: b, P: genPreds[0], O: rdf.Literal("part of " + strconv.Itoa(r))}) ||
							!emit(rdf.Triple{S: b, P: genPreds[7], O: rdf.IRI("http://example.org/types/Part")}) {
							return
						}
					}
					continue
				}
				if !emit(rdf.Triple{S: s, P: p, O: o}) {
					return
				}
			}
		}
	}
}
