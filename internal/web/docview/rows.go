package docview

import (
	"bytes"
	"html/template"
	"strconv"
	"strings"
)

// The table rows of a page are written by hand rather than by
// html/template: with a thousand rows a page, the template's reflection
// cost ten times the XML the page describes (issue 23). The output is
// byte for byte what the template wrote (TestRowsLikeTemplate): the same
// escaping of text and attribute values (html/template's
// htmlReplacementTable) and of URLs in href (its urlFilter and
// urlNormalizer).

// rowsHTML returns the rows of v as the template's <tbody> content.
func rowsHTML(v *view) template.HTML {
	var b bytes.Buffer
	b.Grow(len(v.Rows) * 512)
	for i := range v.Rows {
		writeRow(&b, v, &v.Rows[i])
	}
	return template.HTML(b.String())
}

func writeRow(b *bytes.Buffer, v *view, r *row) {
	b.WriteString("\n<tr><td class=\"num\">")
	esc(b, r.N)
	b.WriteString("</td><td class=\"url\">")
	if r.Href != "" {
		b.WriteString("<a href=\"")
		escURL(b, r.Href)
		b.WriteString("\">")
		esc(b, r.Loc)
		b.WriteString("</a>")
	} else {
		b.WriteString("<code>")
		esc(b, r.Loc)
		b.WriteString("</code>")
	}
	b.WriteString("</td>")
	if v.ColCap {
		b.WriteString("<td>")
		esc(b, r.Cap)
		b.WriteString("</td>")
	}
	if v.Change {
		b.WriteString("<td>")
		if r.Change != "" {
			b.WriteString("<span class=\"tag ")
			esc(b, r.Change)
			b.WriteString("\">")
			esc(b, r.Change)
			b.WriteString("</span> ")
		}
		if r.DateTime != "" {
			span(b, r.DateAt, r.DateTime)
		}
		b.WriteString("</td>")
	}
	if v.ColWhen {
		b.WriteString("<td>")
		if r.LastMod != "" {
			span(b, r.LastModAt, r.LastMod)
		}
		if !v.Change && r.DateTime != "" {
			if r.LastMod != "" {
				b.WriteString("<br>")
			}
			b.WriteString("<span class=\"muted\">datetime</span> ")
			span(b, r.DateAt, r.DateTime)
		}
		b.WriteString("</td>")
	}
	if v.ColSize {
		b.WriteString("<td class=\"num\">")
		if r.Size != "" {
			span(b, r.Exact, r.Size)
		}
		b.WriteString("</td>")
	}
	if v.ColHash {
		b.WriteString("<td>")
		if r.Hash != "" {
			b.WriteString("<span class=\"hash\" title=\"")
			esc(b, r.HashTitle)
			b.WriteString("\">")
			esc(b, r.Hash)
			b.WriteString("</span>")
		}
		b.WriteString("</td>")
	}
	if v.ColType {
		b.WriteString("<td>")
		esc(b, r.Type)
		b.WriteString("</td>")
	}
	if v.HasMore {
		b.WriteString("<td>")
		if r.MD != "" {
			esc(b, r.MD)
			b.WriteString("<br>")
		}
		for i := range r.Links {
			l := &r.Links[i]
			b.WriteString("<span class=\"tag\">")
			esc(b, l.Rel)
			b.WriteString("</span> ")
			if l.Href != "" {
				b.WriteString("<a href=\"")
				escURL(b, l.Href)
				b.WriteString("\">")
				esc(b, l.Text)
				b.WriteString("</a>")
			} else {
				b.WriteString("<code>")
				esc(b, l.Text)
				b.WriteString("</code>")
			}
			if l.Extra != "" {
				b.WriteString(" <span class=\"muted\">")
				esc(b, l.Extra)
				b.WriteString("</span>")
			}
			b.WriteString("<br>")
		}
		if r.More != 0 {
			b.WriteString("<span class=\"muted\">and ")
			b.WriteString(strconv.Itoa(r.More))
			b.WriteString(" more links</span>")
		}
		b.WriteString("</td>")
	}
	b.WriteString("</tr>")
}

// span writes <span title="title">text</span>.
func span(b *bytes.Buffer, title, text string) {
	b.WriteString("<span title=\"")
	esc(b, title)
	b.WriteString("\">")
	esc(b, text)
	b.WriteString("</span>")
}

// esc writes s escaped as html/template escapes a string in text and in
// a quoted attribute value. The replaced characters are ASCII, which no
// byte of a multi-byte UTF-8 sequence is, so a byte loop is the same as
// its rune loop (invalid bytes are copied, as there).
func esc(b *bytes.Buffer, s string) {
	w := 0
	for i := 0; i < len(s); i++ {
		var r string
		switch s[i] {
		case 0:
			r = "\uFFFD"
		case '"':
			r = "&#34;"
		case '&':
			r = "&amp;"
		case '\'':
			r = "&#39;"
		case '+':
			r = "&#43;"
		case '<':
			r = "&lt;"
		case '>':
			r = "&gt;"
		default:
			continue
		}
		b.WriteString(s[w:i])
		b.WriteString(r)
		w = i + 1
	}
	b.WriteString(s[w:])
}

// escURL writes s as html/template writes a string into a quoted href:
// a scheme other than http, https and mailto becomes #ZgotmplZ, the URL is
// normalised (bytes outside RFC 3986's sets percent-encoded, valid escapes
// kept), then escaped as an attribute value.
func escURL(b *bytes.Buffer, s string) {
	if proto, _, ok := strings.Cut(s, ":"); ok && !strings.Contains(proto, "/") &&
		!strings.EqualFold(proto, "http") && !strings.EqualFold(proto, "https") && !strings.EqualFold(proto, "mailto") {
		b.WriteString("#ZgotmplZ")
		return
	}
	const hex = "0123456789abcdef"
	w := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~',
			c == '!', c == '#', c == '$', c == '*', c == ',', c == '/', c == ':', c == ';', c == '=', c == '?', c == '@', c == '[', c == ']':
			continue
		case c == '&':
			b.WriteString(s[w:i])
			b.WriteString("&amp;")
		case c == '+':
			b.WriteString(s[w:i])
			b.WriteString("&#43;")
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			continue
		default:
			b.WriteString(s[w:i])
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
		w = i + 1
	}
	b.WriteString(s[w:])
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
