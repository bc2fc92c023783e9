//go:build linux

// Command oaibench measures an OAI-PMH repository published as a
// ResourceSync Source (issue 21), beside a baseline measured in the same
// run:
//
//	go run ./bench/oaibench                 # 100,000 records
//	go run ./bench/oaibench -n 1000000      # or OAIBENCH_N=1000000 (not in CI)
//
// A local provider (internal/testing/oaitest, generated oai_dc records of
// about 600 bytes, pages of -page records) serves the repository. Steps:
//
//   - raw ListRecords: the whole list downloaded over loopback by one
//     client following the resumptionTokens, nothing parsed beyond the
//     token (the baseline: what any harvester at best reaches);
//   - `resourcesync publish --oai-pmh` (the binary built from this
//     checkout, a child process): the first harvest of every record,
//     journaled page by page, then every document published (Resource
//     Dump included); records/s, and its peak RSS (GNU time %M);
//   - the same after 1% of the records changed (an incremental harvest);
//   - `resourcesync sync` of a fresh mirror from those documents, served
//     by a plain file server: the Destination's baseline from the Resource
//     Dump; records/s and peak RSS.
//
// Goals (issue 21): harvest + publish at least 5,000 records/s, memory
// under 128 MB at 100,000 and 1,000,000 records; the Destination's
// baseline at least 10,000 records/s.
//
// Measured 2026-11-27 on the shared 2-core CI machine (ext4), pages of 500:
//
//	records    raw list    harvest+publish      incremental (1% changed)  sync baseline
//	100,000    157,337/s   3,580/s, 43 MB RSS   10.1 s, 43 MB             3,335/s, 38 MB
//	1,000,000   39,927/s   2,895/s, 46 MB RSS   148 s, 60 MB              5,469/s, 40 MB
//
// The harvester's own page writes (a file per record, made durable per
// page) take most of harvest+publish: it alone ran at about 3,200
// records/s on 20,000 records.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/oaitest"
	"github.com/resourcesync-go/resourcesync/oai"
)

func main() {
	def := 100000
	if v, err := strconv.Atoi(os.Getenv("OAIBENCH_N")); err == nil && v > 0 {
		def = v
	}
	n := flag.Int("n", def, "records in the repository (OAIBENCH_N)")
	page := flag.Int("page", 500, "records per ListRecords page")
	bin := flag.String("bin", "", "the resourcesync binary (default: built from this checkout)")
	work := flag.String("workdir", "", "scratch directory (default a temporary one, removed)")
	only := flag.Bool("provider", false, "only run the provider (print its URL, serve until killed), to profile by hand")
	flag.Parse()
	if *only {
		repo := oaitest.New(&tb{}, oaitest.Options{PageSize: *page})
		repo.Generate(*n)
		repo.Advance(time.Hour)
		fmt.Println(repo.URL)
		select {}
	}
	if err := run(*n, *page, *bin, *work); err != nil {
		log.Fatal(err)
	}
}

// tb gives oaitest.New the one method it calls outside tests.
type tb struct {
	testing.TB
	cleanups []func()
}

func (t *tb) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }
func (t *tb) Helper()          {}

func run(n, page int, bin, work string) error {
	ctx := context.Background()
	if work == "" {
		d, err := os.MkdirTemp("", "oaibench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	if bin == "" {
		bin = filepath.Join(work, "resourcesync")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/resourcesync")
		cmd.Dir = moduleDir()
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %w\n%s", err, out)
		}
	}
	t := &tb{}
	defer func() {
		for _, f := range t.cleanups {
			f()
		}
	}()
	repo := oaitest.New(t, oaitest.Options{PageSize: page})
	repo.Generate(n)
	repo.Advance(time.Hour)
	fmt.Printf("oaibench: %d records, pages of %d, Go %s\n", n, page, goVersion())

	// The baseline: the raw list.
	start := time.Now()
	got, bytesRead, err := rawList(ctx, repo.URL)
	if err != nil {
		return err
	}
	raw := time.Since(start)
	if got != n {
		return fmt.Errorf("raw ListRecords: %d records, want %d", got, n)
	}
	rawRate := float64(n) / raw.Seconds()
	fmt.Printf("raw ListRecords download:          %8.2f s  %9.0f records/s  %6.1f MB/s\n", raw.Seconds(), rawRate, float64(bytesRead)/raw.Seconds()/1e6)

	dir, state, out := filepath.Join(work, "records"), filepath.Join(work, "state"), filepath.Join(work, "out")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String() + "/"
	srv := &http.Server{Handler: files(out, dir)}
	go srv.Serve(ln)
	defer srv.Close()

	publish := func(what string, records int) error {
		d, rss, _, err := child(bin, work, "publish", "--oai-pmh", repo.URL, "--base-url", base, "--out", out, "--state", state, dir)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		r := float64(records) / d.Seconds()
		fmt.Printf("%-34s %8.2f s  %9.0f records/s  peak RSS %4d MB  (%.2f× the raw download)\n", what+":", d.Seconds(), r, rss>>10, r/rawRate)
		return nil
	}
	if err := publish("harvest + publish (first)", n); err != nil {
		return err
	}
	changed := max(1, n/100)
	repo.Advance(time.Hour)
	for i := range changed {
		repo.Touch(oaitest.GenID(i * (n / changed)))
	}
	// Its rate is of the whole collection: the run scans DIR (what a
	// killed run left) before it harvests the changes.
	if err := publish(fmt.Sprintf("incremental, %d changed", changed), n); err != nil {
		return err
	}

	dest := filepath.Join(work, "mirror")
	d, rss, sout, err := child(bin, work, "sync", "--max-delete", "-1", base, dest)
	if err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	r := float64(n) / d.Seconds()
	fmt.Printf("%-34s %8.2f s  %9.0f records/s  peak RSS %4d MB  (%.2f× the raw download)\n", "Destination baseline (sync):", d.Seconds(), r, rss>>10, r/rawRate)
	if lines := strings.Split(strings.TrimSpace(sout), "\n"); len(lines) > 0 {
		fmt.Printf("  sync: %s\n", lines[len(lines)-1])
	}
	files := 0
	filepath.WalkDir(dest, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && !strings.Contains(p, string(filepath.Separator)+".") {
			files++
		}
		return nil
	})
	if files != n {
		return fmt.Errorf("the mirror holds %d files, want %d", files, n)
	}
	return nil
}

// rawList downloads the whole ListRecords and counts the records.
func rawList(ctx context.Context, endpoint string) (records int, read int64, err error) {
	q := url.Values{"verb": {oai.ListRecords}, "metadataPrefix": {oai.DCPrefix}}
	c := &http.Client{}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"?"+q.Encode(), nil)
		resp, err := c.Do(req)
		if err != nil {
			return records, read, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return records, read, err
		}
		if resp.StatusCode != http.StatusOK {
			return records, read, fmt.Errorf("ListRecords: %s", resp.Status)
		}
		read += int64(len(b))
		records += bytes.Count(b, []byte("<record>"))
		tok := ""
		if i := bytes.Index(b, []byte("<resumptionToken")); i >= 0 {
			rest := b[i:]
			if j := bytes.IndexByte(rest, '>'); j >= 0 && rest[j-1] != '/' {
				if k := bytes.Index(rest, []byte("</resumptionToken>")); k > j {
					tok = string(rest[j+1 : k])
				}
			}
		}
		if tok == "" {
			return records, read, nil
		}
		q = url.Values{"verb": {oai.ListRecords}, "resumptionToken": {tok}}
	}
}

// files serves publish's documents (OUT) and the records (DIR) under one
// base URL, as a web server in front of publish would.
func files(out, dir string) http.Handler {
	docs, recs := http.FileServer(http.Dir(out)), http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := filepath.Join(out, filepath.FromSlash(r.URL.Path))
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			docs.ServeHTTP(w, r)
			return
		}
		recs.ServeHTTP(w, r)
	})
}

// child runs the binary under GNU time and returns its wall time, peak
// RSS in KiB and output.
func child(bin, work string, args ...string) (time.Duration, int64, string, error) {
	rssFile := filepath.Join(work, "maxrss")
	cmd := exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", rssFile, bin}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		s := out.String()
		if len(s) > 4000 {
			s = s[len(s)-4000:]
		}
		return d, 0, "", fmt.Errorf("%s %s: %w\n%s", bin, strings.Join(args, " "), err, s)
	}
	b, err := os.ReadFile(rssFile)
	if err != nil {
		return d, 0, "", err
	}
	var rss int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64); err == nil {
			rss = v
		}
	}
	if rss == 0 {
		return d, 0, "", errors.New("no peak RSS from /usr/bin/time")
	}
	return d, rss, out.String(), nil
}

func moduleDir() string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "."
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func goVersion() string {
	out, _ := exec.Command("go", "env", "GOVERSION").Output()
	return strings.TrimSpace(string(out))
}
