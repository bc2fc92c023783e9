package retry

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// retryLoop finds the marks of a hand-written retry loop in a file that
// imports this package: a Policy's Delay or Attempts used outside Do, or
// a loop counting tries. (Loops elsewhere that repeat a read, such as the
// scanner's rehash of a file that changed, are not retries of requests.)
var retryLoop = regexp.MustCompile(`\.(Delay|Attempts)\(|for\s+(try|attempt|attempts|tries)\b`)

// TestOneRetryLoop: no production code of the module outside this
// package writes its own retry loop; every client calls Do. (Pauses that
// are not retries of a request, such as a supervisor's before restarting
// a worker or Follow's interval, use Sleep.)
func TestOneRetryLoop(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	self := filepath.Join(root, "internal", "retry")
	n := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == self || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		if !strings.Contains(string(b), `"github.com/resourcesync-go/resourcesync/internal/retry"`) {
			return nil
		}
		for i, line := range strings.Split(string(b), "\n") {
			if code, _, _ := strings.Cut(line, "//"); retryLoop.MatchString(code) {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s:%d: a retry loop outside internal/retry (use retry.Do): %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("only %d Go files seen under %s", n, root)
	}
}
