package harvest

import (
	"runtime"
	"strings"
	"testing"
)

func TestRecordPath(t *testing.T) {
	colon := ":"
	if runtime.GOOS == "windows" {
		colon = "%3A"
	}
	for _, tc := range []struct{ id, prefix, want string }{
		{"oai:arXiv.org:1234.5678", "oai_dc", "oai_dc/HH/oai" + colon + "arXiv.org" + colon + "1234.5678.xml"},
		{"a/b\\c", "marc", "marc/HH/a%2Fb%5Cc.xml"},
		{".hidden", "oai_dc", "oai_dc/HH/%2Ehidden.xml"},
		{"x.y", "oai_dc", "oai_dc/HH/x.y.xml"},
		{"100%<>\"|?*", "p", "p/HH/100%25%3C%3E%22%7C%3F%2A.xml"},
		{"tab\there\x7f\n", "p", "p/HH/tab%09here%7F%0A.xml"},
		{"ünï cödé", "p", "p/HH/ünï cödé.xml"},
		{"..", "p", "p/HH/%2E..xml"},
	} {
		got := RecordPath(tc.id, tc.prefix)
		want := strings.Replace(tc.want, "HH", bucket(tc.id), 1)
		if got != want {
			t.Errorf("RecordPath(%q, %q) = %q, want %q", tc.id, tc.prefix, got, want)
		}
		id, p, ok := ParseRecordPath(got)
		if !ok || id != tc.id || p != tc.prefix {
			t.Errorf("ParseRecordPath(%q) = %q, %q, %v", got, id, p, ok)
		}
	}
	if len(bucket("x")) != 2 {
		t.Error("bucket is not one byte in hex")
	}
	for _, rel := range []string{
		"", "oai_dc", "oai_dc/00/x.xml", // wrong bucket
		"oai_dc/" + bucket("x") + "/x.txt",
		"oai_dc/" + bucket("x") + "/sub/x.xml",
		"oai_dc/" + bucket("") + "/.xml",
		"oai_dc/" + bucket("a%") + "/a%.xml",       // bad escape
		"oai_dc/" + bucket("a/b") + "/a%2fb.xml",   // not the spelling RecordPath makes
		"oai_dc/" + bucket(".x") + "/.x.xml",       // hidden (a temporary file)
		"oai_dc/" + bucket("x") + "/.tmp-0123.xml", // hidden
	} {
		if id, p, ok := ParseRecordPath(rel); ok {
			t.Errorf("ParseRecordPath(%q) = %q, %q, true", rel, id, p)
		}
	}
}

func FuzzRecordPath(f *testing.F) {
	for _, s := range []string{"oai:x:1", "a/b", ".x", "%41", "\x00\xff", "x.xml"} {
		f.Add(s, "oai_dc")
	}
	f.Fuzz(func(t *testing.T, id, prefix string) {
		if id == "" || prefix == "" {
			return
		}
		rel := RecordPath(id, prefix)
		parts := strings.Split(rel, "/")
		if len(parts) != 3 || strings.HasPrefix(parts[2], ".") || strings.HasPrefix(parts[0], ".") || strings.ContainsAny(parts[2], "\\<>\"|?*\x00") {
			t.Fatalf("RecordPath(%q, %q) = %q", id, prefix, rel)
		}
		gid, gp, ok := ParseRecordPath(rel)
		if !ok || gid != id || gp != prefix {
			t.Fatalf("ParseRecordPath(RecordPath(%q, %q) = %q) = %q, %q, %v", id, prefix, rel, gid, gp, ok)
		}
	})
}
