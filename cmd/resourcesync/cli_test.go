package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

// walkCommands calls fn for every command of the tree under root, with its
// argument path from the root (e.g. ["sdshare", "sync"]).
func walkCommands(root *cli.Command, fn func(path []string, c *cli.Command)) {
	var walk func(path []string, c *cli.Command)
	walk = func(path []string, c *cli.Command) {
		fn(path, c)
		for _, sub := range c.Commands {
			walk(append(slices.Clone(path), sub.Name), sub)
		}
	}
	walk(nil, root)
}

// setUpApp is newApp after urfave/cli's setup (help and completion
// commands added), as a run sees it.
func setUpApp(t *testing.T) *cli.Command {
	t.Helper()
	app := newApp(&bytes.Buffer{}, &bytes.Buffer{})
	if err := app.Run(context.Background(), []string{"resourcesync", "--help"}); err != nil {
		t.Fatal(err)
	}
	return app
}

func TestVersion(t *testing.T) {
	old := readBuildInfo
	t.Cleanup(func() { readBuildInfo = old })
	readBuildInfo = func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/resourcesync-go/resourcesync", Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-26T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}, true
	}
	want := "resourcesync v1.2.3 (commit 0123456789ab, modified, 2026-11-26T10:00:00Z) go1.99.1 " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	for _, args := range [][]string{{"--version"}, {"-V"}, {"version"}} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || out != want || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0, %q", args, code, out, errOut, want)
		}
	}
	// A release build's -ldflags -X stamp wins.
	version, commit, date = "v2.0.0", "fedcba9876543210", "2027-01-01T00:00:00Z"
	t.Cleanup(func() { version, commit, date = "", "", "" })
	if _, out, _ := runCLI(t, "version"); !strings.HasPrefix(out, "resourcesync v2.0.0 (commit fedcba987654, modified, 2027-01-01T00:00:00Z) go1.99.1") {
		t.Errorf("stamped: %q", out)
	}
	if code, _, errOut := runCLI(t, "version", "extra"); code != exitUsage || !strings.Contains(errOut, "usage: resourcesync version") {
		t.Errorf("version extra: exit %d, stderr %q", code, errOut)
	}
}

// builtBinary is resourcesync built with `go build`, stamped as a release
// build (-X main.version=v9.9.9); the Go build cache makes a second build
// in one run a link only.
func builtBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "resourcesync")
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.version=v9.9.9", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestVersionBinary: a `go build` binary reports the Go version that built it.
func TestVersionBinary(t *testing.T) {
	bin := builtBinary(t)
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.HasPrefix(s, "resourcesync v9.9.9 ") || !strings.Contains(s, runtime.Version()) {
		t.Errorf("--version: %q", s)
	}
}

func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := runCLI(t, "completion", sh)
		if code != 0 || !strings.Contains(out, "resourcesync") || errOut != "" {
			t.Errorf("completion %s: exit %d, stderr %q, stdout %.200q", sh, code, errOut, out)
			continue
		}
		if sh == "fish" && !strings.Contains(out, "complete -c resourcesync") {
			t.Errorf("fish completion lists no command: %.300q", out)
		}
		// The script must at least parse in the shell it is for.
		if path, err := exec.LookPath(sh); err == nil && sh != "fish" {
			c := exec.Command(path, "-n")
			c.Stdin = strings.NewReader(out)
			if b, err := c.CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", sh, err, b)
			}
		}
	}
	// What the scripts ask the binary for: the commands, then a command's flags.
	old := completionArgs
	t.Cleanup(func() { completionArgs = old })
	for _, tc := range []struct {
		args    []string
		want    []string
		notWant string
	}{
		{[]string{"--generate-shell-completion"}, []string{"sync\n", "serve\n", "completion\n"}, ""},
		{[]string{"sdshare", "--generate-shell-completion"}, []string{"sync\n", "receive\n"}, "validate"},
		{[]string{"sync", "--no", "--generate-shell-completion"}, []string{"--no-delete\n", "--no-dumps\n"}, "--no-dump\n"},
		{[]string{"simulate", "--ch", "--generate-shell-completion"}, []string{"--change-rate\n", "--changelist-period\n"}, "--rate"},
	} {
		completionArgs = func() []string { return append([]string{"resourcesync"}, tc.args...) }
		_, out, _ := runCLI(t, tc.args...)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: %q lacks %q", tc.args, out, w)
			}
		}
		if tc.notWant != "" && strings.Contains(out, tc.notWant) {
			t.Errorf("%v: %q offers %q", tc.args, out, tc.notWant)
		}
	}
	if code, _, errOut := runCLI(t, "completion", "tcsh"); code != exitUsage || !strings.Contains(errOut, "usage: resourcesync completion") {
		t.Errorf("completion tcsh: exit %d, stderr %q", code, errOut)
	}
	if _, out, _ := runCLI(t, "--help"); !strings.Contains(out, "completion") {
		t.Errorf("completion is not in the help:\n%s", out)
	}
}

func TestUnknownCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"synk"}, `unknown command "synk"; did you mean "sync"?`},
		{[]string{"serv"}, `did you mean "serve"?`},
		{[]string{"help", "synk"}, `unknown command or help topic "synk"; did you mean "sync"?`},
		{[]string{"sdshare", "synk"}, `unknown command "synk"; did you mean "sync"?`},
		{[]string{"sdshare", "recieve"}, `did you mean "receive"?`},
		{[]string{"frobnicate"}, `unknown command "frobnicate" (commands: validate, serve`},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitUsage || !strings.HasPrefix(errOut, "resourcesync: ") || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want 2 and %q", tc.args, code, errOut, out, tc.want)
		}
		if n := strings.Count(errOut, "\n"); n > 4 {
			t.Errorf("%v: %d lines on stderr, want a short usage", tc.args, n)
		}
	}
}

// TestBadFlagEveryCommand: every command answers an unknown flag, and a
// missing required flag, with the error first and a short usage, exit 2.
func TestBadFlagEveryCommand(t *testing.T) {
	app := setUpApp(t)
	walkCommands(app, func(path []string, c *cli.Command) {
		if c.Name == "help" {
			return
		}
		args := append(slices.Clone(path), "--no-such-flag")
		code, out, errOut := runCLI(t, args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if !strings.HasPrefix(lines[0], "resourcesync: unknown flag --no-such-flag") || len(lines) > 4 ||
			!strings.HasPrefix(lines[len(lines)-2], "usage: resourcesync") || !strings.HasSuffix(lines[len(lines)-1], " --help'") || out != "" {
			t.Errorf("%v: exit %d\nstderr:\n%s\nstdout:\n%s", args, code, errOut, out)
		}
	})
	code, _, errOut := runCLI(t, "publish", t.TempDir())
	if lines := strings.Split(strings.TrimSpace(errOut), "\n"); code != exitUsage || len(lines) != 3 ||
		!strings.Contains(lines[0], `Required flags "base-url, out" not set`) || !strings.HasPrefix(lines[1], "usage: resourcesync publish --base-url URL") {
		t.Errorf("publish without its required flags: exit %d\n%s", code, errOut)
	}
	// A missing argument: the error, then the short usage.
	for _, args := range [][]string{{"sync"}, {"sync", "http://127.0.0.1:1/"}, {"validate"}, {"serve"}, {"publish", "--base-url", "http://x/", "--out", t.TempDir()},
		{"sdshare", "sync"}, {"sdshare", "serve"}, {"sdshare", "receive", "extra"}} {
		code, out, errOut := runCLI(t, args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		name := strings.Join(args[:cmdDepth(args)], " ")
		if code != exitUsage || len(lines) != 3 || !strings.HasPrefix(lines[0], "resourcesync: ") ||
			!strings.HasPrefix(lines[1], "usage: resourcesync "+name+" ") || lines[2] != "see 'resourcesync "+name+" --help'" || out != "" {
			t.Errorf("%v: exit %d\nstderr:\n%s\nstdout:\n%s", args, code, errOut, out)
		}
	}
	if code, _, errOut := runCLI(t, "sync", "--no-delet"); code != exitUsage || !strings.Contains(errOut, `did you mean "--no-delete"?`) {
		t.Errorf("mistyped flag: exit %d, %q", code, errOut)
	}
}

// TestExitCodesDocumented: whatever the command line, the exit code is one
// the help documents (0, 1, 2), and every command's help states them.
func TestExitCodesDocumented(t *testing.T) {
	app := setUpApp(t)
	var cases [][]string
	for _, a := range [][]string{{}, {"--help"}, {"-h"}, {"help"}, {"h"}, {"synk"}, {"--nope"}, {"-x"}, {"help", "nope"},
		{"completion"}, {"completion", "bash"}, {"completion", "nope"}, {"sdshare"}, {"sdshare", "nope"}, {"sdshare", "--nope"},
		{"version"}, {"version", "x"}, {"--version", "x"}, {"--", "sync"}} {
		cases = append(cases, a)
	}
	walkCommands(app, func(path []string, c *cli.Command) {
		if len(path) == 0 || c.Name == "help" {
			return
		}
		cases = append(cases, append(slices.Clone(path), "--help"), append([]string{"help"}, path...), append(slices.Clone(path), "-v", "-q", "--bogus=1"))
		if c.Action != nil && c.Name != "completion" && c.Name != "version" {
			code, out, _ := runCLI(t, append(slices.Clone(path), "--help")...)
			if code != 0 || !strings.Contains(strings.ToLower(out), "exit status") {
				t.Errorf("%v --help: exit %d, no exit status documented", path, code)
			}
		}
	})
	for _, args := range cases {
		if code, _, errOut := runCLI(t, args...); code != 0 && code != exitProblems && code != exitUsage {
			t.Errorf("%v: exit %d (undocumented)\n%s", args, code, errOut)
		}
	}
	if _, out, _ := runCLI(t, "--help"); !strings.Contains(out, "Exit status: 0") || !strings.Contains(out, "help exit-status") {
		t.Errorf("root help names no exit status:\n%s", out)
	}
	_, out, _ := runCLI(t, "help", "exit-status")
	for _, s := range []string{"EXIT STATUS", "0  success", "1  the command ran and found problems", "2  usage error", "SIGTERM"} {
		if !strings.Contains(out, s) {
			t.Errorf("help exit-status lacks %q", s)
		}
	}
}

// TestReleaseScript: scripts/release.sh builds a stamped binary and a
// SHA256SUMS that checks it (one target here; all six in a release).
func TestReleaseScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("no sha256sum")
	}
	out := t.TempDir()
	target := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "release.sh"))
	cmd.Env = append(os.Environ(), "VERSION=v0.0.0-test", "TARGETS="+target, "OUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, b)
	}
	name := "resourcesync-v0.0.0-test-" + runtime.GOOS + "-" + runtime.GOARCH
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil || !strings.Contains(string(sums), "  "+name+"\n") {
		t.Fatalf("SHA256SUMS: %q, %v", sums, err)
	}
	check := exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = out
	if b, err := check.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c: %v\n%s", err, b)
	}
	v, err := exec.Command(filepath.Join(out, name), "--version").Output()
	if err != nil || !regexp.MustCompile(`^resourcesync v0\.0\.0-test \(commit [0-9a-f]{12}, (modified, )?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\) go1\.`).Match(v) {
		t.Errorf("--version of the release binary: %q, %v", v, err)
	}
}

// cmdDepth is how many of args name commands (sdshare sync: 2).
func cmdDepth(args []string) int {
	if args[0] == "sdshare" {
		return 2
	}
	return 1
}
