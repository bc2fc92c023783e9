package rs

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func TestDecodeDigests(t *testing.T) {
	data := []byte("the bytes")
	m5, s1, s256 := md5.Sum(data), sha1.Sum(data), sha256.Sum256(data)
	hx := func(b []byte) string { return hex.EncodeToString(b) }
	for _, tc := range []struct {
		name, attr      string
		md5, sha1, s256 []byte
		unknown         string
		err             error
	}{
		{name: "hex", attr: "md5:" + hx(m5[:]) + " sha-256:" + hx(s256[:]), md5: m5[:], s256: s256[:]},
		{name: "upper hex and alg", attr: "MD5:" + strings.ToUpper(hx(m5[:])), md5: m5[:]},
		{name: "sha256 spellings", attr: "SHA-256:" + hx(s256[:]) + " sha256:" + hx(s256[:]) + " Sha_256:" + hx(s256[:]), s256: s256[:]},
		{name: "sha1 spelling", attr: "SHA1:" + hx(s1[:]), sha1: s1[:]},
		{name: "base64 padded", attr: "md5:" + base64.StdEncoding.EncodeToString(m5[:]), md5: m5[:]},
		{name: "base64 raw", attr: "sha-256:" + base64.RawStdEncoding.EncodeToString(s256[:]), s256: s256[:]},
		{name: "base64 url", attr: "sha-1:" + base64.URLEncoding.EncodeToString(s1[:]), sha1: s1[:]},
		{name: "base64 url raw", attr: "sha-256:" + base64.RawURLEncoding.EncodeToString(s256[:]), s256: s256[:]},
		{name: "same digest hex and base64", attr: "md5:" + hx(m5[:]) + " md5:" + base64.StdEncoding.EncodeToString(m5[:]), md5: m5[:]},
		{name: "unknown only", attr: "sha-512:abcd", unknown: "sha-512"},
		{name: "unknown beside known", attr: "blake3:xyz md5:" + hx(m5[:]), md5: m5[:], unknown: "blake3"},
		{name: "short hex", attr: "md5:" + hx(m5[:])[:30], err: ErrDigestEncoding},
		{name: "long hex", attr: "md5:" + hx(m5[:]) + "00", err: ErrDigestEncoding},
		{name: "bad chars", attr: "md5:" + strings.Repeat("g", 32), err: ErrDigestEncoding},
		{name: "base64 wrong length", attr: "sha-256:" + base64.StdEncoding.EncodeToString(m5[:]), err: ErrDigestEncoding},
		{name: "no alg", attr: hx(m5[:]), err: ErrDigestEncoding},
		{name: "no value", attr: "md5:", err: ErrDigestEncoding},
		{name: "conflict", attr: "md5:" + hx(m5[:]) + " md5:" + strings.Repeat("0", 32), err: ErrDigestConflict},
		{name: "conflict across spellings", attr: "sha-256:" + hx(s256[:]) + " SHA256:" + strings.Repeat("A", 64), err: ErrDigestConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := DecodeDigests(SplitHashes(tc.attr))
			if tc.err != nil {
				var de *DigestError
				if !errors.Is(err, tc.err) || !errors.Is(err, ErrHash) || !errors.As(err, &de) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				if d.Verifiable() || d.Unknown != nil {
					t.Fatalf("digests returned with an error: %+v", d)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(d.MD5, tc.md5) || !bytes.Equal(d.SHA1, tc.sha1) || !bytes.Equal(d.SHA256, tc.s256) {
				t.Fatalf("got %x %x %x", d.MD5, d.SHA1, d.SHA256)
			}
			if got := d.UnknownList(); got != tc.unknown {
				t.Fatalf("unknown = %q, want %q", got, tc.unknown)
			}
			if d.Verifiable() != (tc.md5 != nil || tc.sha1 != nil || tc.s256 != nil) {
				t.Fatal("Verifiable wrong")
			}
		})
	}
}

func FuzzDecodeDigests(f *testing.F) {
	for _, s := range []string{
		"md5:1B2M2Y8AsgTpgAmY7PhCfg==",
		"MD5:D41D8CD98F00B204E9800998ECF8427E md5:d41d8cd98f00b204e9800998ecf8427e",
		"sha-256:47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU",
		"sha-1:da39a3ee5e6b4b0d3255bfef95601890afd80709 x:y :z w",
		"sha256:=== md5:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := SplitHashes(s)
		d, err := DecodeDigests(h)
		if err != nil {
			var de *DigestError
			if !errors.As(err, &de) || !errors.Is(err, ErrHash) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for alg, b := range map[string][]byte{MD5: d.MD5, SHA1: d.SHA1, SHA256: d.SHA256} {
			if b != nil && len(b) != hexLen[alg]/2 {
				t.Fatalf("%s digest of %d bytes", alg, len(b))
			}
		}
		// Every known token must decode to the kept digest: nothing is
		// silently dropped.
		for _, x := range h {
			if alg := CanonicalAlg(x.Alg); alg != "" {
				b, ok := DecodeDigest(alg, x.Value)
				if !ok || !bytes.Equal(b, d.Get(alg)) {
					t.Fatalf("token %s:%s not reflected", x.Alg, x.Value)
				}
			}
		}
	})
}
