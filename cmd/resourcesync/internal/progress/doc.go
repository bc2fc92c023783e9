// Package progress renders the destination.Event stream of a sync run for
// people and for programs.
//
// A Renderer is fed from the engine's goroutines through Handle and writes
// in one of four styles:
//
//   - Bars: a single status line on a terminal, redrawn at most eight times
//     a second with a carriage return and clear-to-end-of-line; failures,
//     deletions, kept files, audit findings and phase changes are printed
//     above it as ordinary lines.
//   - Lines: for logs and CI. One line per plan, phase, failure, deletion,
//     kept file and audit finding, a progress line at most every five
//     seconds, and never a line per fetched or skipped file.
//
// A set's done event (its summary) writes no line in Bars and Lines: the
// command prints the summary in its report, so it appears once.
//   - JSON: one JSON object per event per line, the complete record.
//   - Quiet: failures only.
//
// Auto picks Bars when the writer is a terminal and Lines otherwise.
//
// Every line starts with "sync SET: " so that a log can be grepped by set:
//
//	sync default: baseline, 10,000 resources
//	sync default: failed http://example.org/a: 404 Not Found
//	sync default: 4,200/10,000 resources, 4.1 MB, 2,100/s, 1 failed
//
// Retries are counted, never listed: the fetcher may retry often, and the
// count in the status or progress line says enough.
//
// Handle is cheap on purpose: for the frequent events (fetched, skipped,
// audit in-sync) it only adds to atomic counters. Output is assembled in
// memory and written by a background ticker, so a slow terminal or pipe does
// not slow the fetchers; only when a flood of lines outgrows the buffer does
// Handle write them itself. Close must be called to write what is pending.
//
// Deletions, kept files and audit findings are listed up to a limit each;
// beyond it they are only counted (the summary and Counts carry the
// totals, and JSON mode lists everything). Failures are always listed.
//
// Text taken from events (URIs, paths, error messages) comes in part from
// the remote Source, so control characters are replaced before it reaches a
// terminal.
package progress
