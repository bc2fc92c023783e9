// Package location is the one grammar of the location strings that name
// where content, a mirror or state lives (the DIR, DEST and --store
// arguments), and the generic registry each kind of thing opened from
// such a string instantiates, in the style of restic's location
// registry: a scheme registers once; opening looks the scheme up and
// names the known ones when it is not there.
//
// The forms:
//
//	/path, dir, C:\dir      a plain local path: scheme "file"
//	file:///path            a local path as a URL (file://localhost/path too)
//	scheme://rest           a URL: postgres://…, postgresql://…, s3://bucket/prefix, mem://name
//	scheme:rest             an opaque form: bolt:DIR, mem:NAME
//
// A plain path, a file location and bolt:DIR name a local directory
// (Location.Dir); what lives there is the registry's business.
//
// A scheme is a letter followed by letters, digits, '+', '-' or '.', and
// is at least two characters long, so that a Windows drive ("C:") stays a
// path; schemes compare in lower case. A relative path whose first
// element holds a colon ("ab:c") reads as a scheme: write it "./ab:c".
// A libpq key=value connection string ("host=h password=…") is refused
// rather than taken for a directory named after a password.
//
// Redact hides the passwords of a location for messages; every message
// that shows a location shows it through Redact (Location.String).
package location
