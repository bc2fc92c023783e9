package fetch

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

// BenchmarkInstall measures the per-file cost of Install (temporary file,
// md5 + sha-256 while copying, rename, mtime) apart from HTTP, as a sync
// pays it: without the per-file fsync (a sync issues one syncfs per batch)
// and from a reader without WriteTo, like an HTTP body.
func BenchmarkInstall(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		for _, viaDir := range []bool{false, true} {
			name := fmt.Sprint(size)
			if viaDir {
				name += "/dir" // through a Dir opened once, two levels down, as a sync installs
			}
			b.Run(name, func(b *testing.B) { benchInstall(b, size, viaDir) })
		}
	}
}

func benchInstall(b *testing.B, size int, viaDir bool) {
	body := bytes.Repeat([]byte("resourcesync "), size/13+1)[:size]
	m, s := md5.Sum(body), sha256.Sum256(body)
	hs := rs.Hashes{{Alg: rs.MD5, Value: hex.EncodeToString(m[:])}, {Alg: rs.SHA256, Value: hex.EncodeToString(s[:])}}
	dir := b.TempDir()
	var d *Dir
	sub := dir
	if viaDir {
		var err error
		if d, err = OpenDir(dir); err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		sub = filepath.Join(dir, "a", "b")
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		req := Request{Path: filepath.Join(sub, fmt.Sprint(i)), Dir: d, Length: int64(size), HasLength: true, Hashes: hs,
			NoSync: true, ModTime: time.Unix(1700000000, 0)}
		if _, err := Install(struct{ io.Reader }{bytes.NewReader(body)}, req); err != nil {
			b.Fatal(err)
		}
	}
}
