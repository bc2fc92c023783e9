// Package fetch downloads resources for a Destination and installs them
// atomically, verifying length and every offered hash while the body
// streams.
//
// A Fetcher retries what can succeed on a second try — network errors,
// resets, timeouts, truncated bodies, 5xx, 429 (honouring Retry-After) and
// wrong bytes, stalled or trickling bodies (StallTimeout, MinRate) — with
// exponential backoff and full jitter (internal/retry), and falls back to
// the alternative locations a Source offers (rel="duplicate" links) when
// the primary location fails. With an Origin policy, locations and
// redirects that leave the Source's authority are refused (ErrOffOrigin). A file is written to a temporary file beside
// its destination, fsynced, given its lastmod as mtime, and renamed into
// place: a reader never sees a half-written or unverified file, and a crash
// leaves at most a temporary file that CleanTemp removes. New files are
// 0666 and directories 0777 less the umask.
//
// Digests are decoded with rs.DecodeDigests: any spelling Sources use is
// verified, one that does not decode (or two that disagree) fails closed,
// and algorithms that cannot be checked are returned in Result.Unverified.
//
// With Request.Dir, the file is written only through a handle on the
// destination directory (os.Root) and a handle on its parent: no symbolic
// link inside the destination is followed (ErrSymlinkInDest), and no path,
// however swapped meanwhile, reaches outside it.
package fetch
