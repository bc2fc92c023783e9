package rdf

import (
	"fmt"
	"strconv"
	"strings"
)

// mediaTypes lists each format's media types, the preferred one first.
// text/plain is N-Triples' 2004-era type, the one SDShare names (SD-SRV-29).
var mediaTypes = map[Format][]string{
	NTriples: {"application/n-triples", "text/plain"},
	Turtle:   {"text/turtle", "application/x-turtle"},
	RDFXML:   {"application/rdf+xml"},
}

// exactOnly lists deprecated aliases that a wildcard range does not
// select: "application/*" means RDF/XML or N-Triples, never x-turtle.
var exactOnly = map[string]bool{"application/x-turtle": true}

// FormatFor returns the format of a Content-Type or link type value,
// case-insensitively and ignoring parameters such as charset.
func FormatFor(mediaType string) (Format, bool) {
	mt, _, _ := strings.Cut(mediaType, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	for _, f := range []Format{NTriples, Turtle, RDFXML} {
		for _, a := range mediaTypes[f] {
			if a == mt {
				return f, true
			}
		}
	}
	return 0, false
}

// MediaType returns f's preferred media type, "" for an unknown format.
func (f Format) MediaType() string {
	if ts := mediaTypes[f]; len(ts) > 0 {
		return ts[0]
	}
	return ""
}

// String returns f's short name ("nt", "ttl", "rdfxml"), also its usual
// file extension but for RDF/XML (".rdf").
func (f Format) String() string {
	switch f {
	case NTriples:
		return "nt"
	case Turtle:
		return "ttl"
	case RDFXML:
		return "rdfxml"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// FormatByName returns the format a command-line flag names:
// nt/ntriples/n-triples, ttl/turtle, rdf/rdfxml/rdf-xml/xml (any case).
func FormatByName(name string) (Format, bool) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "nt", "ntriples", "n-triples":
		return NTriples, true
	case "ttl", "turtle":
		return Turtle, true
	case "rdf", "rdfxml", "rdf-xml", "rdf/xml", "xml":
		return RDFXML, true
	}
	return 0, false
}

// mediaRange is one element of an Accept header.
type mediaRange struct {
	typ, sub string // lower-case; "*" for wildcards
	q        float64
}

// parseAccept parses an Accept header (RFC 9110 section 12.5.1). Elements
// it cannot read are skipped, as RFC 9110 allows a server to disregard
// what it does not understand. Parameters other than q are ignored.
func parseAccept(accept string) []mediaRange {
	var out []mediaRange
	for elem := range strings.SplitSeq(accept, ",") {
		parts := strings.Split(elem, ";")
		mt := strings.ToLower(strings.TrimSpace(parts[0]))
		if mt == "" {
			continue
		}
		if mt == "*" { // old clients (Java's URLConnection) send "*; q=.2"
			mt = "*/*"
		}
		typ, sub, ok := strings.Cut(mt, "/")
		if !ok || typ == "" || sub == "" || strings.ContainsAny(sub, "/ ") || (typ == "*" && sub != "*") {
			continue
		}
		r := mediaRange{typ: typ, sub: sub, q: 1}
		valid := true
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(p, "=")
			if !strings.EqualFold(strings.TrimSpace(k), "q") {
				continue
			}
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || q < 0 || q > 1 || q != q {
				valid = false
				break
			}
			r.q = q
			break // parameters after q are accept-ext, not media type parameters
		}
		if valid {
			out = append(out, r)
		}
	}
	return out
}

// specificity tells how a range matches media type mt: 3 exactly, 2 by
// type/*, 1 by */*, 0 not at all.
func (r mediaRange) specificity(mt string) int {
	typ, sub, _ := strings.Cut(mt, "/")
	switch {
	case r.typ == typ && r.sub == sub:
		return 3
	case r.typ == typ && r.sub == "*":
		return 2
	case r.typ == "*":
		return 1
	}
	return 0
}

// Negotiate picks the format to answer a request with Accept header
// accept, among offers (the server's formats, preferred first). It returns
// the format and the media type to put in Content-Type: the one the client
// named when it is one of the format's types (text/plain stays
// text/plain), else the format's preferred type. Each of a format's media
// types takes the q of the most specific range that matches it; q=0
// excludes it. A format's other types are matched by name or type/*
// (text/* selects N-Triples as text/plain), never by */*, so that
// "text/turtle;q=0, */*" excludes Turtle. The highest q wins; ties go to the more specific match,
// then to the earlier offer. An empty Accept (or one with nothing
// readable) means */*. ok is false when nothing is acceptable: the server
// answers 406.
func Negotiate(accept string, offers []Format) (f Format, mediaType string, ok bool) {
	if len(offers) == 0 {
		return 0, "", false
	}
	ranges := parseAccept(accept)
	if len(ranges) == 0 {
		return offers[0], offers[0].MediaType(), offers[0].MediaType() != ""
	}
	bestQ, bestSpec := 0.0, 0
	for _, offer := range offers {
		for i, mt := range mediaTypes[offer] {
			q, spec := 0.0, 0
			for _, r := range ranges {
				s := r.specificity(mt)
				if i > 0 && (s == 1 || s == 2 && exactOnly[mt]) {
					s = 0 // aliases are not picked by */*, legacy ones only by name
				}
				if s > spec || (s == spec && s > 0 && r.q > q) {
					q, spec = r.q, s
				}
			}
			if spec == 0 || q <= 0 {
				continue
			}
			if q > bestQ || (q == bestQ && spec > bestSpec) {
				f, mediaType, ok = offer, mt, true
				bestQ, bestSpec = q, spec
			}
		}
	}
	return f, mediaType, ok
}
