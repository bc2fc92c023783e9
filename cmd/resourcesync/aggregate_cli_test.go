package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/boltstore"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// aggCLILoopbackOnly makes aggregate's Sources' client dial only loopback.
func aggCLILoopbackOnly(t *testing.T) {
	old := aggregateClient
	t.Cleanup(func() { aggregateClient = old })
	c, _ := testnet.Client(t)
	aggregateClient = func(aggregate.Source) (*http.Client, error) { return c, nil }
}

// writeSources writes a sources file the way the help says to: a new
// file renamed over the old.
func writeSources(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestAggregateExitCodes: aggregate's usage errors, a bad sources file or
// store (2), --once with every Source in sync (0) or one down (1), and
// --json's lines tagged with their Source.
func TestAggregateExitCodes(t *testing.T) {
	aggCLILoopbackOnly(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644)
	good, _ := serveDir(t, dir)
	down := "http://" + freeAddr(t) + "/"
	files := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(files, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	okFile := file("ok.txt", good+" one\n")
	downFile := file("down.txt", good+" one\n"+down+" two\n")
	badFile := file("bad.txt", good+" one --no-such-option\n")
	dupFile := file("dup.txt", good+" one\n"+good+" one\n")
	followFile := file("follow.txt", good+" one --follow\n")
	bare := strings.TrimPrefix(down, "http://")
	schemelessFile := file("schemeless.txt", bare+" two\n")
	tests := []struct {
		name string
		args []string
		want int
		out  string // substring of stdout+stderr
	}{
		{"no sources", []string{"aggregate"}, 2, "--sources"},
		{"argument", []string{"aggregate", "--sources", okFile, "extra"}, 2, "no arguments"},
		{"bad flag", []string{"aggregate", "--sources", okFile, "--nope"}, 2, ""},
		{"workers 0", []string{"aggregate", "--sources", okFile, "--workers", "0"}, 2, "--workers"},
		{"per-host too many", []string{"aggregate", "--sources", okFile, "--per-host", "1000"}, 2, "--per-host"},
		{"lease 0", []string{"aggregate", "--sources", okFile, "--lease", "0s"}, 2, "--lease"},
		{"negative run timeout", []string{"aggregate", "--sources", okFile, "--run-timeout", "-1s"}, 2, "--run-timeout"},
		{"two graph stores", []string{"aggregate", "--sources", okFile, "--graph-store", t.TempDir(), "--sparql-update", "http://127.0.0.1:1/"}, 2, "exclude"},
		{"missing sources file", []string{"aggregate", "--sources", filepath.Join(files, "nope.txt")}, 2, ""},
		{"bad option in sources", []string{"aggregate", "--sources", badFile}, 2, "no-such-option"},
		{"duplicate DEST", []string{"aggregate", "--sources", dupFile}, 2, "DEST"},
		{"bad store", []string{"aggregate", "--sources", okFile, "--store", "nope://x"}, 2, "--store"},
		{"once in sync", []string{"aggregate", "--once", "--sources", okFile, "--root", t.TempDir()}, 0, "one: "},
		{"once with a Source down", []string{"aggregate", "--once", "--sources", downFile, "--root", t.TempDir()}, 1, "two (unreachable)"},
		{"once with a follow line", []string{"aggregate", "--once", "--sources", followFile, "--root", t.TempDir()}, 0, "one: baseline ok"},
		{"once with a line without scheme", []string{"aggregate", "--once", "--sources", schemelessFile, "--root", t.TempDir()}, 1,
			schemelessFile + ":1: taking " + bare + " as https://" + bare},
		{"once json", []string{"aggregate", "--once", "--json", "--sources", okFile, "--root", t.TempDir()}, 0, `"source":"one"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if !strings.Contains(strings.Join(args, " "), "--root") {
				args = append(args, "--root", t.TempDir())
			}
			code, out, errOut := runCLI(t, args...)
			if code != tc.want {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.want, out, errOut)
			}
			if !strings.Contains(out+errOut, tc.out) {
				t.Errorf("output lacks %q\nstdout:\n%s\nstderr:\n%s", tc.out, out, errOut)
			}
		})
	}
	t.Run("quiet", func(t *testing.T) {
		// -q: nothing on stderr when all is well; a failed run still says so.
		if code, out, errOut := runCLI(t, "aggregate", "-q", "--once", "--sources", okFile, "--root", t.TempDir()); code != 0 || errOut != "" {
			t.Errorf("-q: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		if code, _, errOut := runCLI(t, "aggregate", "-q", "--once", "--sources", downFile, "--root", t.TempDir()); code != 1 || !strings.Contains(errOut, "two: ") || strings.Contains(errOut, "one: ") {
			t.Errorf("-q, a Source down: exit %d\nstderr:\n%s", code, errOut)
		}
	})
	t.Run("json lines", func(t *testing.T) {
		root := t.TempDir()
		code, out, errOut := runCLI(t, "aggregate", "--once", "--json", "--sources", okFile, "--root", root)
		if code != 0 {
			t.Fatalf("exit %d:\n%s%s", code, out, errOut)
		}
		ends := 0
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var sum struct {
			Event    string             `json:"event"`
			OK       bool               `json:"ok"`
			Snapshot aggregate.Snapshot `json:"snapshot"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Event != "summary" || !sum.OK || len(sum.Snapshot.Sources) != 1 {
			t.Errorf("last line is not an ok summary with the Source: %+v, %v", sum, err)
		}
		for _, l := range lines {
			var e aggregate.Event
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("not a JSON line: %q: %v", l, err)
			}
			if e.Kind == aggregate.EventRunEnd {
				ends++
				if e.Source != "one" || e.Run == nil || e.Run.State != "ok" {
					t.Errorf("run-end %+v", e)
				}
			}
		}
		if ends != 1 {
			t.Errorf("%d run-end lines, want 1:\n%s", ends, out)
		}
		if b, err := os.ReadFile(filepath.Join(root, "one", "a.txt")); err != nil || string(b) != "hello" {
			t.Errorf("mirror: %q, %v", b, err)
		}
	})
}

// TestAggregateOnceSharedStore: aggregate --once on a store shared with
// another node that holds one of the two Sources: this node runs the
// other and exits 0 (the Source another node runs is not this run's
// failure); the held one's mirror is left alone.
func TestAggregateOnceSharedStore(t *testing.T) {
	aggCLILoopbackOnly(t)
	dir1, dir2 := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir1, "a.txt"), []byte("one"), 0o644)
	os.WriteFile(filepath.Join(dir2, "b.txt"), []byte("two"), 0o644)
	src1, _ := serveDir(t, dir1)
	src2, _ := serveDir(t, dir2)
	root := t.TempDir()
	sources := filepath.Join(t.TempDir(), "sources.txt")
	writeSources(t, sources, src1+" one\n"+src2+" two\n")
	// Node "other" is alive and holds Source two.
	os.MkdirAll(filepath.Join(root, ".aggregate"), 0o755)
	bs, err := boltstore.Open(filepath.Join(root, ".aggregate", "aggregate.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := bs.Heartbeat(ctx, "other", time.Hour); err != nil {
		t.Fatal(err)
	}
	if ok, err := bs.Claim(ctx, "other", "two", time.Hour); err != nil || !ok {
		t.Fatal(ok, err)
	}
	bs.Close()
	code, out, errOut := runCLI(t, "aggregate", "--once", "--node", "me", "--sources", sources, "--root", root)
	if code != 0 {
		t.Errorf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(root, "one", "a.txt")); err != nil || string(b) != "one" {
		t.Errorf("Source one not mirrored: %q, %v\n%s", b, err, errOut)
	}
	if _, err := os.Stat(filepath.Join(root, "two", "b.txt")); err == nil {
		t.Errorf("Source two, held by another node, was synced here too")
	}
}
