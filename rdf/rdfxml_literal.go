package rdf

import (
	"cmp"
	"encoding/xml"
	"io"
	"slices"
	"strings"
)

// xmlLiteral reads the content of a parseType="Literal" property element
// (whose start tag was start) up to and including its end tag, and
// returns it as an rdf:XMLLiteral lexical form in the manner of Exclusive
// XML Canonicalization with comments (as RDF/XML 7.2.17 asks): each namespace is declared on
// the outermost output element that uses it, attributes are sorted by
// namespace and local name, empty elements have end tags, and text is
// escaped the canonical way. Prefixes are the document's own.
func (p *rdfxmlParser) xmlLiteral(start xml.StartElement) (string, error) {
	var b strings.Builder
	var inner [][]xml.Attr          // namespace declarations of the literal's open elements
	var outDecl []map[string]string // prefix -> URI declared in the output, per open element
	var names []string              // qualified names of the open elements
	var innerBytes []int            // what each open element of the literal keeps
	held := 0                       // their sum, part of the retained bytes
	for {
		tok, err := p.token()
		if err != nil {
			if err == io.EOF {
				return "", p.errf("unexpected end of document in an XML literal")
			}
			return "", err
		}
		if b.Len() > rdfxmlMaxToken {
			return "", p.limitf("XML literal longer than %d bytes", rdfxmlMaxToken)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(p.stack)+len(inner) >= rdfxmlMaxDepth {
				return "", p.limitf("elements nested deeper than %d", rdfxmlMaxDepth)
			}
			var decls []xml.Attr
			cost := 2*len(t.Name.Local) + len(t.Name.Space)
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns" {
					decls = append(decls, a)
					cost += len(a.Name.Local) + len(a.Value)
				}
			}
			held += cost
			innerBytes = append(innerBytes, cost)
			if err := p.checkRetained(held); err != nil {
				return "", err
			}
			inner = append(inner, decls)
			scope := p.nsScope(inner)
			need := map[string]string{}
			qname := func(space, local string, attr bool) (string, bool) {
				switch {
				case space == "":
					if !attr {
						need[""] = ""
					}
					return local, true
				case space == xmlNS:
					return "xml:" + local, true
				}
				pre, ok := prefixFor(scope, space, attr)
				if !ok {
					return "", false
				}
				need[pre] = space
				if pre == "" {
					return local, true
				}
				return pre + ":" + local, true
			}
			name, ok := qname(t.Name.Space, t.Name.Local, false)
			if !ok {
				return "", p.errf("element <%s> in an XML literal uses an undeclared namespace prefix", t.Name.Local)
			}
			type attr struct{ space, local, qname, value string }
			var attrs []attr
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns" {
					continue
				}
				q, ok := qname(a.Name.Space, a.Name.Local, true)
				if !ok {
					return "", p.errf("attribute %s in an XML literal uses an undeclared namespace prefix", a.Name.Local)
				}
				attrs = append(attrs, attr{a.Name.Space, a.Name.Local, q, a.Value})
			}
			declared := map[string]string{}
			var pres []string
			for pre, uri := range need {
				if have, ok := outLookup(outDecl, pre); (ok && have == uri) || (!ok && pre == "" && uri == "") {
					continue
				}
				declared[pre] = uri
				pres = append(pres, pre)
			}
			slices.Sort(pres)
			b.WriteByte('<')
			b.WriteString(name)
			for _, pre := range pres {
				if pre == "" {
					b.WriteString(` xmlns="`)
				} else {
					b.WriteString(" xmlns:" + pre + `="`)
				}
				escapeXMLAttr(&b, declared[pre])
				b.WriteByte('"')
			}
			slices.SortFunc(attrs, func(x, y attr) int {
				return cmp.Or(strings.Compare(x.space, y.space), strings.Compare(x.local, y.local))
			})
			for _, a := range attrs {
				b.WriteString(" " + a.qname + `="`)
				escapeXMLAttr(&b, a.value)
				b.WriteByte('"')
			}
			b.WriteByte('>')
			outDecl = append(outDecl, declared)
			names = append(names, name)
		case xml.EndElement:
			if len(names) == 0 {
				return b.String(), nil
			}
			b.WriteString("</" + names[len(names)-1] + ">")
			names, inner, outDecl = names[:len(names)-1], inner[:len(inner)-1], outDecl[:len(outDecl)-1]
			held -= innerBytes[len(innerBytes)-1]
			innerBytes = innerBytes[:len(innerBytes)-1]
		case xml.CharData:
			escapeXMLText(&b, string(t))
		case xml.Comment:
			// RDF/XML canonicalises XML literals with comments.
			b.WriteString("<!--")
			b.Write(t)
			b.WriteString("-->")
		case xml.ProcInst:
			b.WriteString("<?" + t.Target)
			if len(t.Inst) > 0 {
				b.WriteByte(' ')
				b.Write(t.Inst)
			}
			b.WriteString("?>")
		}
	}
}

// nsScope is the prefix -> URI map in force, from the RDF document's open
// elements and then the literal's.
func (p *rdfxmlParser) nsScope(inner [][]xml.Attr) map[string]string {
	m := map[string]string{}
	add := func(decls []xml.Attr) {
		for _, a := range decls {
			if a.Name.Space == "xmlns" {
				m[a.Name.Local] = a.Value
			} else {
				m[""] = a.Value
			}
		}
	}
	for _, f := range p.stack {
		add(f.ns)
	}
	for _, d := range inner {
		add(d)
	}
	return m
}

// prefixFor finds a prefix bound to uri; the default namespace first for
// elements (attributes cannot use it), else the smallest prefix.
func prefixFor(scope map[string]string, uri string, attr bool) (string, bool) {
	if !attr && scope[""] == uri {
		return "", true
	}
	best, ok := "", false
	for pre, u := range scope {
		if u == uri && pre != "" && (!ok || pre < best) {
			best, ok = pre, true
		}
	}
	return best, ok
}

func outLookup(out []map[string]string, pre string) (string, bool) {
	for i := len(out) - 1; i >= 0; i-- {
		if u, ok := out[i][pre]; ok {
			return u, true
		}
	}
	return "", false
}

// xmlSink is what the escapers write to (a strings.Builder or the
// writers' bufio.Writer).
type xmlSink interface {
	WriteString(string) (int, error)
	WriteRune(rune) (int, error)
}

// escapeXMLText escapes character data as canonical XML does.
func escapeXMLText(b xmlSink, s string) {
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '\r':
			b.WriteString("&#xD;")
		default:
			b.WriteRune(r)
		}
	}
}

// escapeXMLAttr escapes an attribute value as canonical XML does.
func escapeXMLAttr(b xmlSink, s string) {
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '"':
			b.WriteString("&quot;")
		case '\t':
			b.WriteString("&#x9;")
		case '\n':
			b.WriteString("&#xA;")
		case '\r':
			b.WriteString("&#xD;")
		default:
			b.WriteRune(r)
		}
	}
}
