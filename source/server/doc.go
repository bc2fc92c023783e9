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
//
// A set whose collection is a storage.Content (Set.Content: a bucket) is
// served the same way from the Content: the object is stat'ed first and
// served only if its size and Version are the scanned ones (503 otherwise,
// as for a changed file), then streamed, a Range opening the object at
// its offset; an object that changes while it streams cuts the response
// (http.ErrAbortHandler) rather than end it short as if complete.
//
// A document has two representations at its URL. Every client gets the
// XML, byte for byte as published, except a browser's navigation (or a
// request with ?format=html; web.WantsHTML is the one policy), which gets
// a readable page of it (package internal/web/docview: kind, metadata,
// links, the entries as links, 1,000 a page with ?page=N, breadcrumbs
// along the up and index links). The Accept header alone never asks for
// the page: Java's HttpURLConnection names text/html first by default.
// Both answers carry Vary: Accept, Sec-Fetch-Dest, Sec-Fetch-Mode,
// Upgrade-Insecure-Requests (web.VaryHTML) and the document's
// Last-Modified, and both answer If-Modified-Since with 304, so that no
// cache hands one to a client that asked for the other. Resource Dump
// packages and robots.txt are not negotiated; the HTML companions that
// publish may have written beside the documents (NAME.html) are served as
// HTML, and where the tree has none (serve writes none) their URLs
// (NAME.html, NAME.N.html, .well-known/resourcesync.html) answer the view
// of their document to every client, so that the links of a static
// publish work against serve too.
//
// A Resource List stored compressed (NAME.xml.gz, publish.Config.GzipLists,
// as serve stores it) is answered at NAME.xml: the stored bytes with
// Content-Encoding: gzip to a client that accepts gzip (web.AcceptsGzip),
// the XML decoded while it is sent to any other, with Vary:
// Accept-Encoding; HEAD, Range and conditional requests behave as for a
// plain document (gzip.go).
//
// The base URL itself is DIR's index.html when the set served there has
// one (without the Link header of a resource, so that discovery from the
// base URL reaches the Source Description and every set). Otherwise a
// browser's navigation is redirected to the status page (Handler.Status,
// else the Source Description's page), and every other client gets 404
// with a line naming BASE/.well-known/resourcesync, where a ResourceSync
// client given the base URL looks next.
//
// POST BASE/.resourcesync/bulk is the bulk GET (bulk.go, format in
// internal/bulk): up to 1,000 small resources in one response, each the
// bytes its GET gives, advertised by a Link header on the XML documents
// (never in them); Handler.NoBulk turns both off.
package server
