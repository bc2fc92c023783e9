// Package atomview renders an SDShare Atom feed (an atom.Feed) as a
// readable HTML page in the layout of package web: the feed's title,
// updated instant, author and links (self, RFC 5005 paging as a pager),
// and one row per entry with its title (a link to the feed it leads to:
// collection, snapshots, fragments, chunks; or to its data as text/plain,
// which a browser shows), updated, id, change kind,
// sdshare:resource values and every link it carries, grouped by target
// with their rels and media types (the alternate duplicates SDShare
// requires are folded into the link they repeat).
//
// Every text of the feed is untrusted (titles come from rdfs:label,
// resources are any IRI): it is written by html/template only, and only
// http(s) and relative links become live links; any other IRI (a
// javascript: or data: one) is shown as text. Links below Options.Base are
// written as root-relative paths, so the page keeps working under another
// host name than the configured base URL.
//
// The page is written while the template executes, straight to the
// writer: besides the feed itself (one page of a paged feed, which the
// server holds anyway) it needs memory for one entry's link groups at a
// time.
package atomview
