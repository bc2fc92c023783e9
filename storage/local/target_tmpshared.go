package local

// TEMPORARY (branch i31-target): copies of what the content helper's
// storage/local/content.go defines (Path, version, info), so that the
// Target side builds before the two branches are merged. Delete this
// file and target_tmpshared_*.go at the merge.

import (
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"

	"github.com/resourcesync-go/resourcesync/storage"
)

// Path returns the directory a "file" location names: the location
// itself when it has no scheme, else the URL's path.
func Path(loc string, u *url.URL) (string, error) {
	if u == nil {
		return loc, nil
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("local: %q: a file location names no host", loc)
	}
	p := u.Path
	if len(p) >= 3 && p[0] == '/' && p[2] == ':' { // file:///C:/dir
		p = p[1:]
	}
	return filepath.FromSlash(p), nil
}

// version is the Info.Version of a file: what the local scan compares.
func version(fi fs.FileInfo) string {
	return fmt.Sprintf("%d:%d:%d", fi.Size(), fi.ModTime().UnixNano(), inode(fi))
}

func info(key string, fi fs.FileInfo) storage.Info {
	return storage.Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime(), Version: version(fi)}
}
