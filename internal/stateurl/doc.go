// Package stateurl is the one grammar of the store URLs that name where
// state lives (the --store flags): "bolt:PATH" for an embedded bbolt
// store, "postgres://..." or "postgresql://..." for a PostgreSQL
// database, and, where a store family allows it, a plain PATH. The public
// openers (source/store/storeurl, websub/hub/hubstore/hubstoreurl,
// sdshare/graphstore/graphstoreurl) parse with it; Redact hides the
// passwords of such a URL for messages.
package stateurl
