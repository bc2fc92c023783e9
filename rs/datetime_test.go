package rs

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	utc := time.UTC
	tests := []struct {
		in   string
		want time.Time
		prec Precision
		out  string // formatted back; "" means same as in
	}{
		{"2013", time.Date(2013, 1, 1, 0, 0, 0, 0, utc), PrecYear, ""},
		{"2013-02", time.Date(2013, 2, 1, 0, 0, 0, 0, utc), PrecMonth, ""},
		{"2013-02-28", time.Date(2013, 2, 28, 0, 0, 0, 0, utc), PrecDay, ""},
		{"2013-01-03T09:00Z", time.Date(2013, 1, 3, 9, 0, 0, 0, utc), PrecMinute, ""},
		{"2013-01-03T09:00:00Z", time.Date(2013, 1, 3, 9, 0, 0, 0, utc), PrecSecond, ""},
		{"2013-01-03T09:00:00.5Z", time.Date(2013, 1, 3, 9, 0, 0, 5e8, utc), PrecFrac1, ""},
		{"2013-01-03T09:00:00.123456789Z", time.Date(2013, 1, 3, 9, 0, 0, 123456789, utc), PrecFrac1 + 8, ""},
		{"2013-01-03T09:00:00.1234567891234Z", time.Date(2013, 1, 3, 9, 0, 0, 123456789, utc), PrecFrac1 + 8, "2013-01-03T09:00:00.123456789Z"},
		{"2013-01-03T09:00:00.100Z", time.Date(2013, 1, 3, 9, 0, 0, 1e8, utc), PrecFrac1 + 2, ""},
		// The offset is applied with the right sign (RS-DT-4: the reference library gets it wrong).
		{"2012-01-01T02:00:00-02:00", time.Date(2012, 1, 1, 4, 0, 0, 0, utc), PrecSecond, ""},
		{"2012-01-01T02:00:00+05:30", time.Date(2011, 12, 31, 20, 30, 0, 0, utc), PrecSecond, ""},
		{"2012-01-01T02:00:00+00:00", time.Date(2012, 1, 1, 2, 0, 0, 0, utc), PrecSecond, "2012-01-01T02:00:00Z"},
		{"2012-02-29T00:00:00Z", time.Date(2012, 2, 29, 0, 0, 0, 0, utc), PrecSecond, ""},
	}
	for _, tt := range tests {
		got, err := ParseTime(tt.in)
		if err != nil {
			t.Errorf("ParseTime(%q): %v", tt.in, err)
			continue
		}
		if !got.Time().Equal(tt.want) || got.Precision() != tt.prec {
			t.Errorf("ParseTime(%q) = %v prec %d, want %v prec %d", tt.in, got.Time(), got.Precision(), tt.want, tt.prec)
		}
		out := tt.out
		if out == "" {
			out = tt.in
		}
		if s := got.String(); s != out {
			t.Errorf("ParseTime(%q).String() = %q, want %q", tt.in, s, out)
		}
		again, err := ParseTime(got.String())
		if err != nil || !again.Same(got) {
			t.Errorf("round trip of %q: %v %v", tt.in, again, err)
		}
	}
}

func TestParseTimeErrors(t *testing.T) {
	tests := []struct {
		in     string
		noZone bool
	}{
		{"", false},
		{"13", false},
		{"2013-1-03", false},
		{"2013-01-03T09:00:00", true}, // RS-DT-2: time without zone
		{"2013-01-03T09:00", true},
		{"2013-01-03T09:00:00.Z", false},
		{"2013-01-03 09:00:00Z", false},
		{"2013-13-01", false},
		{"2013-02-29", false},
		{"2013-01-03T24:00:00Z", false},
		{"2013-01-03T09:00:00+2:00", false},
		{"2013-01-03T09:00:00+02", false},
		{"2013-01-03T09:00:00Zjunk", false},
		{"2013-01-03T09:00:00z", false},
		{"+2013-01-03", false},
	}
	for _, tt := range tests {
		_, err := ParseTime(tt.in)
		if err == nil {
			t.Errorf("ParseTime(%q) succeeded, want error", tt.in)
			continue
		}
		if !errors.Is(err, ErrDateTime) {
			t.Errorf("ParseTime(%q) error %v does not match ErrDateTime", tt.in, err)
		}
		if got := errors.Is(err, ErrNoTimeZone); got != tt.noZone {
			t.Errorf("ParseTime(%q): errors.Is(ErrNoTimeZone) = %v, want %v (%v)", tt.in, got, tt.noZone, err)
		}
	}
}

func TestNewTimePrecision(t *testing.T) {
	tm := time.Date(2024, 5, 1, 10, 0, 0, 120000000, time.UTC)
	if s := NewTime(tm).String(); s != "2024-05-01T10:00:00.12Z" {
		t.Errorf("NewTime = %s", s)
	}
	if s := NewTime(tm.Truncate(time.Second)).String(); s != "2024-05-01T10:00:00Z" {
		t.Errorf("NewTime = %s", s)
	}
	var z Time
	if !z.IsZero() || z.String() != "" {
		t.Errorf("zero Time = %q", z.String())
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2013", "2013-01", "2013-01-03", "2013-01-03T09:00Z", "2013-01-03T09:00:00Z",
		"2013-01-03T09:00:00.123+05:30", "2012-01-01T02:00:00-02:00", "2013-01-03T09:00:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := ParseTime(s)
		if err != nil {
			if !errors.Is(err, ErrDateTime) {
				t.Fatalf("error %v does not match ErrDateTime", err)
			}
			return
		}
		out := tm.String()
		again, err := ParseTime(out)
		if err != nil {
			t.Fatalf("ParseTime(%q) ok, but its output %q does not parse: %v", s, out, err)
		}
		if !again.Same(tm) {
			t.Fatalf("round trip %q -> %q changed the value", s, out)
		}
		text, err := tm.MarshalText()
		if err != nil {
			t.Fatalf("MarshalText(%q): %v", s, err)
		}
		var back Time
		if err := back.UnmarshalText(text); err != nil || !back.Same(tm) {
			t.Fatalf("text round trip %q -> %q -> %v, %v", s, text, back, err)
		}
	})
}

func TestTimeJSON(t *testing.T) {
	type doc struct{ A, B Time }
	tm, err := ParseTime("2013-01-03T09:00:00.120+05:30")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(doc{A: tm})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"A":"2013-01-03T09:00:00.120+05:30","B":""}`; string(b) != want {
		t.Fatalf("json = %s, want %s", b, want)
	}
	var got doc
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !got.A.Same(tm) || !got.B.IsZero() {
		t.Fatalf("round trip: %v %v", got.A, got.B)
	}
	if err := json.Unmarshal([]byte(`{"A":"2013-13"}`), &got); !errors.Is(err, ErrDateTime) {
		t.Fatalf("bad month: %v", err)
	}
	if _, err := NewTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)).MarshalText(); err == nil {
		t.Fatal("year 10000 marshalled")
	}
}
