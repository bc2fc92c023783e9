package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateVerdicts runs `resourcesync validate --json` on every XML
// file of verdicts.tsv and checks the exit status and the kind of problems
// reported against the expected verdict. (validate's own verdict test also
// checks that each INVALID file names the broken rule.)
func TestValidateVerdicts(t *testing.T) {
	ex := examples(t)
	f, err := os.Open(filepath.Join(ex, "verdicts.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		file, verdict, ok := strings.Cut(line, "\t")
		if !ok || !strings.HasSuffix(file, ".xml") {
			continue
		}
		n++
		t.Run(file, func(t *testing.T) {
			code, out, errOut := runCLI(t, "validate", "--json", filepath.Join(ex, file))
			var errs, warns, legacy, xmlErr int
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				var p struct{ Rule, Severity string }
				if err := json.Unmarshal([]byte(l), &p); err != nil {
					t.Fatalf("output line is not JSON: %q", l)
				}
				switch {
				case p.Rule == "":
					continue // the summary
				case p.Severity == "error":
					errs++
					if p.Rule == "RS-XML" {
						xmlErr++
					}
				case p.Severity == "warning":
					warns++
				}
				if strings.HasPrefix(p.Rule, "RS-LEG-") {
					legacy++
				}
			}
			switch strings.TrimSpace(verdict) {
			case "VALID":
				if code != 0 || errs > 0 {
					t.Errorf("exit %d with %d errors, want 0\n%s%s", code, errs, out, errOut)
				}
			case "VALID*":
				if code != 0 || errs > 0 || warns == 0 {
					t.Errorf("exit %d, %d errors, %d warnings; want exit 0 with a warning naming the erratum\n%s", code, errs, warns, out)
				}
			case "LEGACY":
				if !(code == 0 && legacy > 0) && !(code == 1 && xmlErr > 0) {
					t.Errorf("exit %d, %d legacy warnings, %d XML errors; want exit 0 with an RS-LEG warning, or 1 for XML that is not well-formed\n%s", code, legacy, xmlErr, out)
				}
			case "INVALID":
				if code != 1 || errs == 0 {
					t.Errorf("exit %d with %d errors, want 1\n%s", code, errs, out)
				}
			default:
				t.Fatalf("unknown verdict %q", verdict)
			}
		})
	}
	if n < 80 {
		t.Fatalf("only %d XML rows in verdicts.tsv", n)
	}
}
