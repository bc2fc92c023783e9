package oai

import (
	"testing"
	"time"
)

func TestDatestamps(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
		g    Granularity
		bad  bool
	}{
		{"2024-03-01", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), Day, false},
		{"2024-03-01T10:11:12Z", time.Date(2024, 3, 1, 10, 11, 12, 0, time.UTC), Second, false},
		{" 2024-03-01T10:11:12Z\n", time.Date(2024, 3, 1, 10, 11, 12, 0, time.UTC), Second, false},
		{"2024-03-01T10:11:12+01:00", time.Time{}, Day, true},
		{"2024-3-1", time.Time{}, Day, true},
		{"", time.Time{}, Day, true},
	} {
		got, g, err := ParseDatestamp(tc.in)
		if (err != nil) != tc.bad || !got.Equal(tc.want) || g != tc.g {
			t.Errorf("ParseDatestamp(%q) = %v, %v, %v", tc.in, got, g, err)
		}
		if err == nil {
			if s := g.Format(got); s != tc.want.Format(map[Granularity]string{Day: dayLayout, Second: secondLayout}[g]) {
				t.Errorf("Format round trip of %q: %q", tc.in, s)
			}
		}
	}
	if Day.Format(time.Date(2024, 3, 1, 23, 59, 59, 0, time.FixedZone("x", -3600))) != "2024-03-02" {
		t.Error("Format does not convert to UTC")
	}
	for _, s := range []string{"YYYY-MM-DD", "YYYY-MM-DDThh:mm:ssZ"} {
		g, err := ParseGranularity(s)
		if err != nil || g.String() != s {
			t.Errorf("granularity %q: %v %v", s, g, err)
		}
	}
	if _, err := ParseGranularity("YYYY"); err == nil {
		t.Error("bad granularity accepted")
	}
}
