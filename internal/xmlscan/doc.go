// Package xmlscan is a small, fast, namespace-aware XML 1.0 tokenizer for
// untrusted input. It exists because encoding/xml parses ResourceSync lists
// at about a third of the rate the project needs and has no limits of its
// own; it handles exactly the XML that Sitemap documents use (elements,
// attributes, text, CDATA, comments, processing instructions) and refuses
// everything a hostile document could abuse: DOCTYPE and entity
// declarations, undefined entities, excessive depth or attribute counts,
// oversized tokens or documents, invalid UTF-8 and non-XML characters.
// Errors carry the byte offset, line and column.
package xmlscan
