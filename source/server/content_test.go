package server

import "testing"

func TestRangeEnd(t *testing.T) {
	for _, tc := range []struct {
		h    string
		want int64
	}{
		{"", 100}, {"bytes=0-9", 10}, {"bytes=10-", 100}, {"bytes=-5", 100}, {"bytes=90-200", 100},
		{"bytes=0-1,5-6", 100}, {"bytes=a-b", 100}, {"items=0-9", 100}, {"bytes=5-99", 100}, {"bytes=5-98", 99},
	} {
		if got := rangeEnd(tc.h, 100); got != tc.want {
			t.Errorf("rangeEnd(%q) = %d, want %d", tc.h, got, tc.want)
		}
	}
}

func FuzzRangeEnd(f *testing.F) {
	f.Add("bytes=0-9", int64(100))
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size < 0 {
			return
		}
		if e := rangeEnd(h, size); e < 0 || e > size {
			t.Fatalf("rangeEnd(%q, %d) = %d", h, size, e)
		}
	})
}
