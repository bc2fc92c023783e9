package server

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/bulk"
	"github.com/resourcesync-go/resourcesync/internal/linkheader"
	"github.com/resourcesync-go/resourcesync/sdshare/internal/fragbulk"
)

// TestBulkEndpoint: the fragments feed advertises B NAME/bulk with a
// Link header (the feed itself unchanged), and a bulk request answers
// each fragment URL with the bytes its GET gives, and what it cannot
// carry with a status and no bytes; with NoBulk there is neither.
func TestBulkEndpoint(t *testing.T) {
	files := map[string]string{"a.nt": "<http://ex/a> <http://ex/p> \"1\" .\n<http://ex/a> <http://ex/q> _:x .\n_:x <http://ex/r> \"deep\" .\n",
		"b.nt": "<http://ex/b> <http://ex/p> \"2\" .\n"}
	e := newEnv(t, files, nil)
	e.write("a.nt", files["a.nt"]+"<http://ex/a> <http://ex/p> \"changed\" .\n")
	e.write("b.nt", "<http://ex/b> <http://ex/p> \"3\" .\n")
	waitFor(t, "two entries", func() bool { return len(e.fragments(e.base+"c/fragments")) == 2 })

	resp, _ := e.get(e.base + "c/fragments")
	base, _ := url.Parse(e.base + "c/fragments")
	l, ok := linkheader.Find(linkheader.Parse(base, resp.Header.Values("Link")), fragbulk.Rel)
	if !ok || l.URL != e.base+"c/bulk" {
		t.Fatalf("Link header %q, want %s with rel %s", resp.Header.Values("Link"), e.base+"c/bulk", fragbulk.Rel)
	}
	dir := e.base + "c/"
	var paths []string
	var want [][]byte
	for _, en := range e.fragments(e.base + "c/fragments") {
		for _, l := range en.Links {
			if l.Rel != "http://www.sdshare.org/2012/core/fragment" || l.Type != "application/n-triples" {
				continue
			}
			p, ok := fragbulk.Member(dir, l.Href)
			if !ok {
				t.Fatalf("fragment link %s not below %s", l.Href, dir)
			}
			_, body := e.get(l.Href)
			paths, want = append(paths, p), append(want, body)
		}
	}
	// What a member cannot carry: another format, not a fragment URL,
	// no resource; an absent resource is an empty fragment, as its GET.
	paths = append(paths, "fragment?resource="+url.QueryEscape("http://ex/a")+"&format=ttl", "snapshots", "fragment?format=nt",
		"fragment?resource="+url.QueryEscape("http://ex/none"))
	status := []int{200, 200, 406, 404, 404, 200}
	want = append(want, nil, nil, nil, []byte{})

	post := func(body string) (*http.Response, []byte) {
		resp, err := e.client.Post(e.base+"c/bulk", "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, body := post(strings.Join(paths, "\n"))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != bulk.MediaType {
		t.Fatalf("bulk: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	r := bulk.NewReader(bytes.NewReader(body), paths)
	for i := range paths {
		m, err := r.Next(-1)
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		if m.Status != status[i] {
			t.Errorf("member %s: status %d, want %d", paths[i], m.Status, status[i])
			continue
		}
		if m.Status == 200 {
			got, _ := io.ReadAll(m.Body)
			if !bytes.Equal(got, want[i]) {
				t.Errorf("member %s: %q, its GET %q", paths[i], got, want[i])
			}
		}
	}
	if _, err := r.Next(-1); err != io.EOF {
		t.Errorf("end: %v", err)
	}

	for _, tc := range []struct {
		name, method, body string
		code               int
	}{
		{"GET", http.MethodGet, "", http.StatusMethodNotAllowed},
		{"too many paths", http.MethodPost, strings.Repeat("fragment?resource=x\n", bulk.MaxPaths+1), http.StatusBadRequest},
		{"a path with a control byte", http.MethodPost, "fragment?resource=\x01\n", http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(tc.method, e.base+"c/bulk", strings.NewReader(tc.body))
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %s, want %d", tc.name, resp.Status, tc.code)
		}
	}
	if resp, err := e.client.Post(e.base+"nosuch/bulk", "text/plain", strings.NewReader(paths[0])); err != nil || resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
		t.Errorf("bulk of an unknown collection: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	off := newEnv(t, files, func(c *Config) { c.NoBulk = true })
	resp, _ = off.get(off.base + "c/fragments")
	if l := resp.Header.Values("Link"); len(l) != 0 {
		t.Errorf("NoBulk: Link %q", l)
	}
	resp2, err := off.client.Post(off.base+"c/bulk", "text/plain", strings.NewReader(paths[0]))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode == http.StatusOK {
		t.Errorf("NoBulk: the bulk request answered %s", resp2.Status)
	}
}
