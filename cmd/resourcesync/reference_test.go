package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

// updateDocs rewrites the generated documents (docs/cli, the layer
// diagram of ARCHITECTURE.md) instead of comparing them.
var updateDocs = flag.Bool("update", os.Getenv("RESOURCESYNC_UPDATE_DOCS") != "", "TestDocsReference, TestArchitectureLayers: rewrite the generated docs (also: RESOURCESYNC_UPDATE_DOCS=1)")

// referenceDir is where the command reference lives, relative to this package.
var referenceDir = filepath.Join("..", "..", "docs", "cli")

const regenerateDocs = "go test ./cmd/resourcesync -run 'TestDocsReference|TestArchitectureLayers' -update"

// referenceFile is the file of the command at path: README.md for the root,
// else the path joined by "-" (sdshare-serve.md).
func referenceFile(path []string) string {
	if len(path) == 0 {
		return "README.md"
	}
	return strings.Join(path, "-") + ".md"
}

// commandReference renders every command's --help text as Markdown, one
// file per command: the reference a user reads on GitHub, made from the very
// text the binary prints.
func commandReference(t *testing.T) map[string][]byte {
	t.Helper()
	app := setUpApp(t)
	files := map[string][]byte{}
	type entry struct {
		path  []string
		usage string
	}
	var cmds []entry
	walkCommands(app, func(path []string, c *cli.Command) {
		if c.Hidden || c.Name == "help" {
			return
		}
		cmds = append(cmds, entry{slices.Clone(path), c.Usage})
	})
	help := func(path []string) string {
		code, out, errOut := runCLI(t, append(slices.Clone(path), "--help")...)
		if code != 0 || errOut != "" {
			t.Fatalf("resourcesync %s --help: exit %d, stderr %q", strings.Join(path, " "), code, errOut)
		}
		return strings.TrimRight(out, "\n")
	}
	note := func(path []string) string {
		return fmt.Sprintf("<!-- Generated from `%s --help` by TestDocsReference (cmd/resourcesync/reference_test.go); do not edit.\n     Regenerate: %s -->\n",
			strings.Join(append([]string{"resourcesync"}, path...), " "), regenerateDocs)
	}
	for _, e := range cmds {
		if len(e.path) == 0 {
			continue
		}
		var b bytes.Buffer
		name := strings.Join(append([]string{"resourcesync"}, e.path...), " ")
		fmt.Fprintf(&b, "# `%s`\n\n%s\n%s.\n\n[All commands](README.md)\n\n```text\n%s\n```\n", name, note(e.path), docsCapitalize(e.usage), help(e.path))
		files[referenceFile(e.path)] = b.Bytes()
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Command reference\n\n%s\nThe `--help` text of every command of `resourcesync`, and every help topic (`resourcesync help TOPIC`), one page each.\n\n", note(nil))
	b.WriteString("| command | what it does |\n|---|---|\n")
	for _, e := range cmds {
		if len(e.path) == 0 {
			continue
		}
		fmt.Fprintf(&b, "| [`%s`](%s) | %s |\n", strings.Join(e.path, " "), referenceFile(e.path), e.usage)
	}
	// The help topics: the long texts the commands' --help leaves out.
	b.WriteString("\n| help topic | what it holds |\n|---|---|\n")
	for _, tp := range helpTopics() {
		fmt.Fprintf(&b, "| [`%s`](%s) | %s |\n", tp.Name, topicFile(tp.Name), tp.Summary)
		code, out, errOut := runCLI(t, "help", tp.Name)
		if code != 0 || errOut != "" {
			t.Fatalf("resourcesync help %s: exit %d, stderr %q", tp.Name, code, errOut)
		}
		var page bytes.Buffer
		fmt.Fprintf(&page, "# `resourcesync help %s`\n\n<!-- Generated from `resourcesync help %s` by TestDocsReference (cmd/resourcesync/reference_test.go); do not edit.\n     Regenerate: %s -->\n%s.\n\n[All commands and topics](README.md)\n\n```text\n%s\n```\n",
			tp.Name, tp.Name, regenerateDocs, docsCapitalize(tp.Summary), strings.TrimRight(out, "\n"))
		files[topicFile(tp.Name)] = page.Bytes()
	}
	fmt.Fprintf(&b, "\n## `resourcesync --help`\n\n```text\n%s\n```\n", help(nil))
	files[referenceFile(nil)] = b.Bytes()
	return files
}

// topicFile is the page of the help topic name.
func topicFile(name string) string {
	return "topic-" + name + ".md"
}

func docsCapitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// TestDocsReference: docs/cli holds exactly the --help text of every
// command and the text of every help topic; -update (or
// RESOURCESYNC_UPDATE_DOCS=1) rewrites it.
func TestDocsReference(t *testing.T) {
	want := commandReference(t)
	if *updateDocs {
		if err := os.MkdirAll(referenceDir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(referenceDir, "*.md"))
		for _, f := range old {
			if _, ok := want[filepath.Base(f)]; !ok {
				os.Remove(f)
			}
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(referenceDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("wrote %d files in %s", len(want), referenceDir)
		return
	}
	have, _ := filepath.Glob(filepath.Join(referenceDir, "*.md"))
	for _, f := range have {
		if _, ok := want[filepath.Base(f)]; !ok {
			t.Errorf("docs/cli/%s names no command; regenerate: %s", filepath.Base(f), regenerateDocs)
		}
	}
	var names []string
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		got, err := os.ReadFile(filepath.Join(referenceDir, name))
		if err != nil {
			t.Errorf("docs/cli/%s: %v; regenerate: %s", name, err, regenerateDocs)
			continue
		}
		if !bytes.Equal(got, want[name]) {
			t.Errorf("docs/cli/%s differs from the --help text (%s); regenerate: %s", name, firstDiff(string(got), string(want[name])), regenerateDocs)
		}
	}
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d: file has %q, generated %q", i+1, gl, wl)
		}
	}
	return "same lines"
}
