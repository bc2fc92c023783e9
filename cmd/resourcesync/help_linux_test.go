package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY is a pseudo-terminal of cols columns: its terminal side, as a
// command's stdout would be.
func openPTY(t *testing.T, cols int) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pts: %v", err)
	}
	t.Cleanup(func() { pts.Close() })
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	return pts
}

// TestHelpTerminalWidth: on a terminal --help wraps to its width, between
// 40 and 100 columns; elsewhere to 80.
func TestHelpTerminalWidth(t *testing.T) {
	for _, tc := range []struct{ cols, want int }{{90, 90}, {132, helpMaxCols}, {20, 40}, {80, 80}} {
		if got := terminalWidth(openPTY(t, tc.cols)); got != tc.want {
			t.Errorf("a terminal of %d columns: help wraps to %d, want %d", tc.cols, got, tc.want)
		}
	}
	f, err := os.CreateTemp(t.TempDir(), "help")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := terminalWidth(f); got != helpPlainCols {
		t.Errorf("a file: help wraps to %d, want %d", got, helpPlainCols)
	}
	// The page for a wide terminal is shorter than for a file, and no
	// line passes the terminal's width.
	sync := setUpApp(t).Command("sync")
	wide := renderHelp(sync, terminalWidth(openPTY(t, 100)))
	if strings.Count(wide, "\n") >= strings.Count(renderHelp(sync, terminalWidth(f)), "\n") {
		t.Errorf("sync --help on a 100-column terminal is no shorter than on a file")
	}
	for _, l := range strings.Split(wide, "\n") {
		if len(l) > 100 {
			t.Errorf("line of %d columns on a 100-column terminal: %q", len(l), l)
		}
	}
}
