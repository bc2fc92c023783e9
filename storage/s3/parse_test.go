package s3

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/storage"
)

func TestParseLocation(t *testing.T) {
	for _, tc := range []struct {
		loc                              string
		bucket, prefix, endpoint, region string
		err                              string
	}{
		{loc: "s3://bkt", bucket: "bkt"},
		{loc: "s3://bkt/", bucket: "bkt"},
		{loc: "S3://bkt/a/b/", bucket: "bkt", prefix: "a/b/"},
		{loc: "s3://bkt/100%/x y", bucket: "bkt", prefix: "100%/x y/"},
		{loc: "s3://bkt/p?endpoint=http://127.0.0.1:9000&region=eu-west-1", bucket: "bkt", prefix: "p/", endpoint: "http://127.0.0.1:9000", region: "eu-west-1"},
		{loc: "s3://bkt/p?endpoint=ftp://h", err: "not an http(s) URL"},
		{loc: "s3://bkt/p?token=x", err: "unknown option"},
		{loc: "s3://bkt/a//b", err: "empty"},
		{loc: "s3://bkt/a/../b", err: `".."`},
		{loc: "s3:///p", err: "bucket name"},
		{loc: "s3://user:pw@bkt/p", err: "bucket name"},
		{loc: "/local/dir", err: "want s3://"},
	} {
		l, err := parseLocation(tc.loc)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.loc, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "pw@") {
				t.Errorf("%q: the error holds the password: %v", tc.loc, err)
			}
			continue
		}
		if err != nil || l.bucket != tc.bucket || l.prefix != tc.prefix || l.endpoint != tc.endpoint || l.region != tc.region {
			t.Errorf("%q: %+v %v", tc.loc, l, err)
		}
	}
}

// FuzzParseLocation: any location either fails or gives a bucket and a
// prefix that is "" or a valid key plus "/".
func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"s3://bkt/a/b", "s3://b/p?endpoint=http://h:1&region=r", "s3://b/./x", "s3://b?x", "s3://"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, loc string) {
		l, err := parseLocation(loc)
		if err != nil {
			return
		}
		if l.bucket == "" || strings.ContainsAny(l.bucket, "/?") {
			t.Fatalf("%q: bucket %q", loc, l.bucket)
		}
		if l.prefix != "" && (!strings.HasSuffix(l.prefix, "/") || strings.HasPrefix(l.prefix, "/") || strings.Contains(l.prefix, "//")) {
			t.Fatalf("%q: prefix %q", loc, l.prefix)
		}
	})
}

func TestMtime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"1600000000.123456789", time.Unix(1600000000, 123456789), true},
		{"1600000000", time.Unix(1600000000, 0), true},
		{"1600000000.5", time.Unix(1600000000, 500000000), true},
		{"1600000000.1234567891", time.Unix(1600000000, 123456789), true}, // past nanoseconds: cut
		{"-1.5", time.Unix(-1, -500000000), true},
		{"", time.Time{}, false},
		{"abc", time.Time{}, false},
		{"1.", time.Time{}, false},
		{"1.x", time.Time{}, false},
		{"2020-01-01T00:00:00Z", time.Time{}, false},
	} {
		got, ok := parseMtime(tc.in)
		if ok != tc.ok || ok && !got.Equal(tc.want) {
			t.Errorf("parseMtime(%q) = %v %v, want %v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	tm := time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC)
	if got, ok := parseMtime(formatMtime(tm)); !ok || !got.Equal(tm) {
		t.Errorf("round trip: %v", got)
	}
}

// FuzzParseMtime: what parseMtime accepts, formatMtime writes back to the
// same instant.
func FuzzParseMtime(f *testing.F) {
	for _, s := range []string{"1600000000.123456789", "0", "-5.1", "1e9", "99999999999.999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, ok := parseMtime(s)
		if !ok {
			return
		}
		back, ok := parseMtime(formatMtime(tm))
		if !ok || !back.Equal(tm) {
			t.Fatalf("%q -> %v -> %q -> %v", s, tm, formatMtime(tm), back)
		}
	})
}

// TestPartSize: a known size beyond 10,000 parts gets parts large enough
// (whole MiB); others keep the configured size.
func TestPartSize(t *testing.T) {
	tg := &Target{b: &bucket{partSize: DefaultPartSize}}
	for _, size := range []int64{-1, 0, 1, DefaultPartSize * maxParts, DefaultPartSize*maxParts + 1, 5 << 40} {
		w, err := tg.Create(context.Background(), "k", storage.PutOptions{Size: size})
		if err != nil {
			t.Fatal(err)
		}
		ps := w.(*writer).partSize
		if ps < DefaultPartSize || ps%(1<<20) != 0 || size > 0 && (size+ps-1)/ps > maxParts {
			t.Errorf("size %d: part size %d", size, ps)
		}
		if size <= DefaultPartSize*maxParts && ps != DefaultPartSize {
			t.Errorf("size %d: part size %d, want the default", size, ps)
		}
	}
}

// TestParseLocationNoSecret: an endpoint whose password holds an
// unescaped "/" (an AWS secret key pasted as it is) is refused without
// showing any piece of it.
func TestParseLocationNoSecret(t *testing.T) {
	for _, loc := range []string{
		"s3://bkt/p?endpoint=http://u:wJalrXUtnFEMI/K7MDENGbPxRfiCY@127.0.0.1:1",
		"s3://bkt/p?endpoint=ftp://u:wJalrXUtnFEMI/K7MDENGbPxRfiCY@127.0.0.1:1",
		"s3://AKIAX:wJalrXUtnFEMI/K7MDENGbPxRfiCY@bkt/p",
	} {
		_, err := parseLocation(loc)
		if err == nil {
			t.Errorf("%s: no error", loc)
			continue
		}
		for _, piece := range []string{"wJalrXUtnFEMI", "K7MDENG"} {
			if strings.Contains(err.Error(), piece) {
				t.Errorf("%s: the error shows the password: %v", loc, err)
			}
		}
	}
}

// TestMtimeOutOfRange: an "mtime" any writer of the bucket may set is
// refused (the object's LastModified stands) when its year has not four
// digits: a resource list writes a W3C datetime, YYYY, and a year 33658
// or -1 would be published as a wrong or broken lastmod.
func TestMtimeOutOfRange(t *testing.T) {
	for _, in := range []string{"999999999999", "-99999999999", "253402300800" /* 10000-01-01 */, "-62135596801" /* year 0 */} {
		if got, ok := parseMtime(in); ok {
			t.Errorf("parseMtime(%q) = %v, want refused", in, got)
		}
	}
	for _, in := range []string{"253402300799" /* 9999-12-31T23:59:59 */, "-62135596800" /* 0001-01-01 */} {
		if _, ok := parseMtime(in); !ok {
			t.Errorf("parseMtime(%q) refused", in)
		}
	}
}
