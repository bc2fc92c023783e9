package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
)

func parseDoc(t *testing.T, doc string, f rdf.Format) []rdf.Triple {
	t.Helper()
	var out []rdf.Triple
	for tr, err := range rdf.Parse(strings.NewReader(doc), f, "") {
		if err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, doc)
		}
		out = append(out, tr)
	}
	return out
}

// TestSDShareExport fills a store with two graphs and prints it in every
// format, all graphs and one.
func TestSDShareExport(t *testing.T) {
	dir := t.TempDir()
	fixture, err := os.ReadFile("../../testdata/sdshare/push/bnode-closure.nt")
	if err != nil {
		t.Fatal(err)
	}
	const g1, g2 = "http://e/g1", "http://e/g2"
	other := `<http://e/a> <http://e/p> "x"@en .
<http://e/a> <http://e/q> _:b1 .
_:b1 <http://e/p> "2"^^<http://www.w3.org/2001/XMLSchema#integer> .
`
	want := map[string][]rdf.Triple{g1: parseDoc(t, string(fixture), rdf.NTriples), g2: parseDoc(t, other, rdf.NTriples)}
	s, err := boltstore.OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for g, ts := range want {
		if err := s.ApplyFragment(ctx, g, ts[0].S, ts); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	t.Run("quiet", func(t *testing.T) {
		// -q: the triples on stdout, nothing on stderr.
		code, out, errOut := runCLI(t, "sdshare", "export", "-q", "--store", dir, "--format", "nq")
		if code != 0 || out == "" || errOut != "" {
			t.Errorf("-q: exit %d, %d bytes out, stderr %q", code, len(out), errOut)
		}
	})
	t.Run("nq, all graphs", func(t *testing.T) {
		code, out, errOut := runCLI(t, "sdshare", "export", "--store", dir, "--format", "nq")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			body, _ := strings.CutSuffix(line, " .")
			i := strings.LastIndex(body, " <")
			if i < 0 {
				t.Fatalf("not an N-Quads line: %q", line)
			}
			got[strings.Trim(body[i+1:], "<>")] += body[:i] + " .\n"
		}
		for g, w := range want {
			if ts := parseDoc(t, got[g], rdf.NTriples); !rdf.Isomorphic(ts, w) {
				t.Errorf("graph %s: %s", g, rdf.IsomorphicDiff(ts, w))
			}
		}
		if len(got) != 2 || !strings.Contains(errOut, "exported 9 triples of 2 graphs") {
			t.Errorf("graphs %v, stderr %s", len(got), errOut)
		}
	})
	for _, tc := range []struct {
		format string
		f      rdf.Format
	}{{"nt", rdf.NTriples}, {"ttl", rdf.Turtle}} {
		t.Run(tc.format+", one graph", func(t *testing.T) {
			code, out, errOut := runCLI(t, "sdshare", "export", "--store", dir, "--graph", g1, "--format", tc.format)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if ts := parseDoc(t, out, tc.f); !rdf.Isomorphic(ts, want[g1]) {
				t.Errorf("%s", rdf.IsomorphicDiff(ts, want[g1]))
			}
		})
	}
	t.Run("ttl, all graphs", func(t *testing.T) {
		code, out, errOut := runCLI(t, "sdshare", "export", "--store", dir, "--format", "ttl")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if !strings.Contains(out, "# graph <"+g1+">") || !strings.Contains(out, "# graph <"+g2+">") {
			t.Errorf("no graph comments:\n%s", out)
		}
		// Two documents; their prefixes may be declared twice, which
		// Turtle allows, so the whole parses as the union.
		if ts := parseDoc(t, out, rdf.Turtle); !rdf.Isomorphic(ts, append(append([]rdf.Triple(nil), want[g1]...), want[g2]...)) {
			t.Errorf("ttl output is not the union of the graphs:\n%s", out)
		}
	})
	t.Run("absent graph", func(t *testing.T) {
		code, out, errOut := runCLI(t, "sdshare", "export", "--store", dir, "--graph", "http://e/none")
		if code != 0 || out != "" || !strings.Contains(errOut, "empty or not in the store") {
			t.Errorf("exit %d, stdout %q, stderr %s", code, out, errOut)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"bad format", []string{"--store", dir, "--format", "xml"}, "want nt, nq or ttl"},
		{"no store", []string{"--store", filepath.Join(dir, "nothing")}, "no store at"},
		{"argument", []string{"--store", dir, "extra"}, "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, append([]string{"sdshare", "export"}, tc.args...)...)
			if code != 2 || !strings.Contains(errOut, tc.msg) {
				t.Errorf("exit %d, stderr %s; want 2 and %q", code, errOut, tc.msg)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "nothing")); err == nil {
		t.Errorf("export of a missing store created it")
	}
	t.Run("locked", func(t *testing.T) {
		s, err := boltstore.OpenDir(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		code, _, errOut := runCLI(t, "sdshare", "export", "--store", dir, "--lock-timeout", "50ms")
		if code != 2 || !strings.Contains(errOut, "locked") {
			t.Errorf("exit %d, stderr %s; want 2 and a lock error", code, errOut)
		}
	})
}
