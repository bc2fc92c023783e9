//go:build unix

package boltdb

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestHolderRecordHostile: the record beside a state is written by
// whoever can write the state's directory, and Holder reads it when an
// open fails. A record that is a FIFO (no writer: an open for reading
// waits forever) or a sparse file of a terminabyte (read whole, it is
// an allocation of that size: the process dies) must not hang nor kill
// the command that only wanted to say who holds the state: Holder
// answers, within a second, with nobody.
func TestHolderRecordHostile(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(rec string) error
	}{
		{"fifo", func(rec string) error { return syscall.Mkfifo(rec, 0o600) }},
		{"sparse terabyte", func(rec string) error {
			f, err := os.Create(rec)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(1 << 40)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "state.db")
			if err := tc.make(p + HolderSuffix); err != nil {
				t.Skipf("cannot make the record here: %v", err)
			}
			done := make(chan string, 1)
			go func() { done <- Holder(p) }()
			select {
			case h := <-done:
				if h != "" {
					t.Errorf("Holder = %q, want nobody", h)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Holder hangs on the record")
			}
		})
	}
}
