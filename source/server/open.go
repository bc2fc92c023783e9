package server

import (
	"errors"
	"os"
	"strings"
)

// ErrLink is matched by the error openInside returns when a component of
// the path is a symbolic link (or, on Windows, another reparse point):
// the scanner never publishes a file through a link, so the server never
// follows one, wherever it points.
var ErrLink = errors.New("server: symbolic link on the path")

// errBadPath reports a relative path with an empty, "." or ".." segment.
var errBadPath = errors.New("server: invalid path")

// splitRel splits a slash-separated relative path into its segments,
// refusing empty, "." and ".." segments (so a path can only descend).
func splitRel(rel string) ([]string, error) {
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || strings.ContainsRune(p, 0) || strings.Contains(p, string(os.PathSeparator)) {
			return nil, errBadPath
		}
	}
	return parts, nil
}
