package subscriber

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

// tm returns minute m of a fixed hour as an rs.Time.
func tm(m int) rs.Time {
	return rs.NewTime(time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC).Add(time.Duration(m) * time.Minute))
}

// render writes steps as "kind[from-until]" with minutes, values in ().
func render(steps []Step[string]) string {
	var parts []string
	base := tm(0).Time()
	min := func(t rs.Time) int { return int(t.Time().Sub(base) / time.Minute) }
	for _, s := range steps {
		p := fmt.Sprintf("%s[%d-%d]", s.Kind, min(s.From), min(s.Until))
		if s.Value != "" {
			p += "(" + s.Value + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

func TestSequencer(t *testing.T) {
	type add struct {
		from, until int
		v           string
		at          time.Duration // since the start
		flush       bool          // call Flush at `at` instead of Add
	}
	for _, tc := range []struct {
		name  string
		start int // Reset position in minutes; -1: none
		adds  []add
		want  []string // one line per add
		pos   int
		held  int
	}{
		{
			name: "contiguous", start: -1,
			adds: []add{{0, 1, "a", 0, false}, {1, 2, "b", 0, false}, {2, 5, "c", 0, false}},
			want: []string{"apply[0-1](a)", "apply[1-2](b)", "apply[2-5](c)"},
			pos:  5,
		},
		{
			name: "after reset: contiguous with the catch-up", start: 10,
			adds: []add{{10, 11, "a", 0, false}},
			want: []string{"apply[10-11](a)"},
			pos:  11,
		},
		{
			name: "duplicate and covered ones are ignored", start: 0,
			adds: []add{{0, 2, "a", 0, false}, {0, 2, "a'", 0, false}, {1, 2, "x", 0, false}, {0, 1, "y", 0, false}},
			want: []string{"apply[0-2](a)", "duplicate[0-2](a')", "duplicate[1-2](x)", "duplicate[0-1](y)"},
			pos:  2,
		},
		{
			name: "overlap extending the position is applied", start: 0,
			adds: []add{{0, 2, "a", 0, false}, {1, 3, "b", 0, false}},
			want: []string{"apply[0-2](a)", "apply-overlap[1-3](b)"},
			pos:  3,
		},
		{
			name: "out of order: held, then reordered", start: 0,
			adds: []add{{0, 1, "a", 0, false}, {2, 3, "c", 0, false}, {3, 4, "d", 0, false}, {1, 2, "b", time.Second, false}},
			want: []string{"apply[0-1](a)", "held[2-3](c)", "held[3-4](d)", "apply[1-2](b) apply[2-3](c) apply[3-4](d)"},
			pos:  4,
		},
		{
			name: "held ones arriving in reverse", start: 0,
			adds: []add{{3, 4, "d", 0, false}, {2, 3, "c", 0, false}, {1, 2, "b", 0, false}, {0, 1, "a", 0, false}},
			want: []string{"held[3-4](d)", "held[2-3](c)", "held[1-2](b)", "apply[0-1](a) apply[1-2](b) apply[2-3](c) apply[3-4](d)"},
			pos:  4,
		},
		{
			name: "gap after waiting", start: 0,
			adds: []add{{0, 1, "a", 0, false}, {2, 3, "c", 0, false}, {0, 0, "", 10 * time.Second, true}, {0, 0, "", 31 * time.Second, true}, {3, 4, "d", 32 * time.Second, false}},
			want: []string{"apply[0-1](a)", "held[2-3](c)", "", "gap[1-2] apply[2-3](c)", "apply[3-4](d)"},
			pos:  4,
		},
		{
			name: "gap detected on a later Add", start: 0,
			adds: []add{{0, 1, "a", 0, false}, {5, 6, "f", 0, false}, {6, 7, "g", 40 * time.Second, false}},
			want: []string{"apply[0-1](a)", "held[5-6](f)", "held[6-7](g) gap[1-5] apply[5-6](f) apply[6-7](g)"},
			pos:  7,
		},
		{
			name: "the missing one arrives after the gap was declared", start: 0,
			adds: []add{{0, 1, "a", 0, false}, {2, 3, "c", 0, false}, {0, 0, "", time.Minute, true}, {1, 2, "b", time.Minute, false}},
			want: []string{"apply[0-1](a)", "held[2-3](c)", "gap[1-2] apply[2-3](c)", "duplicate[1-2](b)"},
			pos:  3,
		},
		{
			name: "too many held", start: 0,
			adds: []add{{0, 1, "a", 0, false}, {2, 3, "c", 0, false}, {4, 5, "e", 0, false}, {6, 7, "g", 0, false}, {8, 9, "i", 0, false}},
			want: []string{"apply[0-1](a)", "held[2-3](c)", "held[4-5](e)", "held[6-7](g)", "held[8-9](i) gap[1-2] apply[2-3](c)"},
			pos:  3, held: 3,
		},
		{
			name: "held duplicate released as duplicate", start: 0,
			adds: []add{{0, 1, "a", 0, false}, {2, 3, "c", 0, false}, {2, 3, "c'", 0, false}, {1, 2, "b", 0, false}},
			want: []string{"apply[0-1](a)", "held[2-3](c)", "held[2-3](c')", "apply[1-2](b) apply[2-3](c) duplicate[2-3](c')"},
			pos:  3,
		},
		{
			name: "same instant in another offset is contiguous", start: 0,
			adds: []add{{0, 1, "a", 0, false}, {-1, 2, "b", 0, false}},
			want: []string{"apply[0-1](a)", "apply[1-2](b)"},
			pos:  2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Sequencer[string]{Wait: 30 * time.Second, MaxHeld: 3}
			if tc.start >= 0 {
				s.Reset(tm(tc.start))
			}
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for i, a := range tc.adds {
				var steps []Step[string]
				if a.flush {
					steps = s.Flush(t0.Add(a.at))
				} else {
					from := tm(a.from)
					if a.from == -1 { // minute 1 written at +02:00
						from = rs.NewTime(tm(1).Time().In(time.FixedZone("", 2*3600)))
					}
					steps = s.Add(from, tm(a.until), a.v, t0.Add(a.at))
				}
				if got := render(steps); got != tc.want[i] {
					t.Errorf("step %d: got %q, want %q", i, got, tc.want[i])
				}
			}
			if !s.Position().Equal(tm(tc.pos)) {
				t.Errorf("position %s, want minute %d", s.Position(), tc.pos)
			}
			if s.Held() != tc.held {
				t.Errorf("held %d, want %d", s.Held(), tc.held)
			}
		})
	}
}

func TestSequencerFlushAll(t *testing.T) {
	s := &Sequencer[string]{}
	s.Reset(tm(0))
	s.Add(tm(2), tm(3), "c", time.Time{})
	s.Add(tm(5), tm(6), "f", time.Time{})
	got := render(s.FlushAll())
	if want := "gap[0-2] apply[2-3](c) gap[3-5] apply[5-6](f)"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	if s.Held() != 0 || !s.Position().Equal(tm(6)) {
		t.Fatal("not flushed")
	}
}
