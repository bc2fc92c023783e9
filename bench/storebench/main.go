//go:build linux

// Command storebench measures the Source on the embedded store and on
// PostgreSQL in the same run: first publish and unchanged rescan of an
// N-file collection, and serve throughput (small resources over HTTP)
// with one replica and with two behind a round-robin balancer.
//
//	go run ./bench/storebench -n 1000000 -md BENCHMARKS-store.md
//
// It starts its own PostgreSQL (internal/testing/pgtest: Debian's postgresql
// package, loopback, fsync off as for every test server: compare ratios,
// not absolute rates, with a production server).
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"log"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
)

type config struct {
	n        int
	workdir  string
	bin      string
	md       string
	keep     bool
	duration time.Duration
	clients  int
}

type row struct {
	step, store string
	seconds     float64
	rate        string
	rssMB       float64
	note        string
}

func main() {
	var c config
	flag.IntVar(&c.n, "n", 1000000, "files in the collection")
	flag.StringVar(&c.workdir, "workdir", ".storebench", "work directory (on the disk to measure)")
	flag.StringVar(&c.bin, "bin", "", "resourcesync binary (default: build ./cmd/resourcesync)")
	flag.StringVar(&c.md, "md", "", "write the markdown report to `FILE`")
	flag.BoolVar(&c.keep, "keep", false, "keep the work directory")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "length of each serve throughput run")
	flag.IntVar(&c.clients, "clients", 16, "concurrent HTTP clients in the throughput runs")
	flag.Parse()
	rows, err := run(context.Background(), c)
	md := markdown(c, rows)
	fmt.Print(md)
	if c.md != "" {
		if werr := os.WriteFile(c.md, []byte(md), 0o644); werr != nil {
			log.Print(werr)
		}
	}
	if err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, c config) ([]row, error) {
	if err := os.MkdirAll(c.workdir, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(c.workdir, "run-")
	if err != nil {
		return nil, err
	}
	work, _ = filepath.Abs(work)
	if !c.keep {
		defer os.RemoveAll(work)
	}
	if c.bin == "" {
		c.bin = filepath.Join(work, "resourcesync")
		log.Printf("building %s", c.bin)
		if out, err := exec.Command("go", "build", "-o", c.bin, "./cmd/resourcesync").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build: %v: %s", err, out)
		}
	}
	log.Printf("starting PostgreSQL")
	pg, err := pgtest.Start()
	if err != nil {
		return nil, err
	}
	defer pg.Stop()
	pgURL, err := createDB(ctx, pg, "storebench")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(work, "collection")
	log.Printf("generating %d files in %s", c.n, dir)
	if err := generate(dir, c.n); err != nil {
		return nil, err
	}
	stores := []struct{ name, url string }{
		{"embedded (bolt)", "bolt:" + filepath.Join(work, "bolt-state")},
		{"PostgreSQL", pgURL},
	}
	var rows []row
	for _, st := range stores {
		out := filepath.Join(work, "out-"+strings.Fields(st.name)[0])
		state := filepath.Join(work, "state-"+strings.Fields(st.name)[0])
		args := []string{"publish", "--store", st.url, "--state", state, "--base-url", "http://example.org/", "--out", out, "--no-dumps", dir}
		for _, step := range []string{"first publish (--no-dumps)", "unchanged rescan (publish again)"} {
			log.Printf("%s: %s", st.name, step)
			secs, rss, outp, err := timed(ctx, c.bin, args...)
			if err != nil {
				return rows, fmt.Errorf("%s %s: %w\n%s", st.name, step, err, tail(outp))
			}
			rows = append(rows, row{step: step, store: st.name, seconds: secs, rate: fmt.Sprintf("%s files/s", commas(float64(c.n)/secs)), rssMB: rss})
		}
	}
	if sz, err := dbSize(ctx, pgURL); err == nil {
		rows = append(rows, row{step: "database size after publish", store: "PostgreSQL", note: fmt.Sprintf("%.0f MB (%.0f bytes per resource)", float64(sz)/1e6, float64(sz)/float64(c.n))})
	}
	// Serve throughput: random small resources over HTTP, through a
	// round-robin balancer in this process (also with one replica, so both
	// runs pay for it).
	paths := samplePaths(c.n, 10000)
	for _, sc := range []struct {
		name     string
		url      string
		replicas int
	}{{"embedded (bolt)", "bolt:" + filepath.Join(work, "serve-bolt"), 1}, {"PostgreSQL", pgURL, 1}, {"PostgreSQL", pgURL, 2}} {
		var addrs []string
		var procs []*exec.Cmd
		lb, lbURL := balancer()
		stopAll := func() {
			for _, p := range procs {
				p.Process.Kill()
				p.Wait()
			}
			lb.Close()
		}
		var startSecs float64
		for i := range sc.replicas {
			addr := freeAddr()
			state := filepath.Join(work, fmt.Sprintf("serve-state-%d-%d", sc.replicas, i))
			cmd := exec.Command(c.bin, "serve", "--store", sc.url, "--state", state, "--addr", addr, "--base-url", lbURL+"/", "--no-dumps", "--no-hub", "--rescan-interval", "0", dir)
			logf, _ := os.Create(filepath.Join(work, fmt.Sprintf("serve-%d-%d.log", sc.replicas, i)))
			cmd.Stdout, cmd.Stderr = logf, logf
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				stopAll()
				return rows, err
			}
			procs = append(procs, cmd)
			if err := waitReady(ctx, "http://"+addr+"/.well-known/resourcesync", 30*time.Minute); err != nil {
				stopAll()
				return rows, fmt.Errorf("serve %s: %w", sc.name, err)
			}
			startSecs = max(startSecs, time.Since(t0).Seconds())
			addrs = append(addrs, addr)
		}
		lb.set(addrs)
		log.Printf("%s, %d replica(s): ready in %.1f s; load for %v", sc.name, sc.replicas, startSecs, c.duration)
		n, errs := load(ctx, lbURL, paths, c.clients, c.duration)
		var rss float64
		for _, p := range procs {
			rss += hwmMB(p.Process.Pid)
		}
		stopAll()
		rows = append(rows, row{step: fmt.Sprintf("serve: GET small resources, %d replica(s)", sc.replicas), store: sc.name, seconds: c.duration.Seconds(),
			rate: fmt.Sprintf("%s req/s", commas(float64(n)/c.duration.Seconds())), rssMB: rss,
			note: fmt.Sprintf("%d clients through a round-robin balancer; %d errors; replicas ready after %.1f s", c.clients, errs, startSecs)})
	}
	return rows, nil
}

func createDB(ctx context.Context, pg *pgtest.Server, name string) (string, error) {
	conn, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.Port, name), nil
}

func dbSize(ctx context.Context, u string) (int64, error) {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&n)
	return n, err
}

// generate writes n files of 512–1536 random bytes, 1,000 to a directory,
// with two writers.
func generate(dir string, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w := range 2 {
		wg.Go(func() {
			buf := make([]byte, 1536)
			for i := w; i < n; i += 2 {
				p := filePath(dir, i)
				if i%1000 < 2 {
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						errs <- err
						return
					}
				}
				size := 512 + i%1025
				rand.Read(buf[:size])
				if err := os.WriteFile(p, buf[:size], 0o644); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func filePath(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("d%05d", i/1000), fmt.Sprintf("f%07d.bin", i))
}

func samplePaths(n, k int) []string {
	r := mrand.New(mrand.NewPCG(1, 2))
	out := make([]string, k)
	for j := range out {
		i := r.IntN(n)
		out[j] = fmt.Sprintf("/d%05d/f%07d.bin", i/1000, i)
	}
	return out
}

// timed runs the binary and returns wall seconds and peak RSS in MB.
func timed(ctx context.Context, bin string, args ...string) (float64, float64, []byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	secs := time.Since(t0).Seconds()
	var rss float64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = float64(ru.Maxrss) / 1024
		}
	}
	return secs, rss, []byte(out.String()), err
}

// hwmMB reads a running process's peak RSS.
func hwmMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

type rr struct {
	*http.Server
	mu    sync.Mutex
	addrs []string
	next  atomic.Uint64
}

func (b *rr) set(a []string) { b.mu.Lock(); b.addrs = a; b.mu.Unlock() }

// balancer starts a round-robin reverse proxy on a free loopback port.
func balancer() (*rr, string) {
	b := &rr{}
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	proxy := &httputil.ReverseProxy{Transport: tr, Rewrite: func(r *httputil.ProxyRequest) {
		b.mu.Lock()
		a := b.addrs[int(b.next.Add(1))%len(b.addrs)]
		b.mu.Unlock()
		r.SetURL(&url.URL{Scheme: "http", Host: a})
		r.Out.Host = r.In.Host
	}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	b.Server = &http.Server{Handler: proxy}
	go b.Serve(l)
	return b, "http://" + l.Addr().String()
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitReady(ctx context.Context, u string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		resp, err := http.Get(u)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready within %v", u, limit)
}

// load GETs paths round-robin from clients goroutines for d; it returns
// the 200 responses and the others.
func load(ctx context.Context, base string, paths []string, clients int, d time.Duration) (ok, bad int64) {
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	hc := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	end := time.Now().Add(d)
	var okN, badN atomic.Int64
	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			for i := w; time.Now().Before(end); i += clients {
				resp, err := hc.Get(base + paths[i%len(paths)])
				if err != nil {
					badN.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					okN.Add(1)
				} else {
					badN.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return okN.Load(), badN.Load()
}

func commas(f float64) string {
	s := strconv.FormatInt(int64(f+0.5), 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func tail(b []byte) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

func markdown(c config, rows []row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Source on the embedded store and on PostgreSQL, %s files\n\n", commas(float64(c.n)))
	fmt.Fprintf(&b, "`go run ./bench/storebench -n %d` on %s. Files of 512–1536 random bytes, 1,000 to a directory. PostgreSQL %s runs on the same 2 cores (internal/testing/pgtest: loopback, fsync off).\n\n", c.n, time.Now().UTC().Format("2006-01-02"), pgVersion())
	b.WriteString("| step | store | seconds | rate | peak RSS MB | note |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		secs, rss := "", ""
		if r.seconds > 0 {
			secs = fmt.Sprintf("%.2f", r.seconds)
		}
		if r.rssMB > 0 {
			rss = fmt.Sprintf("%.0f", r.rssMB)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.step, r.store, secs, r.rate, rss, r.note)
	}
	return b.String()
}

func pgVersion() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(dirs) == 0 {
		return "?"
	}
	out, err := exec.Command(dirs[len(dirs)-1], "--version").Output()
	if err != nil {
		return "?"
	}
	// "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
	if f := strings.Fields(string(out)); len(f) >= 3 {
		return f[2]
	}
	return "?"
}
