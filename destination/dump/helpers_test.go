package dump_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zm describes one member of a test archive.
type zm struct {
	name    string
	data    []byte
	mode    fs.FileMode // 0: a regular file
	deflate bool
	// raw, if set, writes the member with CreateRaw: it may change the
	// header (forged sizes, CRC, method, flags) and returns the raw bytes.
	raw func(fh *zip.FileHeader) []byte
}

// mkzip builds an archive in memory.
func mkzip(t testing.TB, ms ...zm) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, m := range ms {
		fh := &zip.FileHeader{Name: m.name, Method: zip.Store}
		if m.deflate {
			fh.Method = zip.Deflate
		}
		if m.mode != 0 {
			fh.SetMode(m.mode)
		}
		if m.raw != nil {
			fh.CRC32 = crc32.ChecksumIEEE(m.data)
			fh.UncompressedSize64 = uint64(len(m.data))
			raw := m.raw(fh)
			if fh.CompressedSize64 == 0 {
				fh.CompressedSize64 = uint64(len(raw))
			}
			w, err := zw.CreateRaw(fh)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(raw)
			continue
		}
		w, err := zw.CreateHeader(fh)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// deflate compresses b.
func deflate(b []byte) []byte {
	var out bytes.Buffer
	w, _ := flate.NewWriter(&out, flate.BestCompression)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// writeFile writes b to a file in a temporary directory and returns its path.
func writeFile(t testing.TB, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "part-00001.zip")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const head = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:ln rel="up" href="http://example.com/capabilitylist.xml"/>
`

// rdm returns a resourcedump-manifest with the given <url> items.
func rdm(items ...string) []byte {
	return []byte(head + `<rs:md capability="resourcedump-manifest" at="2026-01-01T00:00:00Z"/>` + "\n" +
		strings.Join(items, "\n") + "\n</urlset>\n")
}

// cdm returns a changedump-manifest with the given <url> items.
func cdm(items ...string) []byte {
	return []byte(head + `<rs:md capability="changedump-manifest" from="2026-01-01T00:00:00Z" until="2026-01-02T00:00:00Z"/>` + "\n" +
		strings.Join(items, "\n") + "\n</urlset>\n")
}

// item returns a manifest <url> for a bitstream with the given bytes.
func item(loc, path string, data []byte) string {
	s := sha256.Sum256(data)
	return fmt.Sprintf(`<url><loc>%s</loc><rs:md path="%s" length="%d" hash="sha-256:%s" type="text/plain"/></url>`,
		loc, path, len(data), hex.EncodeToString(s[:]))
}

// change returns a Change Dump Manifest <url>.
func change(loc, kind, path string, data []byte) string {
	if path == "" {
		return fmt.Sprintf(`<url><loc>%s</loc><rs:md change="%s" datetime="2026-01-01T12:00:00Z"/></url>`, loc, kind)
	}
	s := sha256.Sum256(data)
	return fmt.Sprintf(`<url><loc>%s</loc><rs:md change="%s" datetime="2026-01-01T12:00:00Z" path="%s" length="%d" hash="sha-256:%s"/></url>`,
		loc, kind, path, len(data), hex.EncodeToString(s[:]))
}

// manifest returns the manifest member.
func manifest(b []byte) zm { return zm{name: "manifest.xml", data: b} }

var (
	bodyA = []byte("alpha\n")
	bodyB = []byte("bravo bravo\n")
)

// okMembers is a valid package: a manifest naming a.txt and b.txt.
func okMembers() []zm {
	return []zm{
		manifest(rdm(item("http://example.com/a", "/resources/a.txt", bodyA), item("http://example.com/b", "/resources/b.txt", bodyB))),
		{name: "resources/a.txt", data: bodyA},
		{name: "resources/b.txt", data: bodyB, deflate: true},
	}
}
