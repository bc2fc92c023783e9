// Package boltmem gives back the resident pages of a bbolt file's memory
// map.
//
// bbolt reads through a read-only shared mapping of its file. Every page a
// long pass touches (a scan of the whole inventory, an audit) stays mapped
// into the process and counts in its resident set, so the RSS of a pass
// over a state of N records grows with N although the heap does not. The
// pages are clean copies of the page cache: Release drops them from the
// process's page tables (madvise MADV_DONTNEED) and the next access faults
// them in again from the page cache, with the same bytes. Callers release
// every few tens of thousands of records during long passes.
//
// On platforms without madvise (or where the gain is not measured) Release
// does nothing.
package boltmem
