// Package units formats and reads byte counts for people, in one convention for the
// whole tool: IEC binary units (KiB, MiB, GiB: powers of 1024), in progress
// bars, run summaries, status pages and logs alike, and reads them back
// (ParseBytes, ParseRate) in every size flag, so a size the tool prints
// can be typed back.
package units
