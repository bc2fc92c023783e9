package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQuietAndLogFormat: -q silences the logs of every long-running
// command (simulate -q logged every publication before), and
// --log-format json makes every log line one JSON object. Each case runs
// the command three times side by side, doing the same work: loud (text),
// loud (json) and -q; once the loud ones have logged, the quiet one has
// had its chance to, and must have printed nothing to stderr.
func TestQuietAndLogFormat(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	for i := range 20 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprint("v", i)), 0o644)
	}
	for _, tc := range []struct {
		name string
		args func() []string
	}{
		{"simulate", func() []string {
			return []string{"simulate", "--addr", freeAddr(t), "--resources", "20", "--change-rate", "50", "--dir", t.TempDir()}
		}},
		{"serve", func() []string {
			return []string{"serve", "--addr", freeAddr(t), "--no-hub", "--rescan-interval", "0", "--state", t.TempDir(), dir}
		}},
		{"publish", func() []string {
			return []string{"publish", "-v", "--base-url", "http://127.0.0.1/", "--state", t.TempDir(), "--out", t.TempDir(), dir}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type proc struct {
				stdout, stderr syncBuffer
				done           chan int
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			start := func(extra ...string) *proc {
				p := &proc{done: make(chan int, 1)}
				args := append([]string{"resourcesync"}, tc.args()...)
				args = append(args[:2], append(extra, args[2:]...)...)
				go func() { p.done <- run(ctx, args, &p.stdout, &p.stderr) }()
				return p
			}
			text, js, quiet := start(), start("--log-format", "json"), start("-q")
			if tc.name == "publish" {
				// publish is quiet by default and says more with -v: its
				// quiet twin drops -v for -q.
				quiet = nil
			}
			if tc.name != "publish" {
				waitFor(t, "log lines", 60*time.Second, func() bool {
					return strings.Count(text.stderr.String(), "\n") >= 2 && strings.Count(js.stderr.String(), "\n") >= 2
				})
			}
			if quiet != nil {
				waitFor(t, "the quiet one to start", 60*time.Second, func() bool { return quiet.stdout.String() != "" })
			}
			if tc.name != "publish" { // publish ends on its own
				cancel()
			}
			for _, p := range []*proc{text, js, quiet} {
				if p != nil {
					<-p.done
				}
			}
			for _, line := range strings.Split(strings.TrimSpace(js.stderr.String()), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil || m["msg"] == nil || m["level"] == nil {
					t.Errorf("--log-format json: line %q is not a JSON log record (%v)", line, err)
				}
			}
			for _, line := range strings.Split(strings.TrimSpace(text.stderr.String()), "\n") {
				if !strings.HasPrefix(line, "time=") || !strings.Contains(line, " level=") {
					t.Errorf("text log: line %q is not key=value (two log formats?)", line)
				}
			}
			if quiet != nil && quiet.stderr.String() != "" {
				t.Errorf("%s -q logged:\n%s", tc.name, quiet.stderr.String())
			}
		})
	}
}
