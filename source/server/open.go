package server

import (
	"os"

	"github.com/resourcesync-go/resourcesync/internal/nofollow"
)

// ErrLink is matched by the error openInside returns when a component of
// the path is a symbolic link (or, on Windows, another reparse point):
// the scanner never publishes a file through a link, so the server never
// follows one, wherever it points.
var ErrLink = nofollow.ErrLink

// openInside opens dir/rel for reading without following any symbolic
// link below dir (nofollow.Open, shared with the SDShare server); the
// caller refuses anything but a regular file.
func openInside(dir, rel string) (*os.File, error) { return nofollow.Open(dir, rel) }

// splitRel splits a slash-separated relative path into its segments,
// refusing empty, "." and ".." segments (so a path can only descend).
func splitRel(rel string) ([]string, error) { return nofollow.SplitRel(rel) }
