package dump_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination/dump"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/rs"
)

// got is what Each delivered for one entry.
type got struct {
	loc, path string
	change    rs.Change
	data      []byte // nil for a nil reader
}

func readAll(t *testing.T, p *dump.Package) ([]got, error) {
	t.Helper()
	var gs []got
	err := p.Each(context.Background(), func(e rs.Entry, r io.Reader) error {
		g := got{loc: e.Loc, path: e.MD.Path, change: e.MD.Change}
		if r != nil {
			b, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			g.data = b
		}
		gs = append(gs, g)
		return nil
	})
	return gs, err
}

func TestOpenValid(t *testing.T) {
	p, err := dump.Open(writeFile(t, mkzip(t, okMembers()...)), dump.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if c := p.Head().MD.Capability; c != rs.CapResourceDumpManifest {
		t.Errorf("capability %q", c)
	}
	if p.Entries() != 2 || p.Unlisted() != 0 {
		t.Errorf("entries %d, unlisted %d", p.Entries(), p.Unlisted())
	}
	gs, err := readAll(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0].loc != "http://example.com/a" || !bytes.Equal(gs[0].data, bodyA) || !bytes.Equal(gs[1].data, bodyB) {
		t.Errorf("got %+v", gs)
	}
	// Each may run again.
	if gs2, err := readAll(t, p); err != nil || len(gs2) != 2 {
		t.Errorf("second Each: %d entries, %v", len(gs2), err)
	}
}

// TestChangeDumpManifest: manifest order, deletions with a nil reader,
// a path without its leading slash (RS-AMB-20), two entries naming one
// member, a patch link's member, directories and unlisted members.
func TestChangeDumpManifest(t *testing.T) {
	patch := `<url><loc>http://example.com/a</loc><rs:md change="updated" path="/changes/2/a.txt"/>` +
		`<rs:ln rel="http://www.openarchives.org/rs/terms/patch" type="application/json-patch" href="http://example.com/a.patch" path="/changes/2/a.patch"/></url>`
	b := mkzip(t,
		zm{name: "changes/", mode: fs.ModeDir | 0o755},
		zm{name: "changes/1/a.txt", data: bodyA},
		zm{name: "changes/2/a.txt", data: bodyB, deflate: true},
		zm{name: "changes/2/a.patch", data: []byte("[]")},
		zm{name: "extra/unlisted.bin", data: []byte("x")},
		zm{name: "README", data: []byte("y")},
		manifest(cdm(
			change("http://example.com/a", "created", "/changes/1/a.txt", bodyA),
			patch,
			change("http://example.com/gone", "deleted", "", nil),
			change("http://example.com/a-again", "created", "changes/1/a.txt", bodyA),
		)),
	)
	p, err := dump.NewReader(bytes.NewReader(b), int64(len(b)), dump.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Head().MD.Capability != rs.CapChangeDumpManifest || p.Entries() != 4 || p.Unlisted() != 2 {
		t.Errorf("head %q, entries %d, unlisted %d", p.Head().MD.Capability, p.Entries(), p.Unlisted())
	}
	gs, err := readAll(t, p)
	if err != nil {
		t.Fatal(err)
	}
	want := []got{
		{"http://example.com/a", "/changes/1/a.txt", rs.Created, bodyA},
		{"http://example.com/a", "/changes/2/a.txt", rs.Updated, bodyB},
		{"http://example.com/gone", "", rs.Deleted, nil},
		{"http://example.com/a-again", "changes/1/a.txt", rs.Created, bodyA},
	}
	if len(gs) != len(want) {
		t.Fatalf("got %d entries, want %d", len(gs), len(want))
	}
	for i := range want {
		if gs[i].loc != want[i].loc || gs[i].path != want[i].path || gs[i].change != want[i].change ||
			!bytes.Equal(gs[i].data, want[i].data) || (gs[i].data == nil) != (want[i].data == nil) {
			t.Errorf("entry %d: got %+v, want %+v", i, gs[i], want[i])
		}
	}
}

// overlapping returns a package whose two listed members share their data:
// the central directory entry of "b" is pointed at the local header of "a".
func overlapping(t testing.TB) []byte {
	b := mkzip(t, manifest(rdm(item("http://example.com/a", "/a", bodyA), item("http://example.com/b", "/b", bodyA))),
		zm{name: "a", data: bodyA}, zm{name: "b", data: bodyA})
	var offA uint32
	for i := 0; i+46 < len(b); i++ {
		if !bytes.Equal(b[i:i+4], []byte("PK\x01\x02")) {
			continue
		}
		nameLen := int(binary.LittleEndian.Uint16(b[i+28:]))
		switch string(b[i+46 : i+46+nameLen]) {
		case "a":
			offA = binary.LittleEndian.Uint32(b[i+42:])
		case "b":
			binary.LittleEndian.PutUint32(b[i+42:], offA)
		}
	}
	return b
}

// hostile lists packages Open must refuse: the sentinel and the member the
// message must name.
func hostile(t testing.TB) []struct {
	name   string
	zip    []byte
	lim    dump.Limits
	err    error
	member string
} {
	ok := okMembers()
	with := func(extra ...zm) []byte { return mkzip(t, append(okMembers(), extra...)...) }
	withManifest := func(m []byte, extra ...zm) []byte {
		return mkzip(t, append([]zm{manifest(m)}, append(ok[1:], extra...)...)...)
	}
	zeros := make([]byte, 8<<20)
	return []struct {
		name   string
		zip    []byte
		lim    dump.Limits
		err    error
		member string
	}{
		{"dotdot member", with(zm{name: "../evil", data: []byte("x")}), dump.Limits{}, dump.ErrUnsafePath, "../evil"},
		{"dotdot inside", with(zm{name: "resources/../../evil", data: []byte("x")}), dump.Limits{}, dump.ErrUnsafePath, "resources/../../evil"},
		{"absolute member", with(zm{name: "/etc/passwd", data: []byte("x")}), dump.Limits{}, dump.ErrUnsafePath, "/etc/passwd"},
		{"backslash member", with(zm{name: `..\evil`, data: []byte("x")}), dump.Limits{}, dump.ErrUnsafePath, `..\evil`},
		{"drive letter member", with(zm{name: "C:/evil", data: []byte("x")}), dump.Limits{}, dump.ErrUnsafePath, "C:/evil"},
		{"NUL member", with(zm{name: "a\x00.txt", data: []byte("x")}), dump.Limits{}, dump.ErrUnsafePath, "a\x00.txt"},
		{"dot segment member", with(zm{name: "resources/./a.txt", data: []byte("x")}), dump.Limits{}, dump.ErrUnsafePath, "resources/./a.txt"},
		{"empty segment member", with(zm{name: "resources//a.txt", data: []byte("x")}), dump.Limits{}, dump.ErrUnsafePath, "resources//a.txt"},
		{"symlink member", with(zm{name: "link", data: []byte("/etc/passwd"), mode: fs.ModeSymlink | 0o777}), dump.Limits{}, dump.ErrSymlink, "link"},
		{"fifo member", with(zm{name: "fifo", mode: fs.ModeNamedPipe | 0o644}), dump.Limits{}, dump.ErrNotRegular, "fifo"},
		{"duplicate member", with(zm{name: "resources/a.txt", data: []byte("other")}), dump.Limits{}, dump.ErrDuplicate, "resources/a.txt"},
		{"duplicate manifest", with(manifest(rdm())), dump.Limits{}, dump.ErrDuplicate, "manifest.xml"},
		{"zip bomb forged", with(zm{name: "bomb.bin", raw: func(fh *zip.FileHeader) []byte {
			fh.Method = zip.Deflate
			fh.UncompressedSize64 = 2 << 30
			return deflate(make([]byte, 64<<10))
		}}), dump.Limits{}, dump.ErrZipBomb, "bomb.bin"},
		{"zip bomb real", with(zm{name: "zeros.bin", data: zeros, deflate: true}), dump.Limits{}, dump.ErrZipBomb, "zeros.bin"},
		{"zip bomb zero compressed", with(zm{name: "nothing.bin", raw: func(fh *zip.FileHeader) []byte {
			fh.UncompressedSize64 = 2 << 20
			fh.CompressedSize64 = 0
			return nil
		}}), dump.Limits{}, dump.ErrZipBomb, "nothing.bin"},
		{"overlapping members", overlapping(t), dump.Limits{}, dump.ErrZipBomb, "b"},
		{"member too large", with(zm{name: "big", raw: func(fh *zip.FileHeader) []byte {
			fh.UncompressedSize64 = 65 << 30
			fh.CompressedSize64 = 64 << 30
			return []byte("x")
		}}), dump.Limits{}, dump.ErrTooLarge, "big"},
		{"member over limit", with(zm{name: "big.bin", data: make([]byte, 2000)}), dump.Limits{MaxMemberBytes: 1999}, dump.ErrTooLarge, "big.bin"},
		{"total over limit", mkzip(t, ok...), dump.Limits{MaxTotalBytes: int64(len(ok[0].data) + len(bodyA) + 1)}, dump.ErrTooLarge, "resources/b.txt"},
		{"too many members", mkzip(t, ok...), dump.Limits{MaxMembers: 2}, dump.ErrTooLarge, ""},
		{"manifest too large", mkzip(t, ok...), dump.Limits{MaxManifestBytes: 100}, dump.ErrTooLarge, "manifest.xml"},
		{"no manifest", mkzip(t, ok[1:]...), dump.Limits{}, dump.ErrNoManifest, ""},
		{"manifest not at the root", mkzip(t, append([]zm{{name: "sub/manifest.xml", data: ok[0].data}}, ok[1:]...)...), dump.Limits{}, dump.ErrNoManifest, ""},
		{"manifest is a directory", mkzip(t, append([]zm{{name: "manifest.xml/", mode: fs.ModeDir | 0o755}}, ok[1:]...)...), dump.Limits{}, dump.ErrNoManifest, ""},
		{"missing member", withManifest(rdm(item("http://example.com/c", "/resources/c.txt", bodyA))), dump.Limits{}, dump.ErrMissingMember, "/resources/c.txt"},
		{"dotdot path", withManifest(rdm(item("http://example.com/c", "/resources/../../etc/passwd", bodyA))), dump.Limits{}, dump.ErrUnsafePath, "/resources/../../etc/passwd"},
		{"absolute path", withManifest(rdm(item("http://example.com/c", "//etc/passwd", bodyA))), dump.Limits{}, dump.ErrUnsafePath, "//etc/passwd"},
		{"backslash path", withManifest(rdm(item("http://example.com/c", `/resources\a.txt`, bodyA))), dump.Limits{}, dump.ErrUnsafePath, `/resources\a.txt`},
		{"drive letter path", withManifest(rdm(item("http://example.com/c", "C:/a.txt", bodyA))), dump.Limits{}, dump.ErrUnsafePath, "C:/a.txt"},
		{"deleted with unsafe path", withManifest(cdm(change("http://example.com/c", "deleted", "/../x", nil))), dump.Limits{}, dump.ErrUnsafePath, "/../x"},
		{"unsafe patch path", withManifest(cdm(`<url><loc>http://example.com/a</loc><rs:md change="updated" path="/resources/a.txt"/>` +
			`<rs:ln rel="http://www.openarchives.org/rs/terms/patch" href="http://example.com/p" path="/../p"/></url>`)), dump.Limits{}, dump.ErrUnsafePath, "/../p"},
		{"directory as file", withManifest(rdm(item("http://example.com/d", "/dir", nil)), zm{name: "dir/", mode: fs.ModeDir | 0o755}), dump.Limits{}, dump.ErrNotRegular, "/dir"},
		{"directory path", withManifest(rdm(item("http://example.com/d", "/resources/", nil))), dump.Limits{}, dump.ErrNotRegular, "/resources/"},
		{"no path", withManifest(rdm(`<url><loc>http://example.com/np</loc><rs:md length="1"/></url>`)), dump.Limits{}, dump.ErrManifest, "http://example.com/np"},
		{"wrong capability", withManifest(bytes.Replace(rdm(), []byte("resourcedump-manifest"), []byte("resourcelist"), 1)), dump.Limits{}, dump.ErrManifest, "manifest.xml"},
		{"DTD in manifest", withManifest(append([]byte(`<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]>`), rdm()[len(`<?xml version="1.0" encoding="UTF-8"?>`):]...)), dump.Limits{}, rs.ErrDTD, "manifest.xml"},
		{"unlisted bzip2 member", with(zm{name: "resources/c.bz2", raw: func(fh *zip.FileHeader) []byte { fh.Method = 12; return []byte("BZh") }}), dump.Limits{}, nil, ""},
		{"manifest with a wrong CRC", mkzip(t, append([]zm{{name: "manifest.xml", data: ok[0].data, raw: func(fh *zip.FileHeader) []byte {
			fh.CRC32 ^= 1
			return ok[0].data
		}}}, ok[1:]...)...), dump.Limits{}, dump.ErrCorrupt, "manifest.xml"},
		{"manifest longer than declared", mkzip(t, append([]zm{{name: "manifest.xml", data: ok[0].data, raw: func(fh *zip.FileHeader) []byte {
			fh.UncompressedSize64 -= 10
			return ok[0].data
		}}}, ok[1:]...)...), dump.Limits{}, dump.ErrSizeMismatch, "manifest.xml"},
		{"not a zip", []byte("PK\x03\x04 this is not a zip"), dump.Limits{}, dump.ErrFormat, ""},
	}
}

func TestOpenRefuses(t *testing.T) {
	for _, tc := range hostile(t) {
		t.Run(tc.name, func(t *testing.T) {
			p, err := dump.Open(writeFile(t, tc.zip), tc.lim)
			if tc.err == nil { // an unlisted member of another method is ignored
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				defer p.Close()
				if p.Unlisted() != 1 {
					t.Errorf("unlisted %d, want 1", p.Unlisted())
				}
				return
			}
			if err == nil {
				p.Close()
				t.Fatalf("Open succeeded, want %v", tc.err)
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %q, want %v", err, tc.err)
			}
			if !strings.Contains(err.Error(), strconv.Quote(tc.member)[1:len(strconv.Quote(tc.member))-1]) {
				t.Errorf("error %q does not name %q", err, tc.member)
			}
			var de *dump.Error
			if errors.As(err, &de) && de.Package == "" {
				t.Errorf("error %q does not name the package", err)
			}
		})
	}
}

func TestUnsupportedListed(t *testing.T) {
	ms := okMembers()
	ms[0] = manifest(rdm(item("http://example.com/c", "/c.bz2", nil)))
	for _, raw := range []func(fh *zip.FileHeader) []byte{
		func(fh *zip.FileHeader) []byte { fh.Method = 12; return []byte("BZh") },
		func(fh *zip.FileHeader) []byte { fh.Flags |= 1; return []byte("secret") },
	} {
		b := mkzip(t, append(ms, zm{name: "c.bz2", raw: raw})...)
		_, err := dump.NewReader(bytes.NewReader(b), int64(len(b)), dump.Limits{})
		if !errors.Is(err, dump.ErrUnsupported) || !strings.Contains(err.Error(), `"/c.bz2"`) {
			t.Errorf("got %v, want ErrUnsupported naming /c.bz2", err)
		}
	}
}

// TestReadRefuses: headers that lie about the data pass Open (nothing in
// the directory betrays them) and fail while reading, after at most the
// declared bytes.
func TestReadRefuses(t *testing.T) {
	long := bytes.Repeat([]byte("0123456789"), 100<<10) // 1 MB
	for _, tc := range []struct {
		name string
		m    zm
		err  error
	}{
		{"lying header: longer", zm{raw: func(fh *zip.FileHeader) []byte {
			fh.Method = zip.Deflate
			fh.UncompressedSize64 = 10
			return deflate(long)
		}}, dump.ErrSizeMismatch},
		{"lying header: stored longer", zm{raw: func(fh *zip.FileHeader) []byte {
			fh.UncompressedSize64 = 10
			return long[:100]
		}}, dump.ErrSizeMismatch},
		{"lying header: shorter", zm{raw: func(fh *zip.FileHeader) []byte {
			fh.UncompressedSize64 = 100
			return long[:10]
		}}, dump.ErrSizeMismatch},
		{"wrong CRC", zm{data: bodyA, raw: func(fh *zip.FileHeader) []byte {
			fh.CRC32 ^= 1
			return bodyA
		}}, dump.ErrCorrupt},
		{"corrupt deflate", zm{raw: func(fh *zip.FileHeader) []byte {
			fh.Method = zip.Deflate
			fh.UncompressedSize64 = 1000
			return bytes.Repeat([]byte{0xff}, 50)
		}}, dump.ErrCorrupt},
		{"truncated deflate", zm{data: long[:1000], raw: func(fh *zip.FileHeader) []byte {
			fh.Method = zip.Deflate
			d := deflate(long[:1000])
			return d[:len(d)-3]
		}}, dump.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.m.name = "resources/x.bin"
			b := mkzip(t, manifest(rdm(item("http://example.com/x", "/resources/x.bin", nil))), tc.m)
			p, err := dump.NewReader(bytes.NewReader(b), int64(len(b)), dump.Limits{})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			var n int64
			var readErr error
			err = p.Each(context.Background(), func(e rs.Entry, r io.Reader) error {
				n, readErr = io.Copy(io.Discard, r)
				return nil // ignored: Each must still report it
			})
			if !errors.Is(readErr, tc.err) || !errors.Is(err, tc.err) {
				t.Fatalf("read error %v, Each %v; want %v", readErr, err, tc.err)
			}
			if !strings.Contains(err.Error(), `"resources/x.bin"`) {
				t.Errorf("error %q does not name the member", err)
			}
			if f, _ := zip.NewReader(bytes.NewReader(b), int64(len(b))); n > int64(f.File[1].UncompressedSize64) {
				t.Errorf("read %d bytes, more than the declared %d", n, f.File[1].UncompressedSize64)
			}
		})
	}
}

// TestHashMismatchInstallsNothing: the manifest's hash is what the
// member's bytes are checked against by fetch.Install.
func TestHashMismatchInstallsNothing(t *testing.T) {
	bad := strings.Replace(item("http://example.com/a", "/resources/a.txt", bodyA), "sha-256:", "sha-256:0", 1)
	bad = strings.Replace(bad, `"/>`, `"/>`, 1)
	// Keep the digest 64 hex digits long: drop the last one.
	i := strings.Index(bad, "sha-256:") + len("sha-256:") + 64
	bad = bad[:i] + bad[i+1:]
	b := mkzip(t, manifest(rdm(bad)), zm{name: "resources/a.txt", data: bodyA})
	p, err := dump.NewReader(bytes.NewReader(b), int64(len(b)), dump.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	err = p.Each(context.Background(), func(e rs.Entry, r io.Reader) error {
		_, err := fetch.Install(r, fetch.Request{Path: filepath.Join(dst, "a.txt"),
			Length: e.MD.Length, HasLength: e.MD.HasLength, Hashes: e.MD.Hashes, NoSync: true})
		return err
	})
	if !errors.Is(err, fetch.ErrHashMismatch) {
		t.Fatalf("Each: %v, want ErrHashMismatch", err)
	}
	if left, _ := os.ReadDir(dst); len(left) != 0 {
		t.Errorf("files left in the destination: %v", left)
	}
}

func TestEachStops(t *testing.T) {
	b := mkzip(t, okMembers()...)
	p, err := dump.NewReader(bytes.NewReader(b), int64(len(b)), dump.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err = p.Each(ctx, func(rs.Entry, io.Reader) error { n++; cancel(); return nil })
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Errorf("cancelled: %d calls, %v", n, err)
	}
	stop := errors.New("stop")
	n = 0
	err = p.Each(context.Background(), func(rs.Entry, io.Reader) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("fn error: %d calls, %v", n, err)
	}
}

// TestMemberCount: the count a ZIP64 directory end declares is checked
// before archive/zip parses the directory, and the parsed count after it
// (archive/zip reads records until a bad one, whatever the count says).
func TestMemberCount(t *testing.T) {
	ms := make([]zm, 0, 1<<16)
	ms = append(ms, okMembers()...)
	for i := len(ms); i < 1<<16; i++ {
		ms = append(ms, zm{name: "f/" + strconv.Itoa(i)})
	}
	b := mkzip(t, ms...)
	lim := dump.Limits{MaxMembers: 1<<16 - 1}
	if _, err := dump.NewReader(bytes.NewReader(b), int64(len(b)), lim); !errors.Is(err, dump.ErrTooLarge) ||
		!strings.Contains(err.Error(), "declares 65536 members") {
		t.Errorf("declared: %v", err)
	}
	// Make the ZIP64 record declare 0 members: 65536 mod 2^16.
	i := bytes.LastIndex(b, []byte("PK\x06\x06"))
	binary.LittleEndian.PutUint64(b[i+24:], 0)
	binary.LittleEndian.PutUint64(b[i+32:], 0)
	if _, err := dump.NewReader(bytes.NewReader(b), int64(len(b)), lim); !errors.Is(err, dump.ErrTooLarge) ||
		!strings.Contains(err.Error(), "65536 members, limit") {
		t.Errorf("parsed: %v", err)
	}
	if p, err := dump.NewReader(bytes.NewReader(b), int64(len(b)), dump.Limits{}); err != nil || p.Unlisted() != 1<<16-3 {
		t.Errorf("within the default limit: %v", err)
	}
}

// TestDeflatedMembers: members are inflated one after another with one
// reused decompressor, including after a member fn did not read at all.
func TestDeflatedMembers(t *testing.T) {
	var ms []zm
	var items []string
	for i := range 5 {
		data := bytes.Repeat([]byte(strconv.Itoa(i)), 1000*(i+1))
		name := "resources/" + strconv.Itoa(i)
		ms = append(ms, zm{name: name, data: data, deflate: true})
		items = append(items, item("http://example.com/"+strconv.Itoa(i), "/"+name, data))
	}
	b := mkzip(t, append(ms, manifest(rdm(items...)))...)
	p, err := dump.NewReader(bytes.NewReader(b), int64(len(b)), dump.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	err = p.Each(context.Background(), func(e rs.Entry, r io.Reader) error {
		defer func() { k++ }()
		if k == 1 {
			return nil // not read
		}
		got, err := io.ReadAll(r)
		if err == nil && !bytes.Equal(got, ms[k].data) {
			t.Errorf("member %d: %d bytes, want %d", k, len(got), len(ms[k].data))
		}
		return err
	})
	if err != nil || k != 5 {
		t.Errorf("Each: %d entries, %v", k, err)
	}
}

// TestInsecurePathGodebug: with zipinsecurepath=0 archive/zip itself
// complains about the name; the refusal is still ours, naming the member.
func TestInsecurePathGodebug(t *testing.T) {
	t.Setenv("GODEBUG", "zipinsecurepath=0")
	b := mkzip(t, append(okMembers(), zm{name: "../evil", data: []byte("x")})...)
	if _, err := zip.NewReader(bytes.NewReader(b), int64(len(b))); !errors.Is(err, zip.ErrInsecurePath) {
		t.Fatalf("archive/zip: %v, want ErrInsecurePath", err)
	}
	_, err := dump.NewReader(bytes.NewReader(b), int64(len(b)), dump.Limits{})
	if !errors.Is(err, dump.ErrUnsafePath) || !strings.Contains(err.Error(), `"../evil"`) {
		t.Errorf("got %v, want ErrUnsafePath naming ../evil", err)
	}
}

// TestLateHead: a root rs:md after the items (RS-GEN-10) is tolerated as
// the decoder tolerates it; a missing one is not.
func TestLateHead(t *testing.T) {
	late := []byte(strings.Replace(head, `<rs:ln rel="up"`, item("http://example.com/a", "/resources/a.txt", bodyA)+"\n"+`<rs:ln rel="up"`, 1) +
		`<rs:md capability="resourcedump-manifest" at="2026-01-01T00:00:00Z"/></urlset>`)
	ms := okMembers()
	ms[0] = manifest(late)
	b := mkzip(t, ms...)
	p, err := dump.NewReader(bytes.NewReader(b), int64(len(b)), dump.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Head().MD.Capability != rs.CapResourceDumpManifest || p.Entries() != 1 || p.Unlisted() != 1 {
		t.Errorf("capability %q, %d entries, %d unlisted", p.Head().MD.Capability, p.Entries(), p.Unlisted())
	}
	ms[0] = manifest([]byte(head + item("http://example.com/a", "/resources/a.txt", bodyA) + "</urlset>"))
	b = mkzip(t, ms...)
	if _, err := dump.NewReader(bytes.NewReader(b), int64(len(b)), dump.Limits{}); !errors.Is(err, dump.ErrManifest) {
		t.Errorf("no capability: %v, want ErrManifest", err)
	}
}
