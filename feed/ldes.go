package feed

import (
	"bufio"
	"io"
	"strconv"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// Vocabularies of the LDES documents.
const (
	TreeNS    = "https://w3id.org/tree#"
	LDESNS    = "https://w3id.org/ldes#"
	ASNS      = "https://www.w3.org/ns/activitystreams#"
	DCTermsNS = "http://purl.org/dc/terms/"
	SchemaNS  = "http://schema.org/"
	RSNS      = "http://www.openarchives.org/rs/terms/"
	xsdNS     = "http://www.w3.org/2001/XMLSchema#"
)

// StreamURL is the IRI of the ldes:EventStream (its document's URL).
func (s *Stream) StreamURL() string { return s.BaseURL + StreamFile }

// NodeURL is the IRI of LDES node n.
func (s *Stream) NodeURL(n int64) string { return s.BaseURL + NodeFile(n) }

// VersionIRI is the IRI of the member of item it on node n.
func (s *Stream) VersionIRI(n int64, it *Item) string { return s.NodeURL(n) + "#" + it.Key }

const turtlePrefixes = "@prefix tree: <" + TreeNS + "> .\n" +
	"@prefix ldes: <" + LDESNS + "> .\n" +
	"@prefix as: <" + ASNS + "> .\n" +
	"@prefix dcterms: <" + DCTermsNS + "> .\n" +
	"@prefix schema: <" + SchemaNS + "> .\n" +
	"@prefix rs: <" + RSNS + "> .\n" +
	"@prefix xsd: <" + xsdNS + "> .\n\n"

func iri(s string) string { return rdf.IRI(s).String() }

func literal(s string) string { return rdf.Literal(s).String() }

func dateTime(t time.Time) string { return `"` + t.UTC().Format(time.RFC3339Nano) + `"^^xsd:dateTime` }

// writeStreamHead writes the description of the event stream.
func (s *Stream) writeStreamTurtle(w *bufio.Writer, members []string) {
	w.WriteString(iri(s.StreamURL()))
	w.WriteString(" a ldes:EventStream ;\n  ldes:timestampPath as:published ;\n  ldes:versionOfPath dcterms:isVersionOf ;\n  tree:view ")
	w.WriteString(iri(s.ViewURL()))
	for i, m := range members {
		if i == 0 {
			w.WriteString(" ;\n  tree:member ")
		} else {
			w.WriteString(",\n    ")
		}
		w.WriteString(m)
	}
	w.WriteString(" .\n\n")
}

// WriteStream writes the ldes:EventStream document in Turtle: the
// stream's paths and its view (see WriteView). Every LDES document is
// written in Turtle only; ToJSONLD gives the JSON-LD of any of them.
func (s *Stream) WriteStream(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(turtlePrefixes)
	s.writeStreamTurtle(bw, nil)
	return bw.Flush()
}

// writeRelation writes a node's relation to the node at url, whose
// members are not earlier than from.
func writeRelation(bw *bufio.Writer, url string, from time.Time) {
	bw.WriteString(" ;\n  tree:relation [ a tree:GreaterThanOrEqualToRelation ;\n    tree:node ")
	bw.WriteString(iri(url))
	bw.WriteString(" ;\n    tree:path as:published ;\n    tree:value ")
	bw.WriteString(dateTime(from))
	bw.WriteString(" ]")
}

// relationValue returns the tree:value of node n's relation to node n+1:
// the time of its last item. Every item of later nodes is at least as
// late (journal times never go backwards, and the baseline's time is the
// journal's last time when the stream began), so the value is known, and
// the node's bytes final, once the node is full.
func relationValue(items []Item, s *Stream) time.Time {
	if len(items) == 0 {
		return s.BaseTime
	}
	return items[len(items)-1].Time
}

// WriteNode writes LDES node n, whose items (oldest first) are given, of
// the stream whose journal's last seq is last, in Turtle: the stream with its members, the node with a
// tree:GreaterThanOrEqualToRelation on as:published to the next node
// (none on the last), and one member per change (the Refresh that begins
// the baseline is no member).
func (s *Stream) WriteNode(w io.Writer, n int64, items []Item, last uint64) error {
	hasNext := n < s.Pages(last)-1
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(turtlePrefixes)
	members := make([]string, 0, len(items))
	for i := range items {
		if items[i].Object != "" {
			members = append(members, "<#"+items[i].Key+">")
		}
	}
	// Relative IRIs (<#s5>) resolve against the node's URL; @base says so
	// for a copy read from elsewhere.
	bw.WriteString("@base " + iri(s.NodeURL(n)) + " .\n\n")
	s.writeStreamTurtle(bw, members)
	bw.WriteString("<> a tree:Node")
	if hasNext {
		writeRelation(bw, s.NodeURL(n+1), relationValue(items, s))
	}
	bw.WriteString(" .\n")
	for i := range items {
		it := &items[i]
		if it.Object == "" {
			continue
		}
		bw.WriteString("\n<#")
		bw.WriteString(it.Key)
		bw.WriteString("> a as:")
		bw.WriteString(it.Type)
		bw.WriteString(" ;\n  as:object ")
		o := iri(it.Object)
		bw.WriteString(o)
		bw.WriteString(" ;\n  dcterms:isVersionOf ")
		bw.WriteString(o)
		bw.WriteString(" ;\n  as:published ")
		bw.WriteString(dateTime(it.Time))
		if it.hasBytes() {
			bw.WriteString(" ;\n  schema:contentSize ")
			bw.WriteString(strconv.FormatInt(it.Size, 10))
			if it.MediaType != "" {
				bw.WriteString(" ;\n  schema:encodingFormat ")
				bw.WriteString(literal(it.MediaType))
			}
			bw.WriteString(" ;\n  rs:hash \"")
			bw.WriteString(it.digest())
			bw.WriteString("\"")
		}
		bw.WriteString(" .\n")
	}
	return bw.Flush()
}

// Bound is a relation's target: a node (a page or a segment) and the
// least as:published of its members.
type Bound struct {
	URL  string
	From time.Time
}

// ViewURL is the IRI of the stream's view, the root node (ViewFile).
func (s *Stream) ViewURL() string { return s.BaseURL + ViewFile }

// SegmentURL is the IRI of segment node k (SegmentFile).
func (s *Stream) SegmentURL(k int64) string { return s.BaseURL + SegmentFile(k) }

// WriteView writes the view: the root tree:Node, with a
// tree:GreaterThanOrEqualToRelation to every segment (bounds, oldest
// first). It changes with every new segment, and it is the one document
// a client that resumes must fetch again: ldes-client does not fetch a
// page it saw immutable again, so it reaches the new pages through the
// view and the last segment, never through the chain of pages alone.
func (s *Stream) WriteView(w io.Writer, segments []Bound) error {
	return s.writeIndex(w, s.ViewURL(), segments)
}

// WriteSegment writes segment node k: a tree:Node with a relation to each
// of its pages (at most SegmentSize; bounds oldest first). A segment
// whose pages are all full never changes.
func (s *Stream) WriteSegment(w io.Writer, k int64, pages []Bound) error {
	return s.writeIndex(w, s.SegmentURL(k), pages)
}

func (s *Stream) writeIndex(w io.Writer, self string, to []Bound) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(turtlePrefixes)
	s.writeStreamTurtle(bw, nil)
	bw.WriteString(iri(self))
	bw.WriteString(" a tree:Node")
	for _, b := range to {
		bw.WriteString(" ;\n  tree:relation [ a tree:GreaterThanOrEqualToRelation ;\n    tree:node ")
		bw.WriteString(iri(b.URL))
		bw.WriteString(" ;\n    tree:path as:published ;\n    tree:value ")
		bw.WriteString(dateTime(b.From))
		bw.WriteString(" ]")
	}
	bw.WriteString(" .\n")
	return bw.Flush()
}
