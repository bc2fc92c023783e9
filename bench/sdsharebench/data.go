//go:build linux

package main

import (
	"fmt"
	"iter"
	"os"
	"path/filepath"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// The generated dataset: resources of 15 triples each, shaped like a
// catalogue record. 12 triples have the resource as subject (a type, labels
// in two languages, a title with characters N-Triples escapes, a long
// description, two xsd:dateTime values, an xsd:integer, three links to
// other resources by three predicates, so that no two triples are equal,
// and a link to an address), and 3 have the address's blank node as
// subject: 20% of the triples are in blank-node structures, and every
// fragment carries a blank-node closure.
const (
	ns          = "http://example.org/"
	perResource = 15
	dcterms     = "http://purl.org/dc/terms/"
	rdfsLabel   = "http://www.w3.org/2000/01/rdf-schema#label"
	xsdDateTime = rdf.XSDNS + "dateTime"
	xsdInteger  = rdf.XSDNS + "integer"
)

// resources is how many resources make about n triples (at least one).
func resources(n int) int { return max(1, (n+perResource-1)/perResource) }

func resourceIRI(i int) rdf.Term { return rdf.IRI(fmt.Sprintf("%sr/%d", ns, i)) }

// resourceTriples returns resource i's fragment among r resources, as it is
// in version v (0: the snapshot; 1: after the change the fragments bring).
// bnode names its blank node (unique in a document).
func resourceTriples(i, r, v int, bnode string) []rdf.Triple {
	s := resourceIRI(i)
	b := rdf.Blank(bnode)
	p := func(local string) rdf.Term { return rdf.IRI(ns + "vocab#" + local) }
	dc := func(local string) rdf.Term { return rdf.IRI(dcterms + local) }
	desc := fmt.Sprintf("Resource %d is one of %d generated records; its text is long enough to look like a real abstract, with some non-ASCII: Zürich, Ærøskøbing, 東京.", i, r)
	modified := fmt.Sprintf("2024-%02d-%02dT%02d:%02d:%02dZ", 1+i%12, 1+i%28, i%24, i%60, (i/60)%60)
	if v > 0 {
		desc = fmt.Sprintf("Resource %d, revision %d: the description changed, and so did the modification time.", i, v)
		modified = fmt.Sprintf("2025-%02d-%02dT%02d:%02d:%02d.%03dZ", 1+i%12, 1+i%28, i%24, i%60, (i/60)%60, v)
	}
	return []rdf.Triple{
		{S: s, P: rdf.IRI(rdf.RDFNS + "type"), O: rdf.IRI(fmt.Sprintf("%sClass%d", ns+"vocab#", i%7))},
		{S: s, P: rdf.IRI(rdfsLabel), O: rdf.LangLiteral(fmt.Sprintf("Resource %d", i), "en")},
		{S: s, P: rdf.IRI(rdfsLabel), O: rdf.LangLiteral(fmt.Sprintf("Ressource n° %d", i), "fr")},
		{S: s, P: dc("title"), O: rdf.Literal(fmt.Sprintf("The \"title\" of record %d\twith a tab\\backslash", i))},
		{S: s, P: dc("description"), O: rdf.Literal(desc)},
		{S: s, P: dc("created"), O: rdf.TypedLiteral(fmt.Sprintf("20%02d-%02d-%02dT10:00:00+01:00", i%24, 1+i%12, 1+i%28), xsdDateTime)},
		{S: s, P: dc("modified"), O: rdf.TypedLiteral(modified, xsdDateTime)},
		{S: s, P: p("count"), O: rdf.TypedLiteral(fmt.Sprint(i*7), xsdInteger)},
		{S: s, P: p("cites"), O: resourceIRI((i*7919 + 1) % r)},
		{S: s, P: p("seeAlso"), O: resourceIRI((i*31 + 2) % r)},
		{S: s, P: p("next"), O: resourceIRI((i + 1) % r)},
		{S: s, P: p("address"), O: b},
		{S: b, P: p("street"), O: rdf.Literal(fmt.Sprintf("%d Main Street", i))},
		{S: b, P: p("city"), O: rdf.LangLiteral(fmt.Sprintf("City %d", i%100), "en")},
		{S: b, P: p("postcode"), O: rdf.Literal(fmt.Sprint(10000 + i%90000))},
	}
}

// changed returns the k-th of f changed resources among r, evenly spread.
func changed(k, f, r int) int { return int(int64(k) * int64(r) / int64(f)) }

// fragmentCount is how many fragments a run can change: at most one per
// resource.
func fragmentCount(f, r int) int { return min(f, r) }

// dataset yields the r resources' triples; the resources isChanged picks
// are in version 1.
func dataset(r int, isChanged func(int) bool) iter.Seq[rdf.Triple] {
	return func(yield func(rdf.Triple) bool) {
		for i := range r {
			v := 0
			if isChanged != nil && isChanged(i) {
				v = 1
			}
			for _, t := range resourceTriples(i, r, v, fmt.Sprintf("a%d", i)) {
				if !yield(t) {
					return
				}
			}
		}
	}
}

// fragments returns the f changed fragments (version 1) of a dataset of r
// resources, in the order the bench applies them.
func fragments(f, r int) [][]rdf.Triple {
	out := make([][]rdf.Triple, f)
	for k := range f {
		i := changed(k, f, r)
		out[k] = resourceTriples(i, r, 1, fmt.Sprintf("f%d", k))
	}
	return out
}

// Files of a run's directory.
const (
	fileNT      = "data.nt"
	fileTurtle  = "data.ttl"
	fileRDFXML  = "data.rdf"
	fileSmallNT = "small.nt"
	fileNextNT  = "data-changed.nt" // data.nt with the fragments' changes
)

// writeFiles writes the dataset of about n triples in the three formats,
// the small dataset of about small triples, and the changed dataset.
func writeFiles(dir string, n, small, f int) error {
	r := resources(n)
	f = fragmentCount(f, r)
	changedSet := make(map[int]bool, f)
	for k := range f {
		changedSet[changed(k, f, r)] = true
	}
	type out struct {
		name string
		fmt  rdf.Format
		data iter.Seq[rdf.Triple]
	}
	for _, o := range []out{
		{fileNT, rdf.NTriples, dataset(r, nil)},
		{fileTurtle, rdf.Turtle, dataset(r, nil)},
		{fileRDFXML, rdf.RDFXML, dataset(r, nil)},
		{fileSmallNT, rdf.NTriples, dataset(resources(small), nil)},
		{fileNextNT, rdf.NTriples, dataset(r, func(i int) bool { return changedSet[i] })},
	} {
		if err := writeFile(filepath.Join(dir, o.name), o.fmt, o.data); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, f rdf.Format, ts iter.Seq[rdf.Triple]) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	defer file.Close()
	w, err := rdf.NewWriter(file, f)
	if err != nil {
		return err
	}
	for t := range ts {
		if err := w.Write(t); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return file.Close()
}
