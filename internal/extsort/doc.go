// Package extsort sorts records that need not fit in memory: an external
// merge sort through plain files, for the spools of a run (the changes a
// change feed gives, newest first, to be applied oldest first, the newest
// per object).
//
// Records are (group, rank, payload) byte strings, ordered by group, then
// rank, then the order they were added in. With Dedupe, only the first
// record of each group is kept: give the rank that makes the wanted one
// first (an inverted time for "the newest wins"; ties go to the one added
// first).
//
// Why not a bbolt database, as for the other scratch sets: merging a
// batch of random keys into a B+tree touches a page per key, read through
// bbolt's memory map, and each page fault maps up to 64 KB of the file
// (the kernel's fault-around), so the resident set of a spool of N
// records grew with N up to the batch's reach (16 MB more at 100,000 feed
// activities than at 10,000). Here the records held in memory are at
// most Limit bytes, a merge reads each of at most FanIn files through a
// small buffer, and nothing is mapped: the resident set does not depend
// on how many records were added.
package extsort
