//go:build unix

package aggstatus

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteReportUmask: the report is made 0666 less the umask, as any
// file the user writes, even over a file of another mode (a temporary
// file's 0600 would make it unreadable to the web server publishing it).
func TestWriteReportUmask(t *testing.T) {
	p := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := syscall.Umask(0o027)
	err := WriteReport(p, fixture())
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 (0666 less the umask 027)", st.Mode().Perm())
	}
}
