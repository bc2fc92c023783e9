//go:build unix

package validate

import (
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestDirTransportFIFO: a named pipe in the tree (where a document is
// expected) answers 404 like any file that is not a regular one, instead
// of blocking the offline validation forever on its open.
func TestDirTransportFIFO(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".well-known"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(dir, ".well-known", "resourcesync"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	bu, _ := http.NewRequest("GET", "http://example.org/", nil)
	c := &http.Client{Transport: &dirTransport{base: bu.URL, root: root}}
	done := make(chan int, 1)
	go func() {
		resp, err := c.Get("http://example.org/.well-known/resourcesync")
		if err != nil {
			done <- -1
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	select {
	case code := <-done:
		if code != http.StatusNotFound {
			t.Errorf("a named pipe: %d, want 404", code)
		}
	case <-time.After(30 * time.Second): // a hang guard, not a timing
		// Unblock the open so that the test ends.
		if f, err := os.OpenFile(filepath.Join(dir, ".well-known", "resourcesync"), os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("the open of a named pipe blocks the validation")
	}
}
