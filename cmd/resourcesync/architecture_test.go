package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The layer diagram at the top of ARCHITECTURE.md is generated from the
// module's real import graph (go list, production code only) and kept in
// step by TestArchitectureLayers.

const (
	layersBegin = "<!-- layers:begin -->"
	layersEnd   = "<!-- layers:end -->"
)

// diagramLayers, from the top: a package imports packages of its own layer or
// below; an import of a higher layer is drawn dashed and listed as upward.
var diagramLayers = []struct{ id, title string }{
	{"commands", "commands: flags and wiring only"},
	{"engines", "engines: Source, Destination, hub, subscriber, SDShare"},
	{"state", "state: store contracts and their implementations"},
	{"formats", "formats and rules: validation, SDShare names, Atom"},
	{"plumbing", "plumbing: internal/"},
	{"model", "foundations: document and RDF models, HTTP status error"},
}

// componentRoots groups packages into the diagram's nodes: a package
// belongs to the longest root that is its path or a parent of it; a
// package under no root is a node of its own.
var componentRoots = []string{
	"cmd/resourcesync",
	"aggregate", "aggregate/aggstore",
	"source", "source/store",
	"destination",
	"websub/hub", "websub/hub/hubstore", "websub/subscriber",
	"sdshare", "sdshare/atom", "sdshare/server", "sdshare/client", "sdshare/push", "sdshare/graphstore",
	"rs", "rdf", "validate",
	"internal/web",
}

// formatComponents are the components of the formats layer.
var formatComponents = []string{"validate", "sdshare", "sdshare/atom"}

// modelComponents are the components of the bottom layer: the ResourceSync
// document model (with the tokenizer under its decoder) and the RDF model,
// which internal/ may import, and the one HTTP status error.
var modelComponents = []string{"rs", "rdf", "internal/xmlscan", "httperr"}

// stateComponents are the components of the state layer.
var stateComponents = []string{"aggregate/aggstore", "source/store", "websub/hub/hubstore", "sdshare/graphstore"}

func componentOf(pkg string) string {
	best := ""
	for _, r := range componentRoots {
		if (pkg == r || strings.HasPrefix(pkg, r+"/")) && len(r) > len(best) {
			best = r
		}
	}
	if best == "" {
		return pkg
	}
	return best
}

func layerOf(component string) string {
	switch {
	case strings.HasPrefix(component, "cmd/"):
		return "commands"
	case slices.Contains(modelComponents, component):
		return "model"
	case component == "internal" || strings.HasPrefix(component, "internal/") || strings.Contains(component, "/internal/"):
		return "plumbing"
	case slices.Contains(formatComponents, component):
		return "formats"
	case slices.Contains(stateComponents, component):
		return "state"
	}
	return "engines"
}

func layerRank(layer string) int {
	return slices.IndexFunc(diagramLayers, func(l struct{ id, title string }) bool { return l.id == layer })
}

// harness reports whether pkg exists for tests only (a harness or a
// contract suite): such packages are listed, not drawn.
func isTestHarness(pkg string) bool {
	base := pkg[strings.LastIndexByte(pkg, '/')+1:]
	return strings.HasSuffix(base, "test") || base == "testnet" || base == "faultserver" ||
		strings.Contains("/"+pkg+"/", "/internal/testing/")
}

type modPackage struct {
	path, name string
	imports    []string // of this module, relative
}

// modulePackages lists the module's packages with their production imports
// of the module, paths relative to the module.
func modulePackages(t *testing.T) []modPackage {
	t.Helper()
	root := filepath.Join("..", "..")
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	prefix := strings.TrimSpace(string(mod)) + "/"
	c := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}} {{join .Imports \" \"}}", "./...")
	c.Dir = root
	// One platform's files, so that the diagram does not depend on where
	// the test runs.
	c.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []modPackage
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0]+"/", prefix) {
			continue
		}
		p := modPackage{path: strings.TrimPrefix(f[0], prefix), name: f[1]}
		for _, imp := range f[2:] {
			if strings.HasPrefix(imp, prefix) {
				p.imports = append(p.imports, strings.TrimPrefix(imp, prefix))
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func nodeID(s string) string {
	return strings.NewReplacer("/", "_", "-", "_", ".", "_").Replace(s)
}

// layerDiagram renders the generated block of ARCHITECTURE.md.
func layerDiagram(pkgs []modPackage) string {
	members := map[string][]string{} // component -> packages
	var harnesses, programs []string
	drawn := map[string]bool{}
	for _, p := range pkgs {
		switch {
		case p.name == "main" && p.path != "cmd/resourcesync":
			programs = append(programs, p.path)
		case isTestHarness(p.path):
			harnesses = append(harnesses, p.path)
		default:
			c := componentOf(p.path)
			members[c] = append(members[c], p.path)
			drawn[p.path] = true
		}
	}
	type edge struct{ from, to string }
	edges := map[edge]bool{}
	intoLayer := map[edge]bool{} // component -> layer
	var upward []string
	for _, p := range pkgs {
		if !drawn[p.path] {
			continue
		}
		from := componentOf(p.path)
		for _, imp := range p.imports {
			if !drawn[imp] {
				continue
			}
			to := componentOf(imp)
			if layerRank(layerOf(to)) < layerRank(layerOf(from)) {
				upward = append(upward, fmt.Sprintf("`%s` → `%s`", p.path, imp))
			}
			if from == to {
				continue
			}
			switch {
			case layerOf(from) == "commands":
				intoLayer[edge{from, layerOf(to)}] = true
			case layerOf(to) == "plumbing" && layerOf(from) != "plumbing":
				// Drawn once per component: an arrow into the layer.
				intoLayer[edge{from, "plumbing"}] = true
			default:
				edges[edge{from, to}] = true
			}
		}
	}
	var b strings.Builder
	b.WriteString("```mermaid\nflowchart TB\n")
	for _, l := range diagramLayers {
		var comps []string
		for c := range members {
			if layerOf(c) == l.id {
				comps = append(comps, c)
			}
		}
		if len(comps) == 0 {
			continue
		}
		slices.Sort(comps)
		fmt.Fprintf(&b, "  subgraph %s[\"%s\"]\n", l.id, l.title)
		for _, c := range comps {
			fmt.Fprintf(&b, "    %s[\"%s\"]\n", nodeID(c), c)
		}
		b.WriteString("  end\n")
	}
	var lines []string
	for e := range intoLayer {
		lines = append(lines, fmt.Sprintf("  %s --> %s\n", nodeID(e.from), e.to))
	}
	for e := range edges {
		arrow := "-->"
		if layerRank(layerOf(e.to)) < layerRank(layerOf(e.from)) {
			arrow = "-. upward .->"
		}
		lines = append(lines, fmt.Sprintf("  %s %s %s\n", nodeID(e.from), arrow, nodeID(e.to)))
	}
	slices.Sort(lines)
	b.WriteString(strings.Join(lines, ""))
	b.WriteString("```\n\n")
	b.WriteString("An arrow: a package of the first imports one of the second (production code, `go list`); " +
		"an arrow to a layer: imports of some of its packages (`cmd/resourcesync` wires every layer; every layer above uses the plumbing).\n\n")
	slices.Sort(upward)
	if len(upward) == 0 {
		b.WriteString("Upward imports (a layer importing one above it): none.\n\n")
	} else {
		fmt.Fprintf(&b, "Upward imports (a layer importing one above it): %d: %s.\n\n", len(upward), strings.Join(upward, ", "))
	}
	b.WriteString("| node | packages |\n|---|---|\n")
	var comps []string
	for c := range members {
		comps = append(comps, c)
	}
	slices.SortFunc(comps, func(x, y string) int {
		if d := layerRank(layerOf(x)) - layerRank(layerOf(y)); d != 0 {
			return d
		}
		return strings.Compare(x, y)
	})
	for _, c := range comps {
		ps := members[c]
		slices.Sort(ps)
		var short []string
		for _, p := range ps {
			short = append(short, "`"+p+"`")
		}
		fmt.Fprintf(&b, "| %s | %s |\n", c, strings.Join(short, " "))
	}
	slices.Sort(harnesses)
	slices.Sort(programs)
	fmt.Fprintf(&b, "\nNot drawn: test harnesses and contract suites, imported by tests only (%s)", "`"+strings.Join(harnesses, "`, `")+"`")
	if len(programs) > 0 {
		fmt.Fprintf(&b, "; benchmark programs (%s)", "`"+strings.Join(programs, "`, `")+"`")
	}
	b.WriteString(".\n")
	return b.String()
}

// TestArchitectureLayers: the diagram between the layers markers of
// ARCHITECTURE.md is the one the import graph gives; -update (or
// RESOURCESYNC_UPDATE_DOCS=1) rewrites it.
func TestArchitectureLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	path := filepath.Join("..", "..", "ARCHITECTURE.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i, j := strings.Index(text, layersBegin), strings.Index(text, layersEnd)
	if i < 0 || j < i {
		t.Fatalf("ARCHITECTURE.md: no %s ... %s block", layersBegin, layersEnd)
	}
	want := layerDiagram(modulePackages(t))
	got := text[i+len(layersBegin) : j]
	wantBlock := "\n" + want
	if got == wantBlock {
		return
	}
	if *updateDocs {
		text = text[:i+len(layersBegin)] + wantBlock + text[j:]
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("rewrote the layer diagram of ARCHITECTURE.md")
		return
	}
	t.Errorf("ARCHITECTURE.md's layer diagram differs from the import graph (%s); regenerate: %s", firstDiff(got, wantBlock), regenerateDocs)
}
