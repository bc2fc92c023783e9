package boltdb

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockHolders returns the pids holding a lock on the file at path, from
// /proc/locks. A lock on a file of the same inode number on another
// device is taken when none is on the file's own: the device numbers of
// stat and of /proc/locks differ on some file systems (btrfs subvolumes).
func lockHolders(path string) []int {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return nil
	}
	defer f.Close()
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff)
	minor := dev&0xff | (dev>>12)&^uint64(0xff)
	// "1: FLOCK  ADVISORY  WRITE 1234 08:01:1311 0 EOF"; a waiter's line
	// has "->" after the number.
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino)
	ino := ":" + strconv.FormatUint(uint64(st.Ino), 10)
	var pids, others []int
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 6 || fields[1] == "->" {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil || pid <= 0 {
			continue
		}
		switch {
		case fields[5] == want:
			pids = append(pids, pid)
		case strings.HasSuffix(fields[5], ino):
			others = append(others, pid)
		}
	}
	if len(pids) == 0 {
		return others
	}
	return pids
}

// cmdline is the command line of process pid (ok false if it is gone or
// unreadable).
func cmdline(pid int) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil, false
	}
	return strings.Split(string(bytes.TrimSuffix(b, []byte{0})), "\x00"), true
}

func alive(pid int) tristate {
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
		return no
	}
	return yes
}
