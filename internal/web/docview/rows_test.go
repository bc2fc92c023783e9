package docview

import (
	"html/template"
	"net/url"
	"strings"
	"testing"
)

// rowsTpl is the template that wrote the rows before rowsHTML: the
// reference its output must equal byte for byte.
var rowsTpl = template.Must(template.New("rows").Parse(`<tbody>{{$change := .Change}}{{$nochange := not .Change}}{{$more := .HasMore}}{{$cap := .ColCap}}{{$when := .ColWhen}}{{$size := .ColSize}}{{$hash := .ColHash}}{{$type := .ColType}}{{range .Rows}}
<tr><td class="num">{{.N}}</td><td class="url">{{if .Href}}<a href="{{.Href}}">{{.Loc}}</a>{{else}}<code>{{.Loc}}</code>{{end}}</td>{{if $cap}}<td>{{.Cap}}</td>{{end}}{{if $change}}<td>{{if .Change}}<span class="tag {{.Change}}">{{.Change}}</span> {{end}}{{if .DateTime}}<span title="{{.DateAt}}">{{.DateTime}}</span>{{end}}</td>{{end}}{{if $when}}<td>{{if .LastMod}}<span title="{{.LastModAt}}">{{.LastMod}}</span>{{end}}{{if $nochange}}{{if .DateTime}}{{if .LastMod}}<br>{{end}}<span class="muted">datetime</span> <span title="{{.DateAt}}">{{.DateTime}}</span>{{end}}{{end}}</td>{{end}}{{if $size}}<td class="num">{{if .Size}}<span title="{{.Exact}}">{{.Size}}</span>{{end}}</td>{{end}}{{if $hash}}<td>{{if .Hash}}<span class="hash" title="{{.HashTitle}}">{{.Hash}}</span>{{end}}</td>{{end}}{{if $type}}<td>{{.Type}}</td>{{end}}{{if $more}}<td>{{if .MD}}{{.MD}}<br>{{end}}{{range .Links}}<span class="tag">{{.Rel}}</span> {{if .Href}}<a href="{{.Href}}">{{.Text}}</a>{{else}}<code>{{.Text}}</code>{{end}}{{if .Extra}} <span class="muted">{{.Extra}}</span>{{end}}<br>{{end}}{{if .More}}<span class="muted">and {{.More}} more links</span>{{end}}</td>{{end}}</tr>{{end}}
</tbody>`))

func rowsByTemplate(t testing.TB, v *view) string {
	var b strings.Builder
	if err := rowsTpl.Execute(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkRows renders rows made of s in every field, with every column on
// and off, both ways.
func checkRows(t testing.TB, s string) {
	r := row{N: s, Loc: s, Href: s, LastMod: s, LastModAt: s, Change: s, DateTime: s, DateAt: s, Size: s, Exact: s,
		Hash: s, HashTitle: s, Type: s, MD: s, Cap: s, Links: []link{{Rel: s, Href: s, Text: s, Extra: s}, {Rel: s, Text: s}}, More: 3}
	empty := row{N: "2", Loc: s}
	for mask := range 1 << 7 {
		on := func(i int) bool { return mask&(1<<i) != 0 }
		v := &view{Rows: []row{r, empty}, Change: on(0), HasMore: on(1), ColCap: on(2), ColWhen: on(3), ColSize: on(4), ColHash: on(5), ColType: on(6)}
		want := rowsByTemplate(t, v)
		if got := "<tbody>" + string(rowsHTML(v)) + "\n</tbody>"; got != want {
			t.Fatalf("mask %b, %q:\ngot  %s\nwant %s", mask, s, got, want)
		}
	}
}

// TestRowsLikeTemplate: the hand-written rows are the template's, for
// text and URLs that need escaping.
func TestRowsLikeTemplate(t *testing.T) {
	for _, s := range []string{
		"", "plain", "http://example.com/a b?c=d&e=f+g#h", "https://x/%41%zz%4", "javascript:alert(1)", "JavaScript:x",
		"./a:b/c.html", "../../resourcelist.html", "<script>\"'&+</script>", "\x00nul", "é ü 日本 \xff\xfe bad utf-8",
		"\ufdd0\uffff", "mailto:a@b", "data:text/html,x", "/abs:path", "%", "%%", "a%2", "tab\tnl\n", "`~!@$^*()[]{}|\\;:,",
	} {
		checkRows(t, s)
	}
}

// FuzzRowsLikeTemplate: the same for any string.
func FuzzRowsLikeTemplate(f *testing.F) {
	for _, s := range []string{"http://example.com/a b?c=d&e=f+g", "javascript:x", "<&'\"+>\x00", "\xff%4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkRows(t, s) })
}

// FuzzHTTPURL: the fast path of httpURL answers as url.Parse does.
func FuzzHTTPURL(f *testing.F) {
	for _, s := range []string{"http://example.org/a/b.txt", "https://127.0.0.1:8080/x%20y?q=1#f", "http://h/%zz", "http://h/%4",
		"http://:80/", "http://h:8a/", "http://h:/", "HTTP://h/", "http://", "http:///x", "http://h/\x7f", "http://h\x00/", "https://a.b-c/é",
		"http://user@h/", "http://[::1]/", "http://h/a b", "http://h?x", "http://h#y", "ftp://h/", "http://h:1:2/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		want := err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
		if plainHTTPURL(s) && !want {
			t.Errorf("plainHTTPURL(%q) true, url.Parse: %v %+v", s, err, u)
		}
		if httpURL(s) != want {
			t.Errorf("httpURL(%q) = %v, want %v", s, !want, want)
		}
	})
}
