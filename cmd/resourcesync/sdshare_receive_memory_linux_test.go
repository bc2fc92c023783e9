package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testnet"
)

// recvChild is `sdshare receive` in a child process (memCmd), for its
// peak RSS.
type recvChild struct {
	pid  int
	base string
	done chan error
	errs *syncBuffer
}

func startRecvChild(t *testing.T, args ...string) *recvChild {
	t.Helper()
	addr := freeAddr(t)
	cmd := memCmd(append([]string{"sdshare", "receive", "--addr", addr}, args...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &recvChild{pid: cmd.Process.Pid, base: "http://" + addr + "/", done: make(chan error, 1), errs: &syncBuffer{}}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			fmt.Fprintln(c.errs, sc.Text())
			if strings.Contains(sc.Text(), "listening on") {
				ready <- true
			}
		}
		io.Copy(io.Discard, pipe)
		c.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-c.done
		}
	})
	select {
	case <-ready:
	case err := <-c.done:
		t.Fatalf("sdshare receive exited before listening: %v\n%s", err, c.errs.String())
	case <-time.After(time.Minute):
		t.Fatalf("sdshare receive not listening after a minute\n%s", c.errs.String())
	}
	return c
}

// pushBody is an N-Triples fragment of resource r of about n bytes, in
// short statements (many triples per byte: the parse's worst case).
func pushBody(r string, n int) []byte {
	var b bytes.Buffer
	b.Grow(n + 64)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "<%s> <x:p> \"%d\" .\n", r, i)
	}
	return b.Bytes()
}

type pushAnswer struct {
	code       int
	retryAfter string
	body       string
	err        error
}

func pushTo(hc *http.Client, base, resource string, body []byte) pushAnswer {
	req, err := http.NewRequest(http.MethodPost, base+"?resource="+resource+"&graph=x:g", bytes.NewReader(body))
	if err != nil {
		return pushAnswer{err: err}
	}
	req.Header.Set("Content-Type", "application/n-triples")
	resp, err := hc.Do(req)
	if err != nil {
		return pushAnswer{err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return pushAnswer{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: strings.TrimSpace(string(b))}
}

// TestSDShareReceiveMemoryMeasure pushes RECV_MEM_N concurrent bodies of
// RECV_MEM_MB each and logs the peak RSS: the figures of the report.
func TestSDShareReceiveMemoryMeasure(t *testing.T) {
	nStr := os.Getenv("RECV_MEM_N")
	if nStr == "" {
		t.Skip("RECV_MEM_N not set: a measurement, not a test")
	}
	n, _ := strconv.Atoi(nStr)
	mb, _ := strconv.Atoi(os.Getenv("RECV_MEM_MB"))
	extra := strings.Fields(os.Getenv("RECV_MEM_ARGS"))
	rc := startRecvChild(t, append([]string{"--store", t.TempDir(), "--max-bytes", strconv.Itoa(mb<<20 + 1<<20)}, extra...)...)
	hc, _ := testnet.Client(t)
	hc.Timeout = 10 * time.Minute
	h0, _ := vmHWM(rc.pid)
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = pushBody(fmt.Sprintf("x:r%d", i), mb<<20)
	}
	var wg sync.WaitGroup
	answers := make([]pushAnswer, n)
	t0 := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = pushTo(hc, rc.base, fmt.Sprintf("x:r%d", i), bodies[i])
		}()
	}
	wg.Wait()
	h1, _ := vmHWM(rc.pid)
	for i, a := range answers {
		t.Logf("push %d: %d %s %q %v", i, a.code, a.retryAfter, a.body, a.err)
	}
	t.Logf("%d × %d MB: peak RSS %.1f MB (idle %.1f MB) in %s", n, mb, float64(h1)/1024, float64(h0)/1024, time.Since(t0).Round(time.Millisecond))
}
