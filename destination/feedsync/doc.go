// Package feedsync reads the change feeds the field uses besides
// ResourceSync — IIIF Change Discovery 1.0 — as the ResourceSync client
// reads Change Lists: into one change per object (the newest), each with
// the time, length, media type and digests the feed gives, for the mirror
// (package destination) to apply as it applies a Change List's.
//
// Walk follows the specification's consuming algorithm (§3.5): from the
// collection's last page, newest first through prev, stopping at the
// first activity older than the position reached by the previous run;
// after a Refresh newer than that position only deletions are taken from
// what precedes it, and a first run stops at a Refresh. The position it
// returns is the newest time read, never later than the clock: a feed
// dated in the future is clamped and warned about, so that it cannot make
// the mirror skip the changes that follow. A hostile feed is bounded:
// pages are fetched through the caller's Getter (its size limits, retries
// and origin policy), a page seen twice ends the walk with an error (a loop
// of prev), MaxPages caps the pages of one walk, and iiif.MaxItems the
// activities of one page.
//
// Nothing here holds more than one page: changes go to the caller's sink
// as they are read, so memory does not grow with the feed.
package feedsync
