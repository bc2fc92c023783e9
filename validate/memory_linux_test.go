package validate

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/rs"
)

// vmHWM returns this process's peak resident set size in bytes.
func vmHWM() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}

// writeLinkDoc writes a 48 MB Resource List with 1,000,000 rs:ln elements,
// all in its one item (inItem) or all at the root.
func writeLinkDoc(t *testing.T, path string, inItem bool) int64 {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<16)
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">` + "\n" +
		`<rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>` + "\n")
	if inItem {
		w.WriteString("<url><loc>http://example.com/res1</loc>\n")
	}
	for i := range 1000000 {
		fmt.Fprintf(w, `<rs:ln rel="via" href="http://e.org/r%07d"/>`+"\n", i) // 48 bytes
	}
	if inItem {
		w.WriteString("</url>\n")
	} else {
		w.WriteString("<url><loc>http://example.com/res1</loc></url>\n")
	}
	w.WriteString("</urlset>\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return st.Size()
}

// TestLinksMemory validates documents of 1,000,000 rs:ln elements (in one
// item; at the root), 48 MB each, in fresh processes and checks their peak
// RSS stays under 64 MiB (issue 14 item 7: 744 and 653 MB before links
// were bounded).
func TestLinksMemory(t *testing.T) {
	if path := os.Getenv("VALIDATE_RSS_CHILD"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var rules []string
		_, derr := Document(path, f, Options{}, func(p Problem) { rules = append(rules, p.Severity.String()+":"+p.Rule) })
		rss, err := vmHWM()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("rss=%d toomany=%v problems=%s\n", rss, errors.Is(derr, rs.ErrTooManyLinks), strings.Join(rules, ","))
		return
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		inItem bool
	}{{"links in one item", true}, {"links at the root", false}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".xml")
			size := writeLinkDoc(t, path, tc.inItem)
			if size < 45<<20 || size > rs.MaxDocumentBytes {
				t.Fatalf("document is %d bytes; want about 48 MB, under the 50 MB limit", size)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestLinksMemory$", "-test.count=1")
			cmd.Env = append(os.Environ(), "VALIDATE_RSS_CHILD="+path)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var rss int64
			var tooMany bool
			var problems string
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, "rss=") {
					fmt.Sscanf(line, "rss=%d toomany=%t problems=%s", &rss, &tooMany, &problems)
				}
			}
			if rss == 0 {
				t.Fatalf("child output: %s", out)
			}
			t.Logf("%d bytes, 1,000,000 rs:ln: peak RSS %.1f MiB, problems %s", size, float64(rss)/(1<<20), problems)
			if !tooMany || problems != "error:RS-XML" {
				t.Errorf("want one RS-XML error for rs.ErrTooManyLinks; got too-many %v, problems %q", tooMany, problems)
			}
			if rss > 64<<20 {
				t.Errorf("peak RSS %d MiB exceeds 64 MiB", rss>>20)
			}
		})
	}
}
