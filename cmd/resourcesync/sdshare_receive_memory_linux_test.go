package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
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

// TestSDShareReceiveMemoryBudget: 8 concurrent pushes of 1 MB to a
// receiver in a child process with --max-memory 100 MiB: some are taken,
// the others get 503 with Retry-After before their bodies are read, the
// peak RSS stays within the budget, and a refused push sent again later
// is applied. Before, every push was read and parsed at once: 345 MB peak
// for these 8 (94 MB with the budget; one such push alone: +46 MB).
func TestSDShareReceiveMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("peak RSS: not with -short, the race run, whose instrumentation would make the figures meaningless")
	}
	const n, size, budget = 8, 1 << 20, 100 << 20
	rc := startRecvChild(t, "--store", t.TempDir(), "--max-bytes", strconv.Itoa(2*size), "--max-memory", strconv.Itoa(budget))
	hc, _ := testnet.Client(t)
	hc.Timeout = 2 * time.Minute
	idle, err := vmHWM(rc.pid)
	if err != nil {
		t.Fatal(err)
	}
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = pushBody(fmt.Sprintf("x:r%d", i), size)
	}
	var wg sync.WaitGroup
	answers := make([]pushAnswer, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = pushTo(hc, rc.base, fmt.Sprintf("x:r%d", i), bodies[i])
		}()
	}
	wg.Wait()
	peak, err := vmHWM(rc.pid)
	if err != nil {
		t.Fatal(err)
	}
	applied, refused := 0, -1
	for i, a := range answers {
		switch {
		case a.err == nil && a.code == http.StatusOK:
			applied++
		case a.err == nil && a.code == http.StatusServiceUnavailable && a.retryAfter == "2" && strings.Contains(a.body, "memory budget"):
			refused = i
		default:
			t.Errorf("push %d: %d Retry-After %q %q %v", i, a.code, a.retryAfter, a.body, a.err)
		}
	}
	grew := float64(peak-idle) / 1024
	t.Logf("%d concurrent pushes of %d MiB: %d applied, peak RSS %.1f MiB (idle %.1f MiB)", n, size>>20, applied, float64(peak)/1024, float64(idle)/1024)
	if refused < 0 || applied == 0 {
		t.Fatalf("%d applied, none refused with 503: the budget did not hold", applied)
	}
	// The budget is the estimate of the memory in use; 50 MiB for the
	// garbage collector's pacing and the store's pages.
	if bound := float64(budget>>20) + 50; grew > bound {
		t.Errorf("peak RSS grew by %.1f MiB during the pushes, bound %.0f MiB", grew, bound)
	}
	if a := pushTo(hc, rc.base, fmt.Sprintf("x:r%d", refused), bodies[refused]); a.err != nil || a.code != http.StatusOK {
		t.Fatalf("the refused push sent again: %d %q %v", a.code, a.body, a.err)
	}
	resp, err := hc.Get(rc.base + "status")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("applied %d\n", applied+1); !strings.Contains(string(st), want) || !strings.Contains(string(st), fmt.Sprintf("refused busy %d\n", n-applied)) {
		t.Errorf("status %q, want %q and %d refused busy", st, want, n-applied)
	}
}

// TestSDShareReceiveMemoryBudgetDense: the budget holds for Turtle as
// dense as it gets (object lists, "1," a statement): 4 concurrent pushes
// of 128 KB, 65,536 statements each, to a receiver with --max-memory
// 100 MiB. Each reserves 5 MB by its length and takes more as its
// statements are read, so those that do not fit beside the others get
// 503; the peak RSS stays within the budget. Before, all four were taken
// by their length and parsed at once: 196 MB of growth, 70-75 MB now.
func TestSDShareReceiveMemoryBudgetDense(t *testing.T) {
	if testing.Short() {
		t.Skip("peak RSS: not with -short, the race run, whose instrumentation would make the figures meaningless")
	}
	const n, size, budget = 4, 128 << 10, 100 << 20
	rc := startRecvChild(t, "--store", t.TempDir(), "--max-memory", strconv.Itoa(budget))
	hc, _ := testnet.Client(t)
	hc.Timeout = 2 * time.Minute
	idle, err := vmHWM(rc.pid)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	answers := make([]pushAnswer, n)
	for i := range n {
		r := fmt.Sprintf("x:r%d", i)
		body := "<" + r + "> <x:p> " + strings.Repeat("1,", size/2-4) + "2 .\n"
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, rc.base+"?resource="+r+"&graph=x:g", strings.NewReader(body))
			req.Header.Set("Content-Type", "text/turtle")
			resp, err := hc.Do(req)
			if err != nil {
				answers[i] = pushAnswer{err: err}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers[i] = pushAnswer{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: strings.TrimSpace(string(b))}
		}()
	}
	wg.Wait()
	peak, err := vmHWM(rc.pid)
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for i, a := range answers {
		switch {
		case a.err == nil && a.code == http.StatusOK:
			applied++
		case a.err == nil && a.code == http.StatusServiceUnavailable && a.retryAfter == "2" && strings.Contains(a.body, "memory budget"):
		default:
			t.Errorf("push %d: %d Retry-After %q %q %v", i, a.code, a.retryAfter, a.body, a.err)
		}
	}
	grew := float64(peak-idle) / 1024
	t.Logf("%d concurrent dense pushes of %d KiB: %d applied, peak RSS %.1f MiB (idle %.1f MiB)", n, size>>10, applied, float64(peak)/1024, float64(idle)/1024)
	if applied == 0 {
		t.Fatal("none applied")
	}
	if bound := float64(budget>>20) + 50; grew > bound {
		t.Errorf("peak RSS grew by %.1f MiB during the pushes, bound %.0f MiB", grew, bound)
	}
}
