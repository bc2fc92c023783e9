//go:build linux

// Command s3bench measures a bucket as a mirror target and as a Source on
// versitygw (internal/testing/s3test, its posix backend) over loopback,
// each figure beside a baseline measured in the same run (issue 31):
//
//		go run ./bench/s3bench                         # 20,000 and 200,000 objects
//		go run ./bench/s3bench -sync 2000 -sizes 2000,20000
//
//	 1. sync rate: -sync files of 1 KiB in a local directory, published by
//	    `resourcesync serve DIR`, mirrored by `resourcesync sync URL
//	    s3://BUCKET/PREFIX --workers 16` into an empty prefix, against the
//	    same objects PUT by a plain aws-sdk-go-v2 client 16 at a time
//	    (before and after the sync; the faster is the baseline). The ratio
//	    is baseline time / sync time (target ≥ 0.5).
//	 2. for each of -sizes: that many objects of 1 KiB written straight
//	    into the bucket's directory of the posix backend (a PUT each would
//	    take minutes), published by `resourcesync serve s3://BUCKET/PREFIX`
//	    (its first scan reads every object once), then mirrored from it by
//	    `resourcesync sync URL s3://OTHER/PREFIX` into an empty bucket. The
//	    peak RSS of both processes (their rusage's maxrss) is reported
//	    (target: flat from 20,000 to 200,000, ≤ 128 MB). Then the Source's
//	    rescan of the unchanged objects (source/scan on storage/s3, the
//	    serve's own state: no object is read again) is timed against one
//	    plain ListObjectsV2 listing of them (1,000 keys a page), in the
//	    order listing, rescan, rescan, listing (target ≤ 1.2×).
//
// The command builds cmd/resourcesync (or takes -bin) and runs it as child
// processes with the server's endpoint and keys in the standard AWS
// variables. Scratch files go under -dir (default: a directory in the
// working directory's file system). Every count is checked: a sync that
// did not mirror every object fails the run.
package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourcesync-go/resourcesync/internal/testing/s3test"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	s3storage "github.com/resourcesync-go/resourcesync/storage/s3"
)

func main() {
	syncN := flag.Int("sync", 20000, "files of the sync-rate measurement (0: skip)")
	sizes := flag.String("sizes", "20000,200000", "collection sizes of the rescan and memory measurements (empty: skip)")
	bin := flag.String("bin", "", "resourcesync binary (default: built from ./cmd/resourcesync)")
	dir := flag.String("dir", "", "scratch directory (default: s3bench-* in the working directory)")
	flag.BoolVar(&mirror, "mirror", true, "measure the sync from the bucket Source into another bucket")
	flag.Parse()
	if err := run(*syncN, *sizes, *bin, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "s3bench:", err)
		os.Exit(1)
	}
}

// mirror: measurement 2 includes the sync from the bucket Source.
var mirror = true

type bench struct {
	srv     *s3test.Server
	raw     *s3.Client
	bin     string
	scratch string
	env     []string
}

func run(syncN int, sizes, bin, dir string) error {
	ctx := context.Background()
	var err error
	if dir == "" {
		if dir, err = os.MkdirTemp(".", "s3bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	dir, _ = filepath.Abs(dir)
	b := &bench{scratch: dir}
	if bin == "" {
		bin = filepath.Join(dir, "resourcesync")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/resourcesync")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build: %w", err)
		}
	}
	b.bin = bin
	if b.srv, err = s3test.Start(); err != nil {
		return err
	}
	defer b.srv.Stop()
	b.raw = s3.New(s3.Options{
		Region: b.srv.Region, BaseEndpoint: aws.String(b.srv.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(b.srv.AccessKey, b.srv.SecretKey, ""),
		HTTPClient:  &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
	})
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			b.env = append(b.env, kv)
		}
	}
	b.env = append(b.env, b.srv.Env()...)
	fmt.Printf("s3bench: %s, %d CPUs, versitygw %s posix on %s, %s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), s3test.Version, b.srv.Endpoint, runtime.Version())
	if syncN > 0 {
		if err := b.syncRate(ctx, syncN); err != nil {
			return err
		}
	}
	for _, s := range strings.Split(sizes, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("-sizes: %w", err)
		}
		if err := b.bucketSource(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// newBucket makes an empty bucket (a directory of the posix backend).
func (b *bench) newBucket(name string) (string, error) {
	return name, os.Mkdir(filepath.Join(b.srv.Root, name), 0o755)
}

// body is the i-th file's 1 KiB.
func body(i int) []byte {
	p := bytes.Repeat([]byte(fmt.Sprintf("%08d ", i)), 1024/9+1)
	return p[:1024]
}

func key(i int) string { return fmt.Sprintf("d%03d/f%06d.txt", i/1000, i) }

// run16 calls fn(i) for i in [0,n) with 16 goroutines.
func run16(n int, fn func(i int) error) error {
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// count lists bucket/prefix with the plain client.
func (b *bench) count(ctx context.Context, bucket, prefix string) (int, error) {
	n := 0
	p := s3.NewListObjectsV2Paginator(b.raw, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix), MaxKeys: aws.Int32(1000)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		n += len(out.Contents)
	}
	return n, nil
}

// child is a running resourcesync.
type child struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan struct{}
	err  error
}

func (b *bench) start(args ...string) (*child, error) {
	c := &child{cmd: exec.Command(b.bin, args...), done: make(chan struct{})}
	c.cmd.Env = b.env
	c.cmd.Stdout, c.cmd.Stderr = &syncWriter{w: &c.out}, &syncWriter{w: &c.out}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	return c, nil
}

// wait ends c (SIGTERM first when stop) and returns its peak RSS in MiB.
func (c *child) wait(stop bool) (float64, error) {
	if stop {
		c.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-c.done:
	case <-time.After(30 * time.Minute):
		c.cmd.Process.Kill()
		<-c.done
		return 0, errors.New("child did not end")
	}
	if c.err != nil && !stop {
		return 0, fmt.Errorf("%s: %w\n%s", strings.Join(c.cmd.Args, " "), c.err, tail(c.out.String()))
	}
	ru, _ := c.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ru == nil {
		return 0, nil
	}
	return float64(ru.Maxrss) / 1024, nil // KiB on Linux
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func tail(s string) string {
	if len(s) > 3000 {
		return "..." + s[len(s)-3000:]
	}
	return s
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// serve starts `resourcesync serve` on what and waits until its Resource
// List names n resources.
func (b *bench) serve(what, state string, n int, extra ...string) (*child, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	args := append([]string{"serve", "--addr", addr, "--state", state}, extra...)
	c, err := b.start(append(args, what)...)
	if err != nil {
		return nil, "", err
	}
	base := "http://" + addr + "/"
	deadline := time.Now().Add(30 * time.Minute)
	for {
		got, err := listed(base)
		if err == nil && got == n {
			return c, base, nil
		}
		select {
		case <-c.done:
			return nil, "", fmt.Errorf("serve exited: %v\n%s", c.err, tail(c.out.String()))
		default:
		}
		if time.Now().After(deadline) {
			c.wait(true)
			return nil, "", fmt.Errorf("serve: %d resources listed, want %d (%v)", got, n, err)
		}
		time.Sleep(time.Second)
	}
}

// listed counts the resources of the Source's Resource List.
func listed(base string) (int, error) {
	caps := map[rs.Capability]string{}
	if err := entries(base+".resourcesync/default/capabilitylist.xml", func(e *rs.Entry) { caps[e.MD.Capability] = e.Loc }); err != nil {
		return 0, err
	}
	if caps[rs.CapResourceList] == "" {
		return 0, errors.New("no Resource List yet")
	}
	n := 0
	err := entries(caps[rs.CapResourceList], func(*rs.Entry) { n++ })
	return n, err
}

func entries(u string, fn func(*rs.Entry)) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	d := rs.NewDecoder(resp.Body)
	head, err := d.Head()
	if err != nil {
		return err
	}
	var children []string
	for {
		e, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if head.IsIndex() {
			children = append(children, e.Loc)
		} else {
			fn(e)
		}
	}
	for _, c := range children {
		if err := entries(c, fn); err != nil {
			return err
		}
	}
	return nil
}

// syncRate is measurement 1.
func (b *bench) syncRate(ctx context.Context, n int) error {
	src := filepath.Join(b.scratch, fmt.Sprint("src-", n))
	for i := range n {
		p := filepath.Join(src, filepath.FromSlash(key(i)))
		if i%1000 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(p, body(i), 0o644); err != nil {
			return err
		}
	}
	srv, base, err := b.serve(src, filepath.Join(b.scratch, fmt.Sprint("serve-", n)), n)
	if err != nil {
		return err
	}
	defer srv.wait(true)
	bucket, err := b.newBucket(fmt.Sprint("rate-", n))
	if err != nil {
		return err
	}
	plain := func(prefix string) (time.Duration, error) {
		start := time.Now()
		err := run16(n, func(i int) error {
			data := body(i)
			_, err := b.raw.PutObject(ctx, &s3.PutObjectInput{
				Bucket: aws.String(bucket), Key: aws.String(prefix + key(i)),
				Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
			})
			return err
		})
		return time.Since(start), err
	}
	b1, err := plain("base1/")
	if err != nil {
		return err
	}
	start := time.Now()
	c, err := b.start("sync", "--progress", "quiet", "--workers", "16", "--state", filepath.Join(b.scratch, fmt.Sprint("syncstate-", n)), base, "s3://"+bucket+"/sync")
	if err != nil {
		return err
	}
	rss, err := c.wait(false)
	if err != nil {
		return err
	}
	ours := time.Since(start)
	b2, err := plain("base2/")
	if err != nil {
		return err
	}
	if got, err := b.count(ctx, bucket, "sync/"); err != nil || got != n {
		return fmt.Errorf("sync mirrored %d objects (%v), want %d", got, err, n)
	}
	// The faster of the two baselines: the first may share the machine
	// with the serve still writing its Resource Dump.
	baseT := min(b1, b2)
	ratio := baseT.Seconds() / ours.Seconds()
	fmt.Printf("\n## sync of %d files of 1 KiB from a local serve into an empty bucket prefix (--workers 16)\n", n)
	fmt.Printf("plain PUT, 16 at a time: %.0f objects/s (runs of %.1f s and %.1f s; the faster counts)\n", float64(n)/baseT.Seconds(), b1.Seconds(), b2.Seconds())
	fmt.Printf("resourcesync sync:       %.0f objects/s (%.1f s), peak RSS %.0f MiB\n", float64(n)/ours.Seconds(), ours.Seconds(), rss)
	fmt.Printf("sync/baseline rate:      %.2f× (target ≥ 0.5×: %s)\n", ratio, verdict(ratio >= 0.5))
	fmt.Printf("sync's report: %s\n", lastLines(c.out.String(), 2))
	return nil
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// bucketSource is measurement 2 at n objects.
func (b *bench) bucketSource(ctx context.Context, n int) error {
	bucket, err := b.newBucket(fmt.Sprint("src-", n))
	if err != nil {
		return err
	}
	root := filepath.Join(b.srv.Root, bucket)
	defer os.RemoveAll(root)
	for i := range n {
		p := filepath.Join(root, "pre", filepath.FromSlash(key(i)))
		if i%1000 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
		}
		data := body(i)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		// The ETag versitygw's PUT would have kept (its posix backend
		// reads it from this attribute; without it an object has none).
		sum := md5.Sum(data)
		if err := syscall.Setxattr(p, "user.etag", []byte(`"`+hex.EncodeToString(sum[:])+`"`), 0); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	loc := "s3://" + bucket + "/pre"
	state := filepath.Join(b.scratch, fmt.Sprint("bstate-", n))
	start := time.Now()
	srv, base, err := b.serve(loc, state, n, "--rescan-interval", "20s")
	if err != nil {
		return err
	}
	firstScan := time.Since(start)
	var syncT time.Duration
	var syncRSS float64
	if mirror {
		if syncT, syncRSS, err = b.mirror(ctx, base, n); err != nil {
			srv.wait(true)
			return err
		}
	}
	// The Source rescans at least once more (every 20 s) before it stops.
	time.Sleep(25 * time.Second)
	serveRSS, _ := srv.wait(true)

	// The rescan, in this process, on the serve's own state.
	var db *bolt.DB
	err = filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "state.db" && db == nil {
			db, err = bolt.Open(p, nil)
			return err
		}
		return nil
	})
	if err != nil || db == nil {
		return fmt.Errorf("the serve's state.db under %s: %v", state, err)
	}
	defer db.Close()
	content, err := s3storage.OpenContent(ctx, loc, s3storage.Options{
		Endpoint: b.srv.Endpoint, Region: b.srv.Region,
		Credentials: credentials.NewStaticCredentialsProvider(b.srv.AccessKey, b.srv.SecretKey, ""),
	})
	if err != nil {
		return err
	}
	defer content.Close()
	sc, err := scan.New(scan.Options{Content: content, Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	var listT, scanT time.Duration
	var st scan.Stats
	for _, rescan := range []bool{false, true, true, false} {
		t := time.Now()
		if rescan {
			if st, err = sc.Scan(ctx); err != nil {
				return err
			}
			scanT += time.Since(t)
			if st.Files != n || st.Hashed != 0 {
				return fmt.Errorf("rescan: %d files, %d read, want %d and 0", st.Files, st.Hashed, n)
			}
		} else {
			got, err := b.count(ctx, bucket, "pre/")
			if err != nil {
				return err
			}
			listT += time.Since(t)
			if got != n {
				return fmt.Errorf("listing: %d objects, want %d", got, n)
			}
		}
	}
	ratio := scanT.Seconds() / listT.Seconds()
	fmt.Printf("\n## a bucket of %d objects of 1 KiB as a Source\n", n)
	fmt.Printf("serve s3://: first scan (every object read once) and Resource List: %.1f s; peak RSS %.0f MiB (≤ 128: %s)\n", firstScan.Seconds(), serveRSS, verdict(serveRSS <= 128))
	if mirror {
		fmt.Printf("sync from it into another bucket (--workers 16): %.1f s, %.0f objects/s; peak RSS %.0f MiB (≤ 128: %s)\n", syncT.Seconds(), float64(n)/syncT.Seconds(), syncRSS, verdict(syncRSS <= 128))
	}
	fmt.Printf("one plain ListObjectsV2 listing: %.2f s; the Source's rescan (0 read, %d unchanged): %.2f s\n", listT.Seconds()/2, st.Unchanged, scanT.Seconds()/2)
	fmt.Printf("rescan/listing time: %.2f× (target ≤ 1.2×: %s)\n", ratio, verdict(ratio <= 1.2))
	return nil
}

// mirror syncs the Source at base (n resources) into an empty bucket and
// returns the time and the sync's peak RSS.
func (b *bench) mirror(ctx context.Context, base string, n int) (time.Duration, float64, error) {
	dest, err := b.newBucket(fmt.Sprint("mirror-", n))
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(filepath.Join(b.srv.Root, dest))
	start := time.Now()
	c, err := b.start("sync", "--progress", "quiet", "--workers", "16", "--state", filepath.Join(b.scratch, fmt.Sprint("mstate-", n)), base, "s3://"+dest+"/m")
	if err != nil {
		return 0, 0, err
	}
	syncRSS, err := c.wait(false)
	if err != nil {
		return 0, 0, err
	}
	syncT := time.Since(start)
	if got, err := b.count(ctx, dest, "m/"); err != nil || got != n {
		return 0, 0, fmt.Errorf("sync mirrored %d objects (%v), want %d", got, err, n)
	}
	return syncT, syncRSS, nil
}
