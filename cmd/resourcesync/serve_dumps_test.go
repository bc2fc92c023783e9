//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// diskUse is the space the files under dir take on disk (allocated
// blocks where the platform says, else their sizes), and whether a ZIP
// package is among them.
func diskUse(t *testing.T, dir string) (bytes int64, zips []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			bytes += st.Blocks * 512
		} else {
			bytes += fi.Size()
		}
		if strings.HasSuffix(p, ".zip") {
			zips = append(zips, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bytes, zips
}

// TestServeDefaultWritesNoDumpCopy: serve's default keeps no copy of DIR
// in DIR/.resourcesync (at most 5% of DIR, no ZIP package), and still
// offers the Resource Dump, from which a Destination's default baseline
// installs every file byte for byte. With --dump-files the packages are
// files, as before (which is what the first case would catch).
func TestServeDefaultWritesNoDumpCopy(t *testing.T) {
	syncLoopbackOnly(t)
	for _, tc := range []struct {
		name     string
		args     []string
		wantZips bool
	}{
		{"default", nil, false},
		{"dump-files", []string{"--dump-files"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rng := rand.New(rand.NewPCG(1, 2))
			const n = 300
			var total int64
			for i := range n {
				b := make([]byte, 20000+rng.IntN(40000)) // 12 MB in all
				for j := range b {
					b[j] = byte(rng.Uint32())
				}
				p := filepath.Join(dir, fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%03d.bin", i))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
				total += int64(len(b))
			}
			addr := freeAddr(t)
			out, stop := background(t, append([]string{"serve", "--addr", addr, "--rescan-interval", "0", "--no-hub"}, append(tc.args, dir)...)...)
			defer stop()
			waitFor(t, "serve", 120*time.Second, func() bool { return strings.Contains(out.String(), "serving ") })

			state := filepath.Join(dir, ".resourcesync")
			use, zips := diskUse(t, state)
			t.Logf("DIR %d bytes, DIR/.resourcesync %d bytes on disk (%.1f%%), %d ZIP files", total, use, 100*float64(use)/float64(total), len(zips))
			if tc.wantZips {
				if len(zips) == 0 {
					t.Fatal("--dump-files wrote no package")
				}
			} else {
				if len(zips) > 0 {
					t.Fatalf("serve wrote dump packages by default: %v", zips)
				}
				if use*20 > total {
					t.Fatalf("DIR/.resourcesync takes %d bytes, more than 5%% of DIR's %d", use, total)
				}
			}

			c, _ := testnet.Client(t)
			dest := filepath.Join(t.TempDir(), "mirror")
			// PreferDump: this is about the dump (our serve's bulk GET
			// would otherwise be taken instead).
			rep, err := destination.Sync(context.Background(), "http://"+addr+"/", destination.Options{Dest: dest, Client: c, PreferDump: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Sets) != 1 || rep.Sets[0].FromDump != n || rep.Sets[0].Failed != 0 {
				t.Fatalf("baseline: %+v, want all %d from the Resource Dump", rep.Sets[0], n)
			}
			for i := range n {
				rel := filepath.Join(fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%03d.bin", i))
				a, _ := os.ReadFile(filepath.Join(dir, rel))
				b, err := os.ReadFile(filepath.Join(dest, rel))
				if err != nil || !bytes.Equal(a, b) {
					t.Fatalf("%s differs in the mirror (%v)", rel, err)
				}
			}
		})
	}
}

// TestSyncDumpsAndNoDumps: sync --dumps (take the dump even from our
// serve) and --no-dumps (never) contradict each other: a usage error
// before anything is fetched.
func TestSyncDumpsAndNoDumps(t *testing.T) {
	code, _, errOut := runCLI(t, "sync", "--dumps", "--no-dumps", "http://127.0.0.1:1/", t.TempDir())
	if code != exitUsage || !strings.Contains(errOut, "--dumps and --no-dumps") {
		t.Errorf("exit %d, %q; want %d naming both flags", code, errOut, exitUsage)
	}
}
