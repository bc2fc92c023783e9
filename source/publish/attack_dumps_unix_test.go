//go:build unix

package publish_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestAttackDumpFIFO: a file swapped for a FIFO aborts the download
// instead of blocking the handler in open(2) forever.
func TestAttackDumpFIFO(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("FIFO")
	}
	for _, name := range []string{"a/large.bin", "b/small.txt"} {
		t.Run(name, func(t *testing.T) {
			dir, _, e, _, _ := attackSetup(t)
			p := filepath.Join(dir, filepath.FromSlash(name))
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				// Release a reader blocked in open (the bug), so the test
				// server can close.
				for range 8 {
					if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
					time.Sleep(10 * time.Millisecond)
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", e.Loc, nil)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, err = readAll(resp)
			}
			if err == nil {
				t.Fatal("download completed with a FIFO in place of a file")
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatal("download hung on a FIFO in place of a file")
			}
		})
	}
}
