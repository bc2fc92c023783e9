package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines keeps the README a guide: reference material goes to
// docs/ (guides, and docs/cli generated from --help).
const readmeMaxLines = 200

// TestReadmeQuickStart: the README's first two commands are the main job
// on embedded defaults and every test, the second is what CI runs, and the
// README stays a guide of at most readmeMaxLines lines.
func TestReadmeQuickStart(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if n := strings.Count(text, "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move reference material to docs/", n, readmeMaxLines)
	}
	_, block, ok := strings.Cut(text, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	if !ok {
		t.Fatal("README.md has no sh block")
	}
	var cmds []string
	for line := range strings.SplitSeq(block, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.Index(line, " #"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		cmds = append(cmds, line)
	}
	if len(cmds) < 2 || cmds[0] != "go run ./cmd/resourcesync demo" || cmds[1] != "./scripts/test.sh" {
		t.Errorf("README.md's first commands are %q, want the demo and ./scripts/test.sh", cmds)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^exec \./scripts/test\.sh$`).Match(ci) {
		t.Errorf(".ci/run does not run the README's test command ./scripts/test.sh:\n%s", ci)
	}
}

// TestDocsLinks: every relative link of the project's Markdown (README,
// ARCHITECTURE, BENCHMARKS, docs/) names a file that exists and, when it
// names a heading (#anchor) of a Markdown file, a heading that exists.
func TestDocsLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	files := []string{"README.md", "ARCHITECTURE.md", "BENCHMARKS.md"}
	for _, pattern := range []string{"docs/*.md", "docs/*/*.md"} {
		m, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		for _, f := range m {
			rel, _ := filepath.Rel(root, f)
			files = append(files, filepath.ToSlash(rel))
		}
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Error(err)
			continue
		}
		for _, m := range link.FindAllStringSubmatch(stripCode(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			p, anchor, _ := strings.Cut(target, "#")
			path := filepath.Join(root, filepath.FromSlash(filepath.ToSlash(filepath.Dir(f))), filepath.FromSlash(p))
			if p == "" {
				path = filepath.Join(root, filepath.FromSlash(f))
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: no such file", f, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(path, ".md") {
				doc, _ := os.ReadFile(path)
				if !hasAnchor(string(doc), anchor) {
					t.Errorf("%s: link %s: no heading with that anchor", f, target)
				}
			}
		}
	}
}

// stripCode removes fenced code blocks, whose brackets are not links.
func stripCode(s string) string {
	var b strings.Builder
	in := false
	for line := range strings.SplitSeq(s, "\n") {
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// hasAnchor reports whether a heading of doc has GitHub's anchor anchor:
// lower case, spaces as '-', everything but letters, digits, '-' and '_'
// dropped.
func hasAnchor(doc, anchor string) bool {
	for line := range strings.SplitSeq(stripCode(doc), "\n") {
		h := strings.TrimLeft(line, "#")
		if h == line || !strings.HasPrefix(h, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		if b.String() == anchor {
			return true
		}
	}
	return false
}
