package nofollow

import (
	"errors"
	"os"
	"strings"
)

// ErrLink is matched by the error Open returns when a component of the
// path is a symbolic link (or, on Windows, another reparse point).
var ErrLink = errors.New("server: symbolic link on the path")

// ErrBadPath reports a relative path with an empty, "." or ".." segment.
var ErrBadPath = errors.New("invalid path")

// SplitRel splits a slash-separated relative path into its segments,
// refusing empty, "." and ".." segments (so a path can only descend).
func SplitRel(rel string) ([]string, error) {
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || strings.ContainsRune(p, 0) || strings.Contains(p, string(os.PathSeparator)) {
			return nil, ErrBadPath
		}
	}
	return parts, nil
}
