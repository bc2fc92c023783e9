// Package units formats byte counts for people, in one convention for the
// whole tool: IEC binary units (KiB, MiB, GiB: powers of 1024), in progress
// bars, run summaries, status pages and logs alike.
package units
