// Package internal holds no code of its own: its test (layers_test.go)
// keeps the module's layers visible by enforcing the rules below on the
// real import graph (go list), so that a newcomer can read the layering
// off the directory tree.
//
// From the bottom up:
//
//   - internal/...: plumbing (retry, linkheader, origin, watchdog, xmlscan,
//     web, ...). It may import the standard library, third-party modules,
//     other internal/ packages and the leaf models rs, rdf and oai (formats
//     and protocols that import nothing of the module); never a
//     package above it (source, destination, sdshare, websub, validate,
//     cmd). A view or helper that needs one of those lives beside its user
//     instead (sdshare/internal/atomview, cmd/resourcesync/internal/progress).
//   - internal/testing/...: test harnesses (pgtest, sparqltest, browsertest,
//     testnet, faultserver, xsdtest, webtest). Only test files, other
//     harnesses and the benchmark programs under bench/ import them;
//     production code never does.
//   - rs, rdf, oai, then the public packages (source, destination, sdshare,
//     websub, validate), then the programs: main packages live only under
//     cmd/ (what users run) and bench/ (the benchmark programs), never
//     under internal/.
package internal
