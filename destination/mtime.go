package destination

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// A file system may keep mtimes coarser than the nanoseconds a Source's
// lastmod has: FAT 2 s, HFS+ 1 s, exFAT 10 ms, NTFS 100 ns. An install
// sets the file's mtime to the lastmod, and the file system keeps it
// rounded: there, the mtime a record holds is the one read back from the
// file after the install, and a file's mtime is taken for the lastmod
// when it is within the granularity of it. On a file system that keeps
// nanoseconds nothing is read back (no extra system call per file) and
// mtimes are compared exactly.

// mtimeGrains are the granularities a probe tells apart, coarsest first.
var mtimeGrains = [...]time.Duration{2 * time.Second, time.Second, 100 * time.Millisecond, 10 * time.Millisecond,
	time.Millisecond, 100 * time.Microsecond, 10 * time.Microsecond, time.Microsecond, 100 * time.Nanosecond, 10 * time.Nanosecond}

// mtimeProbeTime is the mtime the probe sets: odd seconds and
// nanoseconds no coarser granularity keeps (and no rounding of them, up
// or down, makes a multiple of a coarser one).
var mtimeProbeTime = time.Unix(1_600_000_001, 987_654_321)

// probeMTimeGrain finds the granularity of the mtimes dir's file system
// keeps: it creates a file in dir, sets its mtime to mtimeProbeTime,
// reads it back and removes it. 0 is a file system that keeps
// nanoseconds.
func probeMTimeGrain(dir string) (time.Duration, error) {
	var rnd [6]byte
	rand.Read(rnd[:])
	p := filepath.Join(dir, ".mtime-probe-"+hex.EncodeToString(rnd[:]))
	fd, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	defer os.Remove(p)
	if err := fd.Close(); err != nil {
		return 0, err
	}
	if err := os.Chtimes(p, mtimeProbeTime, mtimeProbeTime); err != nil {
		return 0, err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return 0, err
	}
	return grainOf(mtimeProbeTime.UnixNano(), fi.ModTime().UnixNano()), nil
}

// grainOf is the granularity of a file system that kept the mtime set as
// got: the coarsest of mtimeGrains got is a multiple of, and at least
// how far it is from set.
func grainOf(set, got int64) time.Duration {
	if got == set {
		return 0
	}
	g := time.Duration(1)
	for _, c := range mtimeGrains {
		if got%int64(c) == 0 {
			g = c
			break
		}
	}
	if d := time.Duration(absDiff(set, got)); d >= g {
		g = d + 1
	}
	return g
}

// absDiff is |a-b| without overflow.
func absDiff(a, b int64) uint64 {
	if a >= b {
		return uint64(a) - uint64(b)
	}
	return uint64(b) - uint64(a)
}

// mtimeIs reports whether a file's mtime (Unix ns) is want as DEST's file
// system keeps it: the same, or within its granularity.
func (e *engine) mtimeIs(file, want int64) bool {
	if e.mtimeGrain <= 1 {
		return file == want
	}
	return absDiff(file, want) < uint64(e.mtimeGrain)
}

// metaMTimeGrain is the state's meta key for the granularity the last
// writing run probed, which read-only runs (which write no probe) use.
const metaMTimeGrain = "mtime-grain"

// probeMTime sets e.mtimeGrain: Options.MTimeGranularity when set, else a
// probe in dir (the state's temporary directory in DEST). A writing run
// records it in the state; a read-only one takes it from there.
func (e *engine) probeMTime(dir string, readOnly bool) error {
	prev, err := e.st.meta(metaMTimeGrain)
	if err != nil {
		return err
	}
	if readOnly && e.opt.MTimeGranularity == nil {
		n, _ := strconv.ParseInt(prev, 10, 64)
		e.mtimeGrain = time.Duration(max(n, 0))
		return nil
	}
	if f := e.opt.MTimeGranularity; f != nil {
		e.mtimeGrain, err = f(dir)
	} else {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		e.mtimeGrain, err = probeMTimeGrain(dir)
	}
	if err != nil {
		return err
	}
	if e.mtimeGrain < 0 {
		return errors.New("negative mtime granularity")
	}
	if v := strconv.FormatInt(int64(e.mtimeGrain), 10); !readOnly && v != prev {
		return e.st.setMeta(metaMTimeGrain, v)
	}
	return nil
}
