// Package client keeps a graph store in step with an SDShare 1.0 server
// (SDSHARE.md section 3, SD-CLI-*).
//
// Sync discovers the collections from the overview feed (overview →
// collection feed → snapshots and fragments feeds, by rel only, SD-CLI-2).
// For every collection it keeps t, the time of the last update seen, in a
// small bbolt state file (State). While t is unset it loads the newest
// snapshot (chunked when offered, waiting on 202) into the collection's
// graph with Store.ReplaceGraph and sets t to the snapshot's updated
// (SD-CLI-3..6). Then it reads the fragments feed with since=t, page by
// page (rel="next", loops refused), fetches fragments a few at a time
// (Config.Fetchers) across page boundaries, up to two pages and 32 MiB
// of fragments ahead of the store, so that a page's commit does not
// stall the fetching (feedPages), applies them in updated order in batches
// of up to 1,000 (graphstore.ApplyFragments: one transaction, so one
// fsync, per batch in the embedded store; one ApplyFragment each in a
// store without batches), and advances t to the newest updated of the
// page once the whole page is applied (SD-CLI-7..12). When the page's
// response advertises the bulk fragment request of this toolkit's own
// server (a Link header; package sdshare/internal/fragbulk), the
// fragments are fetched a batch at a time in one request each, every
// one checked as a GET's body would be, and those a batch did not bring
// whole and right by their own GETs (bulk.go; Config.NoBulk turns it
// off).
//
// # Why t is safe across crashes
//
// The store commits each batch before the state records t, and since
// is inclusive, so a crash (kill -9) between the two only means some
// fragments are applied again on the next run, and applying a fragment
// twice has the effect of once. Entries whose updated equals t are never
// dropped client-side (SD-CLI-11). When an entry fails (its fragment
// cannot be fetched or parsed, or the entry is malformed per SD-CLI-14),
// t is held at that entry's updated (or not moved at all when the entry
// has none), so the next run asks for it again.
//
// t advances after each page, which assumes the server pages in updated
// order (RFC 5005 pages of the fragments feed, oldest first, as our
// server does). Should a page hold an entry older than the t already
// recorded, the client still applies it, but a crash before the run ends
// could then lose it: the report counts such pages (OutOfOrder).
//
// # Against a hostile server
//
// Every request and redirect stays on the overview feed's authority
// unless Config.AllowHosts allows more (internal/origin, sync's policy). A
// fragment is applied only when all its statements are about its entry's
// resource or the blank nodes it reaches (sdshare.Split, the push
// receiver's rule). Loop detection keeps 8 bytes a page, and pages,
// feed bytes per page and per run, and URL lengths are bounded.
package client
