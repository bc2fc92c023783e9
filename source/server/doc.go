// Package server is the Source's HTTP side: an http.Handler that serves a
// published document tree (the Source Description, Capability Lists and
// every capability document, as written by package publish) and the
// resources of each set straight from the collection directory.
//
// Resources are served at the set's URL prefix followed by their escaped
// path relative to the set's directory, so a mirror of the resources
// reproduces the directory tree. Each response carries Content-Type,
// Content-Length, Last-Modified, a strong ETag derived from the SHA-256 in
// the inventory, and Link: <capability list>; rel="resourcesync"; HEAD,
// Range, If-None-Match and If-Modified-Since are honoured (net/http's
// ServeContent). Only resources in the inventory are served, and only the
// very file that was scanned: a file that exists but was not scanned yet
// is 404 until the next scan; a file whose size, mtime or (where the
// platform has them) inode no longer match the inventory, or whose path
// now goes through a symbolic link, is answered 503 with Retry-After and a
// log line until the next scan settles it. Files are opened without
// following links: on Unix each component with openat(O_NOFOLLOW), elsewhere
// through os.Root (which refuses escapes) after checking every component.
// Documents are opened the same way below the document tree.
package server
