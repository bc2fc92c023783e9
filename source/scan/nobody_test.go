//go:build linux

package scan_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestAsNobody reruns the permission cases of TestChangeDetection as the
// unprivileged user nobody when the tests run as root, since root reads
// files and lists directories whatever their mode (there the unreadable
// file cases use an injected open error instead, and the unlistable
// directory case is skipped).
func TestAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("already unprivileged: TestChangeDetection covers the permission cases")
	}
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
	dir, err := os.MkdirTemp("", "scan-nobody")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "scan.test")
	if err := copyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestChangeDetection$/^(unreadable|unlistable)", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + dir, "HOME=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	os.Chmod(dir, 0o777)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	s := string(out)
	t.Logf("as nobody:\n%s", s)
	for _, want := range []string{"--- PASS: TestChangeDetection/unlistable", "--- PASS: TestChangeDetection/unreadable_new_file", "cannot list directory"} {
		if !strings.Contains(s, want) {
			t.Errorf("as nobody: no %q in\n%s", want, s)
		}
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
