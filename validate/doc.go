// Package validate checks ResourceSync documents against the rules of
// shared/conformance/RESOURCESYNC.md and reports each problem with the
// rule's ID (RS-*), a severity and a position.
//
// Document validates one document as a stream: it keeps only bounded state
// (the previous entry's event time, the capabilities seen in a Capability
// List, and references to child documents for the kinds whose items are
// documents), so memory does not grow with the number of entries.
//
// Walk validates a whole Source: starting from its base URL, its
// /.well-known/resourcesync, a Source Description, a Capability List or any
// capability document, it follows Capability Lists, indexes and archives,
// validates every document it reaches and checks the rules that span
// documents (capability of a child, up and index links, continuity of
// consecutive change documents).
//
// Severity follows the conformance notes: a breach of a MUST is an error; a
// known erratum of the specifications (a missing up link in the walkthrough
// examples, the non-hex hashes of Example 27, the overlapping intervals of
// Archives Example 6.1) and features of pre-1.0 drafts are warnings.
package validate
