package units

import "testing"

func TestBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {10188, "9.9 KiB"}, {10189, "10 KiB"},
		{1048000, "1023 KiB"}, {1048570, "1.0 MiB"}, {50 << 20, "50 MiB"}, {4_100_000, "3.9 MiB"},
		{1 << 30, "1.0 GiB"}, {1 << 40, "1.0 TiB"}, {1<<62 + 1<<61, "6.0 EiB"},
	} {
		if got := Bytes(tc.n); got != tc.want {
			t.Errorf("Bytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := Rate(1.5 * (1 << 20)); got != "1.5 MiB/s" {
		t.Errorf("Rate = %q", got)
	}
}
