// Package linkheader parses HTTP Link header fields (RFC 8288 §3): the
// one parser behind discovery's Link headers, the hub's publish requests
// and the subscriber's hub discovery.
//
// It accepts what senders really do: several Link fields (RFC 9110 §5.3
// allows a list-valued field to be split), several comma-separated links
// per field, quoted strings holding commas, semicolons and escaped quotes,
// parameter names in any case, rel with several space-separated relation
// types (compared case-insensitively), and relative targets resolved
// against the response's URL. Malformed links are skipped, not fatal; one
// header cannot make the parser hold more than MaxLinks links.
package linkheader
