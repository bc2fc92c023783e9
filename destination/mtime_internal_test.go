package destination

import (
	"os"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

func TestGrainOf(t *testing.T) {
	set := mtimeProbeTime
	for _, tc := range []struct {
		name string
		got  time.Time
		want time.Duration
	}{
		{"exact", set, 0},
		{"FAT, down", time.Unix(1_600_000_000, 0), 2 * time.Second},
		{"FAT, up", time.Unix(1_600_000_002, 0), 2 * time.Second},
		{"HFS+, down", time.Unix(1_600_000_001, 0), time.Second},
		{"HFS+, up", time.Unix(1_600_000_002, 0), 2 * time.Second}, // rounded up to even seconds: taken for FAT, which is wider
		{"exFAT", time.Unix(1_600_000_001, 980_000_000), 10 * time.Millisecond},
		{"exFAT, up", time.Unix(1_600_000_001, 990_000_000), 10 * time.Millisecond},
		{"NTFS", time.Unix(1_600_000_001, 987_654_300), 100 * time.Nanosecond},
		{"µs", time.Unix(1_600_000_001, 987_654_000), time.Microsecond},
		{"odd", time.Unix(1_600_000_001, 987_654_320), 10 * time.Nanosecond},
		{"far", time.Unix(1_600_000_101, 0), 99_012_345_679 + 1}, // at least the distance
	} {
		if g := grainOf(set.UnixNano(), tc.got.UnixNano()); g != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, g, tc.want)
		}
	}
}

func TestMTimeIs(t *testing.T) {
	lm := time.Unix(1_700_000_001, 123_456_789)
	fat := lm.Truncate(2 * time.Second).UnixNano()
	exact, coarse := &engine{}, &engine{mtimeGrain: 2 * time.Second}
	if !exact.mtimeIs(lm.UnixNano(), lm.UnixNano()) || exact.mtimeIs(fat, lm.UnixNano()) {
		t.Error("exact: mtimes compared with a tolerance")
	}
	if !coarse.mtimeIs(fat, lm.UnixNano()) || !coarse.mtimeIs(fat+2e9-1, fat) {
		t.Error("2 s: a rounded mtime is not the lastmod")
	}
	if coarse.mtimeIs(fat+2e9, fat) || coarse.mtimeIs(fat, fat-2e9) || coarse.mtimeIs(-1<<63, 1<<63-1) {
		t.Error("2 s: mtimes a grain apart are one")
	}
	// A file a killed run installed on FAT is the one of its entry.
	en := rs.Entry{LastMod: rs.NewTime(lm)}
	coarse.crashed, exact.crashed = true, true
	if !coarse.leftByCrash(&en, &Record{MTime: fat}) || exact.leftByCrash(&en, &Record{MTime: fat}) {
		t.Error("leftByCrash ignores the granularity")
	}
	if coarse.leftByCrash(&en, &Record{MTime: time.Now().UnixNano()}) {
		t.Error("leftByCrash takes a file written now for one installed with an old lastmod")
	}
}

func TestProbeMTimeGrain(t *testing.T) {
	dir := t.TempDir()
	g, err := probeMTimeGrain(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("temporary directory: mtime granularity %v", g)
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the probe left %v", ents)
	}
}
