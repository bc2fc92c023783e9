// Package local is the storage of a directory on the local file system:
// scheme "file" ("/path", "C:\path", "file:///path").
//
// As a Content (content.go) it lists the directory's regular files in the
// byte order of their slash-separated paths, as source/scan walks them:
// each directory's entries sorted, a directory compared as name+"/" (so
// "a.txt" < "a/b" < "a0"). The listing is streamed: memory holds the
// listings of the directories being walked, not the collection. No
// symbolic link is followed, on the way to a file or as the file
// (internal/nofollow); links, devices, FIFOs and sockets are not listed.
// An object's Version is "size:mtime_ns:inode", what the local scan
// compares (the inode is 0 where the platform has none), so a file
// rewritten or touched gets a new Version and an untouched one keeps it.
// A Content is also a storage.Watcher (fsnotify on every directory).
//
// A Source on a local directory does not go through this Content: the
// scan keeps its Linux fast paths (getdents, fstatat and openat relative
// to the directory, sendfile when serving). The Content is what a Go user
// or the contract suite opens with storage.OpenContent.
package local
