package validate

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/rs"
)

// conformanceDir locates the conformance corpus: $RESOURCESYNC_CONFORMANCE,
// or the repository's copy in testdata/conformance.
func conformanceDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("RESOURCESYNC_CONFORMANCE")
	if dir == "" {
		dir = filepath.Join("..", "testdata", "conformance")
	}
	if _, err := os.Stat(filepath.Join(dir, "examples", "verdicts.tsv")); err != nil {
		t.Fatalf("conformance corpus not found (testdata/conformance, or set RESOURCESYNC_CONFORMANCE): %v", err)
	}
	return dir
}

// readVerdicts returns the file → verdict rows of verdicts.tsv.
func readVerdicts(t *testing.T, path string) [][2]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		file, verdict, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("verdicts.tsv: malformed line %q", line)
		}
		rows = append(rows, [2]string{file, strings.TrimSpace(verdict)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

var ruleIDRe = regexp.MustCompile(`RS-[A-Z]+-\d+(?:/\d+)*`)

// brokenRules parses the negative table of examples/README.md: for each file
// the rule IDs any one of which must be among the errors. "RS-ROOT-1/5"
// expands to RS-ROOT-1 and RS-ROOT-5.
func brokenRules(t *testing.T, readme string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	inNeg := false
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, "## ") {
			inNeg = strings.HasPrefix(line, "## negative/")
			continue
		}
		if !inNeg || !strings.HasPrefix(line, "| neg-") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		file := strings.TrimSpace(cells[1])
		var ids []string
		for _, m := range ruleIDRe.FindAllString(cells[2], -1) {
			parts := strings.Split(m, "/")
			base := parts[0][:strings.LastIndex(parts[0], "-")+1]
			ids = append(ids, parts[0])
			for _, n := range parts[1:] {
				ids = append(ids, base+n)
			}
		}
		out["negative/"+file] = ids
	}
	return out
}

func TestVerdicts(t *testing.T) {
	dir := conformanceDir(t)
	ex := filepath.Join(dir, "examples")
	rows := readVerdicts(t, filepath.Join(ex, "verdicts.tsv"))
	rules := brokenRules(t, filepath.Join(ex, "README.md"))
	n := 0
	for _, row := range rows {
		file, verdict := row[0], row[1]
		if !strings.HasSuffix(file, ".xml") {
			continue
		}
		n++
		t.Run(file, func(t *testing.T) {
			f, err := os.Open(filepath.Join(ex, filepath.FromSlash(file)))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var errs, warns []Problem
			_, derr := Document(file, f, Options{}, func(p Problem) {
				if p.Severity == rs.SevError {
					errs = append(errs, p)
				} else {
					warns = append(warns, p)
				}
			})
			has := func(ps []Problem, pred func(string) bool) bool {
				for _, p := range ps {
					if pred(p.Rule) {
						return true
					}
				}
				return false
			}
			switch verdict {
			case "VALID":
				if len(errs) > 0 || derr != nil {
					t.Errorf("VALID document has errors: %v %v", errs, derr)
				}
			case "VALID*":
				if len(errs) > 0 || derr != nil {
					t.Errorf("VALID* document has errors: %v %v", errs, derr)
				}
				if len(warns) == 0 {
					t.Errorf("VALID* document has no warning naming its erratum")
				}
			case "LEGACY":
				if derr != nil {
					if !has(errs, func(r string) bool { return r == "RS-XML" }) {
						t.Errorf("LEGACY document failed without an RS-XML problem: %v", derr)
					}
					return
				}
				if len(errs) > 0 {
					t.Errorf("LEGACY document has errors: %v", errs)
				}
				if !has(warns, func(r string) bool { return strings.HasPrefix(r, "RS-LEG") }) {
					t.Errorf("LEGACY document has no RS-LEG warning: %v", warns)
				}
			case "INVALID":
				if len(errs) == 0 {
					t.Fatalf("INVALID document has no error (warnings: %v)", warns)
				}
				want := rules[file]
				if len(want) == 0 {
					return // e.g. an XML error: any error will do
				}
				if !has(errs, func(r string) bool { return contains(want, r) }) {
					t.Errorf("INVALID document: want an error naming one of %v, got %v", want, errs)
				}
			default:
				t.Fatalf("unknown verdict %q", verdict)
			}
		})
	}
	if n == 0 {
		t.Fatal("verdicts.tsv lists no XML file")
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestBrokenRulesTable(t *testing.T) {
	rules := brokenRules(t, filepath.Join(conformanceDir(t), "examples", "README.md"))
	for file, want := range map[string][]string{
		"negative/neg-01-resourcelist-missing-at.xml":                   {"RS-RL-1"},
		"negative/neg-11-changedump-manifest-path-no-leading-slash.xml": {"RS-URL-9", "RS-CDM-3"},
		"negative/neg-14-resourcelist-with-from-not-at.xml":             {"RS-ROOT-1", "RS-ROOT-5"},
		"negative/neg-20-not-wellformed.xml":                            nil,
	} {
		got, ok := rules[file]
		if !ok || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: rules %v, want %v", file, got, want)
		}
	}
}
