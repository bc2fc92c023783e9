package destination

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memT0 is every resource's lastmod in the memory test.
var memT0 = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func memBody(i int) []byte { return fmt.Appendf(nil, "resource %d\n", i) }
func memRel(i int) string  { return fmt.Sprintf("d%03d/f%07d", i%100, i) }

// memOrder is the k-th resource of n in path order.
func memOrder(k, n int) int {
	per := (n + 99) / 100 // resources in each directory (n is a multiple of 100)
	return k/per + 100*(k%per)
}

// memSource serves a Source of n resources: a Source Description, a
// Capability List, a Resource List index with parts of 10,000 entries,
// an empty Change List and the resources.
func memSource(t *testing.T, n int) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	const part = 10000
	at := memT0.Add(time.Hour).Format(time.RFC3339)
	head := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">`
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/resourcesync", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `%s<rs:md capability="description"/><url><loc>%s.resourcesync/default/capabilitylist.xml</loc><rs:md capability="capabilitylist"/></url></urlset>`, head, base)
	})
	mux.HandleFunc("/.resourcesync/default/capabilitylist.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `%s<rs:md capability="capabilitylist"/><url><loc>%[2]s.resourcesync/default/resourcelist.xml</loc><rs:md capability="resourcelist"/></url><url><loc>%[2]s.resourcesync/default/changelist.xml</loc><rs:md capability="changelist"/></url></urlset>`, head, base)
	})
	mux.HandleFunc("/.resourcesync/default/resourcelist.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="resourcelist" at="%s"/>`, at)
		for p := 0; p*part < n; p++ {
			fmt.Fprintf(w, `<sitemap><loc>%s.resourcesync/default/rl/%d.xml</loc></sitemap>`, base, p)
		}
		fmt.Fprint(w, `</sitemapindex>`)
	})
	mux.HandleFunc("/.resourcesync/default/rl/", func(w http.ResponseWriter, r *http.Request) {
		p, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(r.URL.Path), ".xml"))
		bw := bufio.NewWriter(w)
		fmt.Fprintf(bw, `%s<rs:md capability="resourcelist" at="%s"/>`, head, at)
		// In path order, as Sources list (the state's keys, the seen
		// set and DEST's directories are then read in order).
		for k := p * part; k < min(n, (p+1)*part); k++ {
			i := memOrder(k, n)
			b := memBody(i)
			sum := md5.Sum(b)
			fmt.Fprintf(bw, `<url><loc>%s%s</loc><lastmod>%s</lastmod><rs:md hash="md5:%s" length="%d"/></url>`, base, memRel(i), memT0.Format(time.RFC3339), hex.EncodeToString(sum[:]), len(b))
		}
		fmt.Fprint(bw, `</urlset>`)
		bw.Flush()
	})
	mux.HandleFunc("/.resourcesync/default/changelist.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `%s<rs:md capability="changelist" from="%s"/></urlset>`, head, at)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(r.URL.Path), "f"))
		if err != nil || memRel(i) != strings.TrimPrefix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Write(memBody(i))
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return base
}

// memDest makes a DEST that a baseline from memSource left: n files and
// their records, with a checkpoint at the Resource List's at.
func memDest(t *testing.T, base string, n int) string {
	dest := t.TempDir()
	st, err := openState(dest, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.putMeta("base", base); err != nil {
		t.Fatal(err)
	}
	var ops []stateOp
	for i := 0; i < n; i++ {
		b := memBody(i)
		p := filepath.Join(dest, filepath.FromSlash(memRel(i)))
		if i < 100 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, memT0, memT0); err != nil {
			t.Fatal(err)
		}
		sum := md5.Sum(b)
		h := hex.EncodeToString(sum[:])
		ops = append(ops, stateOp{uri: base + memRel(i), rec: &Record{Set: "default", Path: memRel(i), Length: int64(len(b)),
			MD5: h, RemoteHash: "md5:" + h, LastMod: memT0, MTime: memT0.UnixNano()}})
		if len(ops) == 2000 || i == n-1 {
			if err := st.apply(ops); err != nil {
				t.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	at := memT0.Add(time.Hour)
	if err := st.putCheckpoint(Checkpoint{Set: "default", Baseline: true, At: at, Until: at}); err != nil {
		t.Fatal(err)
	}
	return dest
}

// TestMemoryFlat: a baseline that finds everything in place, an
// incremental run with nothing to do and an audit each peak at about the
// same resident set over 10,000 and 60,000 resources: nothing a run holds
// (records, the list, the state's mapped pages) grows with the
// collection. Each run is a child process, whose peak RSS (VmHWM) is
// compared. The Resource List is in path order, as Sources write it.
func TestMemoryFlat(t *testing.T) {
	if mode := os.Getenv("RS_MEMTEST_MODE"); mode != "" {
		memChild(t, mode)
		return
	}
	if testing.Short() {
		t.Skip("memory growth: creates 70,000 files and syncs them in child processes (about a minute); not with -short, the race run, whose instrumentation would make the RSS figures meaningless")
	}
	hwm := map[string][2]int{}
	for k, n := range []int{10000, 60000} {
		base := memSource(t, n)
		dest := memDest(t, base, n)
		// Each run twice, keeping the lower peak: a transient peak (a GC
		// cycle's timing) is not what is measured.
		for _, mode := range []string{"baseline", "incremental", "audit", "baseline", "incremental", "audit"} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryFlat$", "-test.v")
			cmd.Env = append(os.Environ(), "RS_MEMTEST_MODE="+mode, "RS_MEMTEST_N="+strconv.Itoa(n), "RS_MEMTEST_SOURCE="+base, "RS_MEMTEST_DEST="+dest)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s of %d: %v\n%s", mode, n, err, out)
			}
			var kb int
			for _, l := range strings.Split(string(out), "\n") {
				if s, ok := strings.CutPrefix(l, "MEMCHILD "); ok {
					want := map[string]string{"baseline": fmt.Sprintf("skipped %d,", n), "incremental": "failed 0", "audit": fmt.Sprintf(" %d in sync, 0 missing, 0 changed, 0 extra", n)}[mode]
					if !strings.Contains(s, want) {
						t.Fatalf("%s of %d did not find everything in place: %s", mode, n, s)
					}
					fmt.Sscanf(s[strings.LastIndex(s, " ")+1:], "%d", &kb)
				}
			}
			if kb == 0 {
				t.Fatalf("%s of %d: no peak reported:\n%s", mode, n, out)
			}
			v := hwm[mode]
			if v[k] == 0 || kb < v[k] {
				v[k] = kb
			}
			hwm[mode] = v
		}
	}
	for mode, v := range hwm {
		t.Logf("%s: peak RSS %d KB at 10,000, %d KB at 60,000", mode, v[0], v[1])
		// Batches (the seen set's, the release interval) fill up below
		// 10,000. 50,000 more records are ~11 MB of state (~65 MB as
		// JSON records), ~15 MB as a map of paths.
		if v[1]-v[0] > 12<<10 {
			t.Errorf("%s: peak RSS grows by %d KB from 10,000 to 60,000 resources", mode, v[1]-v[0])
		}
	}
}

func memChild(t *testing.T, mode string) {
	opt := Options{Dest: os.Getenv("RS_MEMTEST_DEST"), Client: http.DefaultClient}
	switch mode {
	case "baseline":
		opt.Mode = ModeBaseline
	case "audit":
		opt.Mode = ModeAudit
	}
	rep, err := Sync(context.Background(), os.Getenv("RS_MEMTEST_SOURCE"), opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sets) != 1 {
		t.Fatalf("sets: %+v", rep.Sets)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	kb := ""
	for _, l := range strings.Split(string(status), "\n") {
		if s, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb = strings.TrimSuffix(strings.TrimSpace(s), " kB")
		}
	}
	fmt.Printf("MEMCHILD %s %s\n", rep.Sets[0].Summary(false), kb)
}
