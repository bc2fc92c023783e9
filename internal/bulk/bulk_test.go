package bulk

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"a\nb/c%20d\n", []string{"a", "b/c%20d"}, false},
		{"a\r\n\nb", []string{"a", "b"}, false},
		{"", nil, false},
		{"a b\n", nil, true},
		{"a\x00\n", nil, true},
		{strings.Repeat("x\n", MaxPaths+1), nil, true},
		{strings.Repeat("x", MaxRequestBytes+1), nil, true},
	} {
		got, err := ParseRequest(strings.NewReader(tc.in))
		if (err != nil) != tc.err || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("ParseRequest(%.20q) = %q, %v", tc.in, got, err)
		}
	}
	var b bytes.Buffer
	if err := WriteRequest(&b, []string{"a", "b c"}); err == nil {
		t.Error("WriteRequest took a path with a space")
	}
}

// response builds a response body from (status, body, path) triples.
func response(members ...[3]string) string {
	var b []byte
	for _, m := range members {
		st := 200
		if m[0] != "" {
			st = map[string]int{"404": 404, "413": 413}[m[0]]
		}
		b = AppendHeader(b, st, len(m[1]), m[2])
		b = append(b, m[1]...)
	}
	return string(b)
}

func TestReader(t *testing.T) {
	ok := response([3]string{"", "hello", "a"}, [3]string{"404", "", "b"}, [3]string{"", "xy", "c"}) + End
	for _, tc := range []struct {
		name string
		body string
		want []int64 // expected lengths, per path a, b, c
		got  string  // members read, "a=hello b=404 ..."
		err  error   // the error that ends the reading (nil: io.EOF)
	}{
		{"ok", ok, []int64{5, 3, 2}, "a=hello b=404 c=xy", nil},
		{"not asked", response([3]string{"", "hello", "a"}, [3]string{"", "zz", "../etc/passwd"}), []int64{5, 2, 2}, "a=hello", ErrProtocol},
		{"out of order", response([3]string{"", "xy", "c"}), []int64{5, 3, 2}, "", ErrProtocol},
		{"longer than listed", response([3]string{"", "hello!", "a"}), []int64{5, 3, 2}, "", ErrProtocol},
		{"huge", "200 99999999999 a\n", []int64{99999999999, 3, 2}, "", ErrProtocol},
		{"truncated member", "200 5 a\nhel", []int64{5, 3, 2}, "a=hel", io.ErrUnexpectedEOF},
		{"truncated before end", response([3]string{"", "hello", "a"}, [3]string{"404", "", "b"}, [3]string{"", "xy", "c"}), []int64{5, 3, 2}, "a=hello b=404 c=xy", io.ErrUnexpectedEOF},
		{"garbage after", response([3]string{"", "hello", "a"}, [3]string{"404", "", "b"}, [3]string{"", "xy", "c"}) + "200 1 d\nx", []int64{5, 3, 2}, "a=hello b=404 c=xy", ErrProtocol},
		{"404 with bytes", "404 3 a\nabc", []int64{5, 3, 2}, "", ErrProtocol},
		{"bad header", "2000 5 a\nhello", []int64{5, 3, 2}, "", ErrProtocol},
		{"long line", strings.Repeat("x", 20000), []int64{5, 3, 2}, "", ErrProtocol},
		// want < 0: any length up to MaxMember (an SDShare fragment).
		{"any length", ok, []int64{-1, -1, -1}, "a=hello b=404 c=xy", nil},
		{"any length, huge", "200 65537 a\n", []int64{-1, -1, -1}, "", ErrProtocol},
		{"any length, not asked", response([3]string{"", "zz", "b"}), []int64{-1, -1, -1}, "", ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tc.body), []string{"a", "b", "c"})
			var got []string
			var err error
			for i := 0; ; i++ {
				var want int64
				if i < len(tc.want) {
					want = tc.want[i]
				}
				var m Member
				if m, err = r.Next(want); err != nil {
					break
				}
				if m.Status != 200 {
					got = append(got, m.Path+"="+map[int]string{404: "404"}[m.Status])
					continue
				}
				b, _ := io.ReadAll(m.Body)
				got = append(got, m.Path+"="+string(b))
			}
			if strings.Join(got, " ") != tc.got {
				t.Errorf("members %q, want %q", strings.Join(got, " "), tc.got)
			}
			want := tc.err
			if want == nil {
				want = io.EOF
			}
			if !errors.Is(err, want) {
				t.Errorf("error %v, want %v", err, want)
			}
		})
	}
}

// TestReaderSkipsUnread: a member left unread is skipped by the next call.
func TestReaderSkipsUnread(t *testing.T) {
	body := response([3]string{"", "hello", "a"}, [3]string{"", "xy", "b"}) + End
	r := NewReader(strings.NewReader(body), []string{"a", "b"})
	if _, err := r.Next(5); err != nil {
		t.Fatal(err)
	}
	m, err := r.Next(2)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(m.Body); string(b) != "xy" {
		t.Fatalf("second member %q", b)
	}
	if _, err := r.Next(0); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add(response([3]string{"", "hello", "a"}, [3]string{"404", "", "b"}) + End)
	f.Add("200 5 a\nhel")
	f.Add("end\n")
	f.Fuzz(func(t *testing.T, body string) {
		r := NewReader(strings.NewReader(body), []string{"a", "b"})
		var total int64
		for range 3 {
			m, err := r.Next(5)
			if err != nil {
				break
			}
			if m.Path != "a" && m.Path != "b" {
				t.Fatalf("member %q not asked for", m.Path)
			}
			if m.Body != nil {
				n, _ := io.Copy(io.Discard, m.Body)
				if n > 5 {
					t.Fatalf("member of %d bytes, 5 expected", n)
				}
				total += n
			}
		}
		if total > int64(len(body)) {
			t.Fatal("more bytes than the body")
		}
	})
}

func FuzzParseRequest(f *testing.F) {
	f.Add("a\nb/c\n")
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParseRequest(strings.NewReader(s))
		if err != nil {
			return
		}
		if len(ps) > MaxPaths {
			t.Fatal("too many paths")
		}
		for _, p := range ps {
			if !validPath(p) {
				t.Fatalf("path %q", p)
			}
		}
	})
}
