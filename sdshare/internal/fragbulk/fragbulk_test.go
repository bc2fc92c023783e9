package fragbulk

import (
	"net/url"
	"strings"
	"testing"
)

func TestMember(t *testing.T) {
	const dir = "http://h.test/sd/c/"
	for _, tc := range []struct {
		href, want string
		ok         bool
	}{
		{dir + "fragment?resource=http%3A%2F%2Fx%2Fa&format=nt", "fragment?resource=http%3A%2F%2Fx%2Fa&format=nt", true},
		{dir + "fragment?resource=a#frag", "", false},
		{"http://other.test/sd/c/fragment?resource=a", "", false},
		{dir + "snapshot/1-abc", "", false},
		{dir + "fragment?resource=a b", "", false},
		{dir + "fragment?resource=a\x7f", "", false},
		{"http://h.test/sd/d/fragment?resource=a", "", false},
	} {
		got, ok := Member(dir, tc.href)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Member(%q) = %q, %v; want %q, %v", tc.href, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseMember(t *testing.T) {
	for _, tc := range []struct {
		p, res, format string
		ok             bool
	}{
		{"fragment?resource=" + url.QueryEscape("http://x/a b") + "&format=nt", "http://x/a b", "nt", true},
		{"fragment?resource=a", "a", "", true},
		{"fragment?format=nt", "", "", false},
		{"fragment?resource=", "", "", false},
		{"fragment?resource=a&resource=b", "", "", false},
		{"fragment?resource=a&format=nt&format=ttl", "", "", false},
		{"fragment?resource=%zz", "", "", false},
		{"snapshot?resource=a", "", "", false},
		{"", "", "", false},
	} {
		res, f, ok := ParseMember(tc.p)
		if res != tc.res || f != tc.format || ok != tc.ok {
			t.Errorf("ParseMember(%q) = %q, %q, %v", tc.p, res, f, ok)
		}
	}
}

// FuzzMember: whatever a feed links, a path Member accepts is one a
// request line holds, and ParseMember never panics.
func FuzzMember(f *testing.F) {
	f.Add("http://h.test/c/", "http://h.test/c/fragment?resource=a&format=nt")
	f.Add("http://h.test/c/", "http://h.test/c/fragment?resource=%zz")
	f.Fuzz(func(t *testing.T, dir, href string) {
		p, ok := Member(dir, href)
		if !ok {
			return
		}
		if !strings.HasPrefix(p, FragmentPrefix) || strings.ContainsAny(p, " \n\r\t#") {
			t.Fatalf("member %q", p)
		}
		ParseMember(p)
	})
}
