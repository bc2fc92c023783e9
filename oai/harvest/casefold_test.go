package harvest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/casefoldfs"
	"github.com/resourcesync-go/resourcesync/internal/testing/oaitest"
	"github.com/resourcesync-go/resourcesync/oai"
)

// casePair returns two identifiers that differ only in case and whose
// records share a bucket directory, so that their files differ only in
// case. (No ':' as in oai:host:id: FAT forbids it in names, and the
// harvester escapes it only on Windows.)
func casePair() (string, string) {
	for n := 0; ; n++ {
		a := fmt.Sprintf("x-Rec%d", n)
		b := strings.ToLower(a)
		if bucket(a) == bucket(b) {
			return a, b
		}
	}
}

// TestCaseFoldingHarvestReal: on a file system that ignores case (a FAT
// mount here; macOS and Windows by default), the records of two
// identifiers that differ only in case would share a file. The second is
// refused (Stats.Collided, a warning naming both); the first keeps its
// file, whether the two come in one page, in consecutive pages (staged
// while the other is committed) or in later harvests.
func TestCaseFoldingHarvestReal(t *testing.T) {
	for _, ps := range []int{10, 1} {
		t.Run(fmt.Sprint("page size ", ps), func(t *testing.T) {
			mnt := casefoldfs.Mount(t)
			caseFoldingHarvest(t, ps, true, func(c *Config) {
				c.Dir = filepath.Join(mnt, "records")
				c.MinFree = -1 // the FAT image is 64 MiB
			})
		})
	}
}

// TestCaseFoldingHarvestSimulated runs the same checks on any file
// system (Config.FoldsCase says it folds), for the records of one harvest.
func TestCaseFoldingHarvestSimulated(t *testing.T) {
	caseFoldingHarvest(t, 10, false, func(c *Config) {
		c.FoldsCase = func(string) (bool, error) { return true, nil }
	})
}

func caseFoldingHarvest(t *testing.T, pageSize int, real bool, mod func(*Config)) {
	a, b := casePair()
	r := newRig(t, oaitest.Options{PageSize: pageSize}, mod)
	r.s.Put("x-before", nil, dc("before"))
	r.s.Put(a, nil, dc("first"))
	r.s.Put(b, nil, dc("second"))
	r.s.Put("x-after", nil, dc("after"))
	st := r.harvest()
	if st.Collided != 1 || st.Written != 3 {
		t.Errorf("%+v", st)
	}
	pa, pb := RecordPath(a, oai.DCPrefix), RecordPath(b, oai.DCPrefix)
	first := func() {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(r.cfg.Dir, filepath.FromSlash(pa)))
		if err != nil || !strings.Contains(string(got), "first") {
			t.Errorf("%s: %q %v", pa, got, err)
		}
		d, err := os.Open(filepath.Dir(filepath.Join(r.cfg.Dir, filepath.FromSlash(pa))))
		if err != nil {
			t.Fatal(err)
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil || len(names) != 1 || names[0] != filepath.Base(pa) {
			t.Errorf("the bucket holds %q (%v), want only %s", names, err, filepath.Base(pa))
		}
	}
	first()
	if l := r.logb.String(); !strings.Contains(l, "differ only in case") || !strings.Contains(l, a) || !strings.Contains(l, b) {
		t.Errorf("log:\n%s", l)
	}
	if r.committed()[pb] != 0 {
		t.Errorf("%s reported as committed", pb)
	}
	if !real {
		return
	}
	// A later harvest brings the second again, changed: refused against
	// the first's file.
	r.s.Advance(time.Hour)
	r.s.Put(b, nil, dc("second, changed"))
	if st := r.harvest(); st.Collided != 1 || st.Written != 0 {
		t.Errorf("%+v", st)
	}
	first()
	// Its deletion removes nothing: the file is the first's.
	r.s.Advance(time.Hour)
	r.s.Delete(b)
	if st := r.harvest(); st.Deleted != 0 {
		t.Errorf("%+v", st)
	}
	first()
	// The first's own changes go through.
	r.s.Advance(time.Hour)
	r.s.Put(a, nil, dc("first, changed"))
	if st := r.harvest(); st.Written != 1 || st.Collided != 0 {
		t.Errorf("%+v", st)
	}
	first()
}
