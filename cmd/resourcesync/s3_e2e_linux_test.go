package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/s3test"
)

// TestBucketEndToEnd is issue 31's end-to-end proof, on versitygw: a
// bucket written by the independent client (aws) is published by `serve
// s3://…` in a process of its own and mirrored by `sync` into a directory
// and into another bucket, both read back (the bucket by aws) byte for
// byte; additions, an overwrite and a deletion made with aws reach both
// mirrors after the rescan; a sync into a bucket killed with SIGKILL
// mid-run leaves every object whole or absent and the next run is exact;
// with a fault proxy between sync and the bucket, 503 SlowDown and
// resets are retried (exit 0, exact), a permanent fault ends in a
// non-zero exit with no partial object. The secret key, in every
// process's environment, appears in no output.
func TestBucketEndToEnd(t *testing.T) {
	srv := s3test.Shared(t)
	s3test.SkipAWS(t)
	srv.SetEnv(t)
	syncLoopbackOnly(t)
	var outputs bytes.Buffer // every output, checked for the secret at the end
	src, dst := srv.NewBucket(t), srv.NewBucket(t)

	want := map[string]string{}
	put := t.TempDir()
	for i := range 14 {
		k := fmt.Sprintf("d%d/r %02d.txt", i%3, i)
		want[k] = strings.Repeat(fmt.Sprintf("%02d", i), 2000*i+1)
	}
	want["big.bin"] = strings.Repeat("0123456789abcdef", 9<<16) // 9 MiB: multipart
	for k, v := range want {
		p := filepath.Join(put, filepath.FromSlash(k))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(v), 0o644)
	}
	srv.AWS(t, nil, "s3", "cp", "--recursive", "--only-show-errors", put, "s3://"+src+"/c/")

	// serve s3://SRC/c, a real process.
	addr := freeAddr(t)
	serveLog := filepath.Join(t.TempDir(), "serve.log")
	serve := argvCmd("serve", "--addr", addr, "--no-hub", "--rescan-interval", "1s", "--state", t.TempDir(), "s3://"+src+"/c")
	lf, err := os.Create(serveLog)
	if err != nil {
		t.Fatal(err)
	}
	serve.Stdout, serve.Stderr = lf, lf
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	lf.Close()
	t.Cleanup(func() {
		serve.Process.Signal(syscall.SIGTERM)
		serve.Wait()
		b, _ := os.ReadFile(serveLog)
		if strings.Contains(string(b), srv.SecretKey) {
			t.Error("serve's log holds the secret key")
		}
		if t.Failed() {
			t.Logf("serve's log:\n%s", b)
		}
	})
	base := "http://" + addr + "/"
	waitFor(t, "serve", 60*time.Second, func() bool {
		resp, err := http.Get(base + ".well-known/resourcesync")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	dir, state := t.TempDir(), t.TempDir()
	loc := "s3://" + dst + "/m"
	report := filepath.Join(t.TempDir(), "report.html")
	syncBoth := func(what string) {
		t.Helper()
		for _, args := range [][]string{{base, dir}, {"--report", report, "--state", state, base, loc}} {
			code, out, errOut := runCLI(t, append([]string{"sync", "--progress", "quiet"}, args...)...)
			outputs.WriteString(out + errOut)
			if code != 0 {
				t.Fatalf("%s: sync %s: exit %d\n%s\n%s", what, args[len(args)-1], code, out, errOut)
			}
		}
	}
	// equal reports how the DIR mirror and the bucket mirror differ from
	// want ("" when both are exact).
	equal := func() string {
		var diff []string
		for _, m := range []struct{ name, root string }{{"dir", dir}, {"bucket", awsCopy(t, srv, loc)}} {
			got := readTree(t, m.root)
			for k, v := range want {
				if g, ok := got[k]; !ok || g != v {
					diff = append(diff, fmt.Sprintf("%s: %s: %d bytes (present %v), want %d", m.name, k, len(g), ok, len(v)))
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					diff = append(diff, m.name+": extra "+k)
				}
			}
		}
		sort.Strings(diff)
		return strings.Join(diff, "\n")
	}
	syncBoth("baseline")
	if d := equal(); d != "" {
		t.Fatalf("baseline:\n%s", d)
	}

	// Changes made with aws: two additions, an overwrite, a deletion.
	want["d0/new one.txt"], want["e/f/g.txt"] = "new", strings.Repeat("g", 70000)
	want["d1/r 01.txt"] = "overwritten"
	delete(want, "d2/r 02.txt")
	for _, k := range []string{"d0/new one.txt", "e/f/g.txt", "d1/r 01.txt"} {
		srv.Put(t, src, "c/"+k, []byte(want[k]))
	}
	srv.Remove(t, src, "c/d2/r 02.txt")
	// The rescan (every second) publishes them; until it has, a sync
	// finds nothing new.
	deadline := time.Now().Add(30 * time.Second)
	for {
		time.Sleep(1200 * time.Millisecond)
		syncBoth("after the changes")
		d := equal()
		if d == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the changes and the rescan:\n%s", d)
		}
	}

	// kill -9 mid-run, into a bucket of its own; --rate stretches the run
	// (--no-dumps: one request per resource, not one dump package) to
	// about 16 s: the aws ls that sees its first object takes seconds on
	// a loaded machine (at --rate 4 the run once ended before it).
	killed := srv.NewBucket(t)
	killedLoc, killedState := "s3://"+killed+"/k", t.TempDir()
	child := argvCmd("sync", "--progress", "quiet", "--no-dumps", "--rate", "1", "--workers", "2", "--state", killedState, base, killedLoc)
	var childOut bytes.Buffer
	child.Stdout, child.Stderr = &childOut, &childOut
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first object of the killed run", 30*time.Second, func() bool {
		out, _ := srv.RunAWS(nil, "s3", "ls", "--recursive", "s3://"+killed+"/")
		return len(bytes.TrimSpace(out)) > 0
	})
	child.Process.Signal(syscall.SIGKILL)
	err = child.Wait()
	outputs.Write(childOut.Bytes())
	if ws, ok := child.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("the sync was not killed mid-run (it ended: %v)\n%s", err, childOut.String())
	}
	got := readTree(t, awsCopy(t, srv, killedLoc))
	t.Logf("the killed run left %d of %d objects", len(got), len(want))
	for k, v := range got {
		if w, ok := want[k]; !ok || w != v {
			t.Errorf("after kill -9: %s holds %d bytes, the Source's has %d (present %v)", k, len(v), len(w), ok)
		}
	}
	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", "--state", killedState, base, killedLoc)
	outputs.WriteString(out + errOut)
	if code != 0 {
		t.Fatalf("the run after kill -9: exit %d\n%s\n%s", code, out, errOut)
	}
	if d := treeDiff(want, readTree(t, awsCopy(t, srv, killedLoc))); d != "" {
		t.Fatalf("the run after kill -9 is not exact:\n%s", d)
	}

	// Faults between sync and the bucket: retried, exact, exit 0. Four
	// in all, which internal/retry's default policy (4 retries) survives
	// even if they all hit one request.
	faulty := srv.NewBucket(t)
	proxy := srv.FaultProxy(t,
		s3test.Rule{Method: "PUT", Fault: s3test.SlowDown, Times: 2},
		s3test.Rule{Method: "PUT", Fault: s3test.ResetBefore, Times: 1},
		s3test.Rule{Method: "PUT", Fault: s3test.ResetAfter, Times: 1},
	)
	faultyLoc, faultyState := "s3://"+faulty+"/f", t.TempDir()
	code, out, errOut = runCLI(t, "sync", "--progress", "quiet", "--s3-endpoint", proxy.Endpoint, "--state", faultyState, base, faultyLoc)
	outputs.WriteString(out + errOut)
	if code != 0 {
		t.Fatalf("sync through transient faults: exit %d\n%s\n%s", code, out, errOut)
	}
	if n, r := proxy.Injected(s3test.SlowDown), proxy.Injected(s3test.ResetBefore)+proxy.Injected(s3test.ResetAfter); n != 2 || r != 2 {
		t.Errorf("faults injected: %d SlowDown, %d resets; want 2 and 2", n, r)
	}
	if d := treeDiff(want, readTree(t, awsCopy(t, srv, faultyLoc))); d != "" {
		t.Fatalf("sync through transient faults is not exact:\n%s", d)
	}

	// A permanent fault: every write of one object fails.
	broken := srv.NewBucket(t)
	proxy.SetRules(s3test.Rule{KeySuffix: "/e/f/g.txt", Method: "PUT", Fault: s3test.Internal})
	brokenLoc := "s3://" + broken + "/b"
	code, out, errOut = runCLI(t, "sync", "--json", "--s3-endpoint", proxy.Endpoint, "--state", t.TempDir(), base, brokenLoc)
	outputs.WriteString(out + errOut)
	if code == 0 {
		t.Fatalf("sync through a permanent fault: exit 0\n%s\n%s", out, errOut)
	}
	got = readTree(t, awsCopy(t, srv, brokenLoc))
	if _, ok := got["e/f/g.txt"]; ok {
		t.Error("the object whose writes all failed is in the bucket")
	}
	for k, v := range got {
		if want[k] != v {
			t.Errorf("after a permanent fault: %s holds %d bytes, want %d", k, len(v), len(want[k]))
		}
	}
	// sync's HTML report and serve's status page too.
	if b, err := os.ReadFile(report); err != nil || !bytes.Contains(b, []byte(dst)) {
		t.Errorf("sync --report: %v, or it names no bucket", err)
	} else {
		outputs.Write(b)
	}
	resp, err := http.Get(base + ".resourcesync/")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(&outputs, resp.Body)
	resp.Body.Close()
	if !strings.Contains(outputs.String(), "s3://"+dst+"/m") || !strings.Contains(outputs.String(), `"event"`) {
		t.Error("the outputs name no bucket or hold no --json event: the check below would prove little")
	}
	if strings.Contains(outputs.String(), srv.SecretKey) || strings.Contains(outputs.String(), srv.AccessKey+":") {
		t.Error("an output holds the secret key")
	}
}
