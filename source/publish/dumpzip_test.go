package publish

import (
	"archive/zip"
	"bytes"
	"hash/crc32"
	"strings"
	"testing"
	"time"
)

// TestZipLayoutMatchesWriter: the on-demand layout is byte for byte what
// archive/zip writes for the same members.
func TestZipLayoutMatchesWriter(t *testing.T) {
	mod := time.Date(2024, 3, 5, 7, 9, 11, 0, time.UTC)
	files := []struct {
		name string
		data string
		mod  time.Time
	}{
		{"manifest.xml", "<urlset/>", mod},
		{"resources/a.txt", "hello", mod.Add(time.Hour)},
		{"resources/empty", "", mod},
		{"resources/caf\u00e9/\u00fc.bin", string(bytes.Repeat([]byte{7}, 70000)), mod.Add(-48 * time.Hour)},
		{"resources/back\\slash~", "x", time.Time{}},
	}
	var want bytes.Buffer
	zw := zip.NewWriter(&want)
	var ms []zipMember
	var crcs []uint32
	for _, f := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: zip.Store, Modified: f.mod})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.data))
		ms = append(ms, zipMember{name: f.name, size: int64(len(f.data)), mod: f.mod})
		crcs = append(crcs, crc32.ChecksumIEEE([]byte(f.data)))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	l, ok := newZipLayout(ms)
	if !ok {
		t.Fatal("layout refused")
	}
	var got []byte
	for i, m := range l.members {
		got = m.appendHeader(got)
		got = append(got, files[i].data...)
		got = m.appendDesc(got, crcs[i])
		if l.member(m.off) != i || l.member(m.end()-1) != i {
			t.Fatalf("member lookup of %d wrong", i)
		}
	}
	if int64(len(got)) != l.cdStart {
		t.Fatalf("cdStart %d, members end at %d", l.cdStart, len(got))
	}
	got = append(got, l.tail(crcs)...)
	if int64(len(got)) != l.size {
		t.Fatalf("size %d, wrote %d", l.size, len(got))
	}
	if !bytes.Equal(got, want.Bytes()) {
		for i := range min(len(got), want.Len()) {
			if got[i] != want.Bytes()[i] {
				t.Fatalf("differs from archive/zip at byte %d of %d/%d", i, len(got), want.Len())
			}
		}
		t.Fatalf("length %d, archive/zip wrote %d", len(got), want.Len())
	}
}

// FuzzZipLayout: for any member names, contents and times the layout is
// archive/zip's bytes (or refused where archive/zip refuses).
func FuzzZipLayout(f *testing.F) {
	f.Add("manifest.xml", "a/b.txt", []byte("hello"), int64(1700000000))
	f.Add("x", "caf\u00e9\\~", []byte{}, int64(0))
	f.Add("m", "\xff\xfe", []byte("zz"), int64(-5))
	f.Fuzz(func(t *testing.T, n1, n2 string, data []byte, sec int64) {
		var mod time.Time
		if sec > 0 {
			mod = time.Unix(sec%(1<<31), 0).UTC()
		}
		files := []struct {
			name string
			data []byte
		}{{n1, data}, {n2, append(data, 1)}}
		var want bytes.Buffer
		zw := zip.NewWriter(&want)
		var ms []zipMember
		var crcs []uint32
		for _, fl := range files {
			w, err := zw.CreateHeader(&zip.FileHeader{Name: fl.name, Method: zip.Store, Modified: mod})
			if err != nil {
				t.Skip()
			}
			if strings.HasSuffix(fl.name, "/") {
				t.Skip() // archive/zip writes directories otherwise; names never end so
			}
			w.Write(fl.data)
			ms = append(ms, zipMember{name: fl.name, size: int64(len(fl.data)), mod: mod})
			crcs = append(crcs, crc32.ChecksumIEEE(fl.data))
		}
		if err := zw.Close(); err != nil {
			t.Skip()
		}
		l, ok := newZipLayout(ms)
		if !ok {
			t.Fatal("layout refused what archive/zip wrote")
		}
		var got []byte
		for i, m := range l.members {
			got = m.appendHeader(got)
			got = append(got, files[i].data...)
			got = m.appendDesc(got, crcs[i])
		}
		got = append(got, l.tail(crcs)...)
		if !bytes.Equal(got, want.Bytes()) || int64(len(got)) != l.size {
			t.Fatalf("layout differs from archive/zip (%d/%d/%d bytes)", len(got), l.size, want.Len())
		}
	})
}
