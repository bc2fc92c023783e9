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
// redirects that leave the Source's authority are refused (ErrOffOrigin). A file is written where nobody sees it,
// fsynced, given its lastmod as mtime (on the descriptor), and only then
// given its name: on Linux an unnamed file (O_TMPFILE) in the target
// directory, linked to its name (a new file takes no rename; an update is
// linked to a temporary name and renamed over the old file, atomic), where
// O_TMPFILE is missing a temporary file beside the destination, renamed
// into place. A reader never sees a half-written or unverified file, and a
// crash leaves nothing, or at most a temporary file that CleanTemp
// removes. New files are
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
