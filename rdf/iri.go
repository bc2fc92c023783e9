package rdf

import "strings"

// ResolveIRI resolves the IRI reference ref against the absolute IRI base
// by RFC 3986 section 5.2 (strict parser: a reference with a scheme is taken
// as absolute even if it equals the base's scheme). The result is not
// otherwise normalised: RDF compares IRIs as strings, and a reader must not
// change an IRI the document wrote in full. An empty base returns ref.
func ResolveIRI(base, ref string) string {
	if base == "" {
		return ref
	}
	rs, ra, rp, rq, rf := splitIRI(ref)
	if rs.ok {
		return joinIRI(rs, ra, opt{removeDots(rp.s), true}, rq, rf)
	}
	bs, ba, bp, bq, _ := splitIRI(base)
	var ta, tp, tq opt
	switch {
	case ra.ok:
		ta, tp, tq = ra, opt{removeDots(rp.s), true}, rq
	case rp.s == "":
		ta, tp = ba, bp
		if rq.ok {
			tq = rq
		} else {
			tq = bq
		}
	default:
		ta, tq = ba, rq
		if strings.HasPrefix(rp.s, "/") {
			tp = opt{removeDots(rp.s), true}
		} else {
			tp = opt{removeDots(mergePaths(ba.ok, bp.s, rp.s)), true}
		}
	}
	return joinIRI(bs, ta, tp, tq, rf)
}

// opt is a URI component that may be absent (ok false), which RFC 3986
// distinguishes from present-but-empty ("?" versus no query).
type opt struct {
	s  string
	ok bool
}

// splitIRI splits s into scheme, authority, path, query and fragment as
// the regular expression of RFC 3986 appendix B does, except that a
// scheme must be ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ): "0:x" and
// "a!:x" are relative paths, as a resolver must take them.
func splitIRI(s string) (scheme, auth, path, query, frag opt) {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		frag = opt{s[i+1:], true}
		s = s[:i]
	}
	if i := strings.IndexByte(s, '?'); i >= 0 {
		query = opt{s[i+1:], true}
		s = s[:i]
	}
	if hasScheme(s) {
		i := strings.IndexByte(s, ':')
		scheme = opt{s[:i], true}
		s = s[i+1:]
	}
	if strings.HasPrefix(s, "//") {
		s = s[2:]
		i := strings.IndexByte(s, '/')
		if i < 0 {
			i = len(s)
		}
		auth = opt{s[:i], true}
		s = s[i:]
	}
	return scheme, auth, opt{s, true}, query, frag
}

func joinIRI(scheme, auth, path, query, frag opt) string {
	var b strings.Builder
	if scheme.ok {
		b.WriteString(scheme.s)
		b.WriteByte(':')
	}
	if auth.ok {
		b.WriteString("//")
		b.WriteString(auth.s)
	}
	b.WriteString(path.s)
	if query.ok {
		b.WriteByte('?')
		b.WriteString(query.s)
	}
	if frag.ok {
		b.WriteByte('#')
		b.WriteString(frag.s)
	}
	return b.String()
}

// mergePaths is RFC 3986 section 5.2.3.
func mergePaths(baseHasAuth bool, basePath, refPath string) string {
	if baseHasAuth && basePath == "" {
		return "/" + refPath
	}
	i := strings.LastIndexByte(basePath, '/')
	return basePath[:i+1] + refPath
}

// removeDots is remove_dot_segments of RFC 3986 section 5.2.4.
func removeDots(in string) string {
	if !strings.Contains(in, ".") {
		return in
	}
	var out []string // output segments, each with its leading "/" if any
	for in != "" {
		switch {
		case strings.HasPrefix(in, "../"):
			in = in[3:]
		case strings.HasPrefix(in, "./"):
			in = in[2:]
		case strings.HasPrefix(in, "/./"):
			in = in[2:]
		case in == "/.":
			in = "/"
		case strings.HasPrefix(in, "/../"):
			in = in[3:]
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case in == "/..":
			in = "/"
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case in == "." || in == "..":
			in = ""
		default:
			i := strings.IndexByte(in[1:], '/')
			if i < 0 {
				i = len(in)
			} else {
				i++
			}
			out = append(out, in[:i])
			in = in[i:]
		}
	}
	return strings.Join(out, "")
}
