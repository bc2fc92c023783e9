// Package sparqltest starts a real SPARQL 1.1 endpoint for tests: Virtuoso
// Open Source 7 from Debian's virtuoso-opensource-7-bin package, on
// loopback ports only, with its database in a temporary directory.
//
// Start gives a test its own server (about 10 s to create a fresh
// database); Shared starts one per test binary and hands it to every test
// that asks, which then call Reset to drop what the previous test wrote.
// Without virtuoso-t on the PATH the tests are skipped with the command
// that installs it; scripts/test.sh installs it, so CI never skips them.
//
// A server is started through a small sh wrapper that holds a pipe from
// the test binary: when the binary exits, even by kill -9, the pipe closes
// and the wrapper kills Virtuoso, so no database process outlives its
// tests.
package sparqltest
