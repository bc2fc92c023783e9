package rs

import (
	"errors"
	"io"
	"strings"
	"testing"
)

const rootStart = `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">`

// decodeString decodes a whole document and returns its head, entries and
// diagnostics.
func decodeString(t *testing.T, doc string) (*Decoder, *Head, []*Entry, []Diagnostic) {
	t.Helper()
	d := NewDecoder(strings.NewReader(doc))
	h, err := d.Head()
	if err != nil {
		t.Fatal(err)
	}
	var es []*Entry
	for e, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	return d, h, es, d.TakeDiagnostics()
}

func hasDiag(ds []Diagnostic, rule string, sev Severity) bool {
	for _, d := range ds {
		if d.Rule == rule && d.Severity == sev {
			return true
		}
	}
	return false
}

func TestMaxDocumentBytesIsSitemaps50MB(t *testing.T) {
	// sitemaps.org's 50 MB: 52,428,800 bytes, not 50,000,000.
	if MaxDocumentBytes != 52428800 {
		t.Fatalf("MaxDocumentBytes = %d, want 52428800", MaxDocumentBytes)
	}
}

// TestDraftRecognised: documents of the pre-1.0 drafts are recognised from
// what they show, without the rel="resourcesync" link of 0.6-0.9.
func TestDraftRecognised(t *testing.T) {
	tests := []struct {
		name, doc, legacy, rule string
		check                   func(h *Head) bool
	}{
		{"0.9 resource list: from, no link", rootStart + `<rs:md capability="resourcelist" from="2013-01-03T09:00:00Z"/><url><loc>http://e.com/r</loc></url></urlset>`,
			"0.9", "RS-LEG-9", func(h *Head) bool { return h.MD.At.String() == "2013-01-03T09:00:00Z" && h.MD.From.IsZero() }},
		{"0.9 resource dump manifest", rootStart + `<rs:md capability="resourcedump-manifest" from="2013-01-03T09:00:00Z"/></urlset>`,
			"0.9", "RS-LEG-9", func(h *Head) bool { return !h.MD.At.IsZero() }},
		{"0.5 change list: modified", rootStart + `<rs:md capability="changelist" modified="2013-01-03T11:00:00Z"/><url><loc>http://e.com/r</loc><rs:md change="updated"/></url></urlset>`,
			"0.5", "RS-LEG-8", func(h *Head) bool { return h.MD.From.IsZero() && !h.MD.Modified.IsZero() }},
		{"0.5 capability list: modified, no up", rootStart + `<rs:md capability="capabilitylist" modified="2013-01-02T14:00:00Z"/><url><loc>http://e.com/rl.xml</loc><rs:md capability="resourcelist"/></url></urlset>`,
			"0.5", "RS-LEG-8", nil},
		{"0.5 change list with its resourcesync link", rootStart + `<rs:ln rel="resourcesync" href="http://e.com/cl.xml"/><rs:md capability="changelist" modified="2013-01-03T11:00:00Z"/></urlset>`,
			"0.5", "RS-LEG-8", nil},
		// A 1.x document (rel="up" as written) with the same attributes
		// is not a draft: its errors stay errors (neg-14 of the corpus).
		{"1.x resource list with from", rootStart + `<rs:ln rel="up" href="http://e.com/cl.xml"/><rs:md capability="resourcelist" from="2013-01-03T09:00:00Z"/></urlset>`,
			"", "", func(h *Head) bool { return h.MD.At.IsZero() && !h.MD.From.IsZero() }},
		{"1.x change list with modified", rootStart + `<rs:ln rel="up" href="http://e.com/cl.xml"/><rs:md capability="changelist" modified="2013-01-03T11:00:00Z"/></urlset>`, "", "", nil},
		{"1.x capability list with modified", rootStart + `<rs:ln rel="up" href="http://e.com/sd.xml"/><rs:md capability="capabilitylist" modified="2013-01-03T11:00:00Z"/></urlset>`, "", "", nil},
		{"snapshot with from and until", rootStart + `<rs:md capability="resourcelist" from="2013-01-03T09:00:00Z" until="2013-01-03T10:00:00Z"/></urlset>`, "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, h, _, ds := decodeString(t, tt.doc)
			if d.Legacy() != tt.legacy {
				t.Errorf("Legacy() = %q, want %q (diagnostics %v)", d.Legacy(), tt.legacy, ds)
			}
			if tt.rule != "" && !hasDiag(ds, tt.rule, SevWarning) {
				t.Errorf("no %s warning: %v", tt.rule, ds)
			}
			if tt.rule == "" {
				for _, dg := range ds {
					if strings.HasPrefix(dg.Rule, "RS-LEG") {
						t.Errorf("legacy diagnostic for a 1.x document: %v", dg)
					}
				}
			}
			if tt.check != nil && !tt.check(h) {
				t.Errorf("head %+v", h.MD)
			}
		})
	}
}

func TestRelCaseInsensitive(t *testing.T) {
	_, h, es, ds := decodeString(t, rootStart+`<rs:ln rel="Up" href="http://e.com/cl.xml"/><rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>`+
		`<url><loc>http://e.com/r</loc><rs:ln rel="describedBy" href="http://e.com/r.meta"/><rs:ln rel="ALTERNATE http://example.org/Rel" href="http://e.com/r.html"/></url></urlset>`)
	if h.Link(RelUp) != "http://e.com/cl.xml" {
		t.Errorf("rel=\"Up\" not read as up: %+v", h.Links)
	}
	if es[0].Link(RelDescribedBy) != "http://e.com/r.meta" {
		t.Errorf("rel=\"describedBy\" not read as describedby: %+v", es[0].Links)
	}
	if got := es[0].Links[1].Rel; got != "alternate http://example.org/Rel" {
		t.Errorf("rel = %q; URIs must stay as written", got)
	}
	n := 0
	for _, dg := range ds {
		if dg.Rule == "RS-LN-3" && dg.Severity == SevWarning {
			n++
		}
	}
	if n != 3 {
		t.Errorf("want 3 RS-LN-3 warnings, got %v", ds)
	}
}

func TestRepeatedLoc(t *testing.T) {
	_, _, es, ds := decodeString(t, docStart+`<url><loc>http://e.com/a</loc><loc>http://e.com/b</loc></url><url><loc>http://e.com/c</loc></url></urlset>`)
	if !hasDiag(ds, "RS-GEN-7", SevError) {
		t.Errorf("no RS-GEN-7 error: %v", ds)
	}
	if len(ds) != 1 || es[1].Loc != "http://e.com/c" {
		t.Errorf("diagnostics %v, entries %+v", ds, es)
	}
}

func TestEmptyHashAttribute(t *testing.T) {
	for _, doc := range []string{
		docStart + `<url><loc>http://e.com/a</loc><rs:md hash=""/></url></urlset>`,
		docStart + `<url><loc>http://e.com/a</loc><rs:ln rel="duplicate" href="http://m.e.com/a" hash="  "/></url></urlset>`,
	} {
		_, _, _, ds := decodeString(t, doc)
		if !hasDiag(ds, "RS-URL-5", SevError) {
			t.Errorf("no RS-URL-5 error for %s: %v", doc, ds)
		}
	}
}

func TestHeadAttrInvalid(t *testing.T) {
	d, h, _, ds := decodeString(t, rootStart+`<rs:md capability="changelist" from="yesterday"/></urlset>`)
	if !h.MD.From.IsZero() || !d.HeadAttrInvalid("from") || d.HeadAttrInvalid("until") || !hasDiag(ds, "RS-DT-2", SevError) {
		t.Errorf("from %v, invalid(from) %v, invalid(until) %v, %v", h.MD.From, d.HeadAttrInvalid("from"), d.HeadAttrInvalid("until"), ds)
	}
	d, _, _, _ = decodeString(t, rootStart+`<rs:md capability="changelist"/><url><loc>http://e.com/</loc><rs:md change="created" datetime="now"/></url></urlset>`)
	if d.HeadAttrInvalid("from") || d.HeadAttrInvalid("datetime") {
		t.Error("an absent or item attribute reported as an invalid head attribute")
	}
}

// TestTooManyLinks: links are bounded per item and at the root, with a
// specific error, whether the limit is the default or configured.
func TestTooManyLinks(t *testing.T) {
	const ln = `<rs:ln rel="duplicate" href="http://m.example.com/r"/>`
	tests := []struct {
		name string
		r    func() io.Reader
		lim  Limits
		ok   bool
	}{
		{"item, default limit", func() io.Reader {
			return newRepeat(docStart+"<url><loc>http://e.com/</loc>", ln, DefaultLimits.MaxLinks+1, "</url></urlset>")
		}, Limits{}, false},
		{"item, at the default limit", func() io.Reader {
			return newRepeat(docStart+"<url><loc>http://e.com/</loc>", ln, DefaultLimits.MaxLinks, "</url></urlset>")
		}, Limits{}, true},
		{"root, default limit", func() io.Reader {
			return newRepeat(docStart, ln, DefaultLimits.MaxLinks+1, "</urlset>")
		}, Limits{}, false},
		{"root after the items", func() io.Reader {
			return newRepeat(docStart+"<url><loc>http://e.com/</loc></url>", ln, 11, "</urlset>")
		}, Limits{MaxLinks: 10}, false},
		{"item, configured limit", func() io.Reader {
			return newRepeat(docStart+"<url><loc>http://e.com/</loc>", ln, 4, "</url></urlset>")
		}, Limits{MaxLinks: 3}, false},
		{"several items each under the limit", func() io.Reader {
			return newRepeat(docStart, "<url><loc>http://e.com/</loc>"+ln+ln+ln+"</url>", 100, "</urlset>")
		}, Limits{MaxLinks: 3}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := decodeErr(tt.r(), tt.lim)
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var se *SyntaxError
			if !errors.Is(err, ErrTooManyLinks) || !errors.As(err, &se) || se.Pos.Line == 0 {
				t.Fatalf("err = %v, want a positioned ErrTooManyLinks", err)
			}
		})
	}
}
