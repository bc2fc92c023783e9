// Package rs is the ResourceSync document model (ANSI/NISO Z39.99-2017,
// "ResourceSync 1.1", with Archives 0.9.1 and Change Notification 1.0.1).
//
// Every ResourceSync document is a Sitemap <urlset> or <sitemapindex>: a
// Head (root element, root rs:md and rs:ln) followed by a stream of Entries
// (<url> or <sitemap> items). Both kinds share one model.
//
// A Decoder reads the head and then yields entries one at a time from any
// io.Reader, in memory that does not depend on the number of entries, and
// refuses hostile input (DTDs, entity declarations, excessive nesting, huge
// tokens, invalid UTF-8) with errors that carry a line and column. Older
// drafts (1.0, 0.9, 0.5 and the 2012 alpha) are read leniently and mapped
// onto the 1.1 model, each legacy feature reported as a Warning.
//
// An Encoder writes a head and entries to any io.Writer as strict 1.1 XML;
// a Splitter on top of it rolls over at 50,000 entries and writes the index.
//
// Unknown elements are skipped when reading; unknown attributes on rs:md and
// rs:ln that carry a namespace are kept in Extra and written back out.
package rs
