package rs

import (
	"errors"
	"testing"
)

func TestParseHashes(t *testing.T) {
	tests := []struct {
		in      string
		want    string // normalised output
		wantErr bool
	}{
		{"md5:1584abdf8ebdc9802ac0c6a7402c03b6", "md5:1584abdf8ebdc9802ac0c6a7402c03b6", false},
		{"md5:1584ABDF8EBDC9802AC0C6A7402C03B6", "md5:1584abdf8ebdc9802ac0c6a7402c03b6", false},
		{"md5:1e0d5cb8ef6ba40c99b14c0237be735e\n   sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784",
			"md5:1e0d5cb8ef6ba40c99b14c0237be735e sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784", false},
		{"sha-1:da39a3ee5e6b4b0d3255bfef95601890afd80709", "sha-1:da39a3ee5e6b4b0d3255bfef95601890afd80709", false},
		{"crc32:abcd", "crc32:abcd", false}, // other algorithms are kept as written
		{"", "", true},
		{"md5", "", true},
		{"md5:", "", true},
		{"md5:1584abdf", "", true},
		{"md5:Q2hlY2sgSW50ZWdyaXR5IQ==", "", true}, // base64 (RS-LEG-12)
		{"sha-256:f4OxZX_x_DFGFDgghgdfb6rtSx-iosjf6735432nklj", "", true},
		{"md5:1584abdf8ebdc9802ac0c6a7402c03b6 md5:1584abdf8ebdc9802ac0c6a7402c03b6", "", true},
		{"md5:xyz", "", true},
		{"   ", "", true},
		{"md5:1584abdf8ebdc9802ac0c6a7402c03b6,sha-1:da39a3ee5e6b4b0d3255bfef95601890afd80709", "", true}, // commas do not separate tokens
		{"crc32:abcd,md5:1584abdf8ebdc9802ac0c6a7402c03b6", "", true},
	}
	for _, tt := range tests {
		h, err := ParseHashes(tt.in)
		if tt.wantErr {
			if err == nil || !errors.Is(err, ErrHash) {
				t.Errorf("ParseHashes(%q) = %v, %v; want an ErrHash error", tt.in, h, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseHashes(%q): %v", tt.in, err)
			continue
		}
		if h.String() != tt.want {
			t.Errorf("ParseHashes(%q) = %q, want %q", tt.in, h.String(), tt.want)
		}
	}
}

func TestBase64ToHex(t *testing.T) {
	h, ok := Base64ToHex(MD5, "1B2M2Y8AsgTpgAmY7PhCfg==")
	if !ok || h != "d41d8cd98f00b204e9800998ecf8427e" {
		t.Errorf("Base64ToHex = %q, %v", h, ok)
	}
	if _, ok := Base64ToHex(MD5, "A7kjY2sgSW50ZWdyaX6sgt="); ok {
		t.Error("malformed base64 converted")
	}
	if _, ok := Base64ToHex("crc", "AAAA"); ok {
		t.Error("unknown algorithm converted")
	}
}

func FuzzParseHashes(f *testing.F) {
	for _, s := range []string{"md5:1584abdf8ebdc9802ac0c6a7402c03b6",
		"md5:1e0d5cb8ef6ba40c99b14c0237be735e sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784",
		"sha-256:f4OxZX_x_DFGFDgghgdfb6rtSx-iosjf6735432nklj", "md5:Q2hlY2sgSW50ZWdyaXR5IQ==", " : :: x",
		"md5:xyz", "md5:1584abdf8ebdc9802ac0c6a7402c03b6,sha-1:da39a3ee5e6b4b0d3255bfef95601890afd80709"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		split := SplitHashes(s)
		h, err := ParseHashes(s)
		if err != nil {
			if !errors.Is(err, ErrHash) {
				t.Fatalf("error %v does not match ErrHash", err)
			}
			return
		}
		if len(h) != len(split) {
			t.Fatalf("ParseHashes and SplitHashes disagree on %q", s)
		}
		again, err := ParseHashes(h.String())
		if err != nil || again.String() != h.String() {
			t.Fatalf("round trip of %q: %q, %v", s, again, err)
		}
	})
}
