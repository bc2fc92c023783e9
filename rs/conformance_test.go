package rs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// conformanceDir finds the conformance corpus the repository carries
// (testdata/conformance, a copy of shared/conformance), or where
// RESOURCESYNC_CONFORMANCE points.
func conformanceDir(tb testing.TB) string {
	if d := os.Getenv("RESOURCESYNC_CONFORMANCE"); d != "" {
		return d
	}
	d, err := filepath.Abs(filepath.Join("..", "testdata", "conformance"))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d, "examples", "verdicts.tsv")); err != nil {
		tb.Fatalf("conformance material not found at %s (set RESOURCESYNC_CONFORMANCE): %v", d, err)
	}
	return d
}

// exampleFiles lists every XML example of the conformance corpus.
func exampleFiles(tb testing.TB) []string {
	var out []string
	root := filepath.Join(conformanceDir(tb), "examples")
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".xml") {
			out = append(out, p)
		}
		return nil
	})
	if len(out) == 0 {
		tb.Fatalf("no examples under %s", root)
	}
	return out
}

func readFile(p string) ([]byte, error) { return os.ReadFile(p) }
