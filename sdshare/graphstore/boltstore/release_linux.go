package boltstore

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// releaseMapped drops the pages of the store's memory map from this
// process's resident set (madvise MADV_DONTNEED). bbolt maps the file
// read-only and shared, so the pages stay in the page cache and are read
// again on the next access; without this, every page a long load or scan
// touched would count towards the process's RSS, which would then grow
// with the store. It must run inside a transaction: a transaction keeps
// bbolt from remapping meanwhile, so the range is still the store's.
// Errors are ignored: this only returns memory.
func (s *Store) releaseMapped() {
	var st syscall.Stat_t
	if err := syscall.Stat(s.path, &st); err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	ino := []byte(strconv.FormatUint(st.Ino, 10))
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 6 || !bytes.Equal(fields[4], ino) || !bytes.HasPrefix(fields[1], []byte("r--s")) {
			continue
		}
		lo, hi, ok := bytes.Cut(fields[0], []byte("-"))
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), syscall.MADV_DONTNEED)
	}
}
