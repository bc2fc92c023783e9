package extsort

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

type record struct{ g, k, p string }

// model is the order Sorter promises, computed in memory: by group, then
// rank, then the order added; with dedupe the first of each group.
func model(in []record, dedupe bool) []record {
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(a, b record) int {
		return cmp.Or(cmp.Compare(a.g, b.g), cmp.Compare(a.k, b.k))
	})
	if dedupe {
		out = slices.CompactFunc(out, func(a, b record) bool { return a.g == b.g })
	}
	return out
}

func sorted(t testing.TB, s *Sorter) []record {
	t.Helper()
	var got []record
	if err := s.Each(func(g, k, p []byte) error {
		got = append(got, record{string(g), string(k), string(p)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestSorter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name         string
		n, groups    int
		limit, fanIn int
		dedupe       bool
	}{
		{"empty", 0, 1, 0, 0, true},
		{"in memory", 100, 30, 0, 0, true},
		{"in memory, all kept", 100, 30, 0, 0, false},
		{"runs of a few records, fan-in 2", 500, 60, 200, 2, true},
		{"runs of a few records, fan-in 3, all kept", 500, 60, 200, 3, false},
		{"many runs, fan-in 4", 5000, 700, 1000, 4, true},
		{"one record per run", 40, 5, 1, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := &Sorter{Dir: dir, Pattern: "run-*", Dedupe: tc.dedupe, Limit: tc.limit, FanIn: tc.fanIn}
			var in []record
			for i := range tc.n {
				r := record{fmt.Sprintf("g%d", rng.IntN(tc.groups)), fmt.Sprintf("%02d", rng.IntN(20)), fmt.Sprintf("p%d", i)}
				in = append(in, r)
				if err := s.Add([]byte(r.g), []byte(r.k), []byte(r.p)); err != nil {
					t.Fatal(err)
				}
			}
			want := model(in, tc.dedupe)
			for pass := range 2 { // Each may be called again
				if got := sorted(t, s); !slices.Equal(got, want) {
					t.Fatalf("pass %d: got %d records, want %d\n%v\n%v", pass, len(got), len(want), got, want)
				}
			}
			if tc.fanIn > 0 {
				files, _ := os.ReadDir(dir)
				if len(files) > tc.fanIn*4 {
					t.Errorf("%d run files open at once, fan-in %d", len(files), tc.fanIn)
				}
			}
			// Records added after Each join the next.
			if err := s.Add([]byte("a-late"), nil, []byte("x")); err != nil {
				t.Fatal(err)
			}
			want = model(append(in, record{"a-late", "", "x"}), tc.dedupe)
			if got := sorted(t, s); !slices.Equal(got, want) {
				t.Fatalf("after a late add: %v", got)
			}
			s.Close()
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("files left after Close: %v", left)
			}
		})
	}
}

// TestSorterDamaged: a run file cut short or overwritten is an error
// matching ErrCorrupt, never a panic or a silent loss.
func TestSorterDamaged(t *testing.T) {
	for _, damage := range []func([]byte) []byte{
		func(b []byte) []byte { return b[:len(b)-3] },
		func(b []byte) []byte { return append(b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01) },
		func(b []byte) []byte { return append(b, 0x05) },
	} {
		dir := t.TempDir()
		s := &Sorter{Dir: dir, Pattern: "run-*", Limit: 1}
		for i := range 3 {
			s.Add([]byte{byte('a' + i)}, nil, []byte("payload"))
		}
		if err := s.spill(); err != nil {
			t.Fatal(err)
		}
		p := s.runs[0].path
		b, _ := os.ReadFile(p)
		os.WriteFile(p, damage(b), 0o600)
		err := s.Each(func(g, k, p []byte) error { return nil })
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte("damaged")) {
			t.Fatalf("damaged run: %v", err)
		}
		s.Close()
	}
}

// FuzzSorter: whatever the records (empty, binary, equal), the order is
// the model's, through runs of one record and a fan-in of 2.
func FuzzSorter(f *testing.F) {
	f.Add([]byte("b\x00a\x00a\x01b\x00"), true)
	f.Add([]byte(""), false)
	f.Add([]byte("\x00\x00\x00"), true)
	f.Fuzz(func(t *testing.T, data []byte, dedupe bool) {
		if len(data) > 4096 {
			return
		}
		s := &Sorter{Dir: t.TempDir(), Pattern: "run-*", Dedupe: dedupe, Limit: 64, FanIn: 2}
		defer s.Close()
		var in []record
		for i, part := range bytes.Split(data, []byte{0}) {
			g, k := part, []byte(nil)
			if len(part) > 1 {
				g, k = part[:len(part)/2], part[len(part)/2:]
			}
			r := record{string(g), string(k), fmt.Sprint(i)}
			in = append(in, r)
			if err := s.Add(g, k, []byte(r.p)); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := sorted(t, s), model(in, dedupe); !slices.Equal(got, want) {
			t.Fatalf("got %q\nwant %q", got, want)
		}
	})
}

// TestSorterHugeLength: a damaged length is not allocated.
func TestSorterHugeLength(t *testing.T) {
	s := &Sorter{Dir: t.TempDir(), Pattern: "run-*"}
	defer s.Close()
	s.Add([]byte("a"), nil, []byte("x"))
	if err := s.spill(); err != nil {
		t.Fatal(err)
	}
	// Lengths of 2^40 bytes in a file of a few.
	os.WriteFile(s.runs[0].path, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0, 0, 'a'}, 0o600)
	if err := s.Each(func(g, k, p []byte) error { return nil }); err == nil || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("huge length: %v", err)
	}
}
