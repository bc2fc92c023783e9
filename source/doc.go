// Package source runs a ResourceSync Source over one or more directories:
// it keeps each set's state (inventory and change journal, package
// source/store) up to date with the directory (package source/scan),
// publishes the documents (package source/publish) and serves documents
// and resources over HTTP (package source/server). Rescans run at an
// interval, on filesystem events, or on demand; each Update is a scan of
// every set followed by a publish, so documents always describe a state
// the journal has durably recorded.
package source
