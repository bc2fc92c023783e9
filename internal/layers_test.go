package internal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// listedPackage is the part of `go list -json` the layer rules read.
type listedPackage struct {
	ImportPath   string
	Name         string
	Imports      []string // of the non-test files
	TestImports  []string // of the package's own _test.go files
	XTestImports []string // of its external (package x_test) test files
}

// layerViolations returns, sorted, every break of the rules in the package
// comment (doc.go) among pkgs, packages of the module named module.
//
//  1. A package under internal/ imports, in any file (tests too), no package
//     of this module outside internal/ except the leaf models rs, rdf and
//     oai.
//  2. A harness under internal/testing/ is imported only by test files, by
//     another harness or by a benchmark program under bench/.
//  3. A main package lives only under cmd/ or bench/ (so none under
//     internal/).
//
// leafModel: the packages that model a format or protocol and import
// nothing of the module; plumbing and harnesses may use them.
var leafModel = map[string]bool{"rs": true, "rdf": true, "oai": true}

func layerViolations(module string, pkgs []listedPackage) []string {
	rel := func(path string) (string, bool) {
		if path == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(path, module+"/")
		return r, ok
	}
	under := func(r, dir string) bool { return r == dir || strings.HasPrefix(r, dir+"/") }

	var out []string
	for _, p := range pkgs {
		from, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		inInternal := under(from, "internal")
		isHarness := under(from, "internal/testing")
		isBench := under(from, "bench")

		if p.Name == "main" && !under(from, "cmd") && !isBench {
			out = append(out, fmt.Sprintf("%s: main package outside cmd/ and bench/", from))
		}
		check := func(imports []string, inTest bool) {
			for _, imp := range imports {
				to, ok := rel(imp)
				if !ok {
					continue
				}
				if inInternal && !under(to, "internal") && !leafModel[to] {
					out = append(out, fmt.Sprintf("%s imports %s: upward arrow out of internal/", from, to))
				}
				if under(to, "internal/testing") && !inTest && !isHarness && !isBench {
					out = append(out, fmt.Sprintf("%s imports test harness %s outside its tests", from, to))
				}
			}
		}
		check(p.Imports, false)
		check(p.TestImports, true)
		check(p.XTestImports, true)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestLayerRules(t *testing.T) {
	const m = "example.com/mod"
	ok := []listedPackage{
		{ImportPath: m + "/rs", Name: "rs"},
		{ImportPath: m + "/rdf", Name: "rdf"},
		{ImportPath: m + "/internal/web", Name: "web", Imports: []string{"net/http", m + "/internal/units"}},
		{ImportPath: m + "/internal/web/docview", Name: "docview", Imports: []string{m + "/internal/web", m + "/rs"}},
		{ImportPath: m + "/internal/xmlscan", Name: "xmlscan", Imports: []string{"github.com/other/mod/destination"}},
		{ImportPath: m + "/internal/testing/pgtest", Name: "pgtest", Imports: []string{"testing", m + "/internal/testing/testnet"}},
		{ImportPath: m + "/source", Name: "source", Imports: []string{m + "/internal/web", m + "/rs"},
			TestImports: []string{m + "/internal/testing/pgtest"}, XTestImports: []string{m + "/internal/testing/testnet"}},
		{ImportPath: m + "/sdshare/internal/atomview", Name: "atomview", Imports: []string{m + "/sdshare", m + "/internal/web"}},
		{ImportPath: m + "/cmd/tool", Name: "main", Imports: []string{m + "/source", m + "/internal/retry"}},
		{ImportPath: m + "/bench/storebench", Name: "main", Imports: []string{m + "/source", m + "/internal/testing/pgtest"}},
	}
	with := func(p listedPackage) []listedPackage { return append(slices.Clone(ok), p) }
	for _, tc := range []struct {
		name string
		pkgs []listedPackage
		want []string
	}{
		{"layered", ok, nil},
		{"internal imports a public package", with(listedPackage{ImportPath: m + "/internal/progress", Name: "progress",
			Imports: []string{m + "/destination", m + "/internal/units"}}),
			[]string{"internal/progress imports destination: upward arrow out of internal/"}},
		{"internal test imports a public package", with(listedPackage{ImportPath: m + "/internal/web/atomview", Name: "atomview",
			XTestImports: []string{m + "/sdshare/atom"}}),
			[]string{"internal/web/atomview imports sdshare/atom: upward arrow out of internal/"}},
		{"internal imports the module root", with(listedPackage{ImportPath: m + "/internal/x", Name: "x", Imports: []string{m}}),
			[]string{"internal/x imports .: upward arrow out of internal/"}},
		{"production imports a harness", with(listedPackage{ImportPath: m + "/websub/hub", Name: "hub",
			Imports: []string{m + "/internal/testing/testnet"}}),
			[]string{"websub/hub imports test harness internal/testing/testnet outside its tests"}},
		{"plumbing imports a harness", with(listedPackage{ImportPath: m + "/internal/retry", Name: "retry",
			Imports: []string{m + "/internal/testing/faultserver"}}),
			[]string{"internal/retry imports test harness internal/testing/faultserver outside its tests"}},
		{"main under internal", with(listedPackage{ImportPath: m + "/internal/bench/scanbench", Name: "main",
			Imports: []string{m + "/source/scan"}}),
			[]string{
				"internal/bench/scanbench imports source/scan: upward arrow out of internal/",
				"internal/bench/scanbench: main package outside cmd/ and bench/",
			}},
		{"main in a library directory", with(listedPackage{ImportPath: m + "/source/tool", Name: "main"}),
			[]string{"source/tool: main package outside cmd/ and bench/"}},
		{"prefix is not a directory", with(listedPackage{ImportPath: m + "/internalx", Name: "main",
			Imports: []string{m + "/internal/testing/pgtest"}}),
			[]string{
				"internalx imports test harness internal/testing/pgtest outside its tests",
				"internalx: main package outside cmd/ and bench/",
			}},
		{"another module is not checked", with(listedPackage{ImportPath: "example.com/other/internal/x", Name: "main",
			Imports: []string{m + "/destination"}}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := layerViolations(m, tc.pkgs); !slices.Equal(got, tc.want) {
				t.Errorf("violations\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestLayers checks the rules on this module's real import graph.
func TestLayers(t *testing.T) {
	module, pkgs := goList(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages of %s; expected the whole module", len(pkgs), module)
	}
	for _, v := range layerViolations(module, pkgs) {
		t.Error(v)
	}
}

// goList lists every package of the module (run from its root, the parent
// of this directory) with its imports, test files' included.
func goList(t *testing.T) (string, []listedPackage) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the import graph: %v", err)
	}
	mod, err := exec.Command(gobin, "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module := strings.TrimSpace(string(mod))
	cmd := exec.Command(gobin, "list", "-json=ImportPath,Name,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listedPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return module, pkgs
}
