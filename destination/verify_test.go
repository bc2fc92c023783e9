package destination

import (
	"testing"

	"github.com/resourcesync-go/resourcesync/rs"
)

func TestVerifyHashes(t *testing.T) {
	md5 := rs.Hash{Alg: rs.MD5, Value: "m"}
	sha1 := rs.Hash{Alg: rs.SHA1, Value: "s1"}
	sha256 := rs.Hash{Alg: rs.SHA256, Value: "s256"}
	tests := []struct {
		in   rs.Hashes
		all  bool
		want rs.Hashes
	}{
		{rs.Hashes{md5, sha256}, true, rs.Hashes{md5, sha256}},
		{rs.Hashes{md5, sha1, sha256}, true, rs.Hashes{md5, sha1, sha256}},
		{rs.Hashes{md5, sha256}, false, rs.Hashes{sha256}},
		{rs.Hashes{md5, sha1}, false, rs.Hashes{sha1}},
		{rs.Hashes{md5}, false, rs.Hashes{md5}},
		{nil, false, nil},
		{rs.Hashes{{Alg: "sha-512", Value: "x"}}, false, rs.Hashes{{Alg: "sha-512", Value: "x"}}},
		{rs.Hashes{md5, {Alg: "SHA256", Value: "a"}, {Alg: "sha-256", Value: "b"}}, false, rs.Hashes{{Alg: "SHA256", Value: "a"}, {Alg: "sha-256", Value: "b"}}},
	}
	for _, tt := range tests {
		e := &engine{opt: Options{VerifyAll: tt.all}}
		if got := e.verifyHashes(tt.in); got.String() != tt.want.String() {
			t.Errorf("verifyHashes(%v, all %v) = %v, want %v", tt.in, tt.all, got, tt.want)
		}
	}
}
