// Package hub is a WebSub hub (W3C WebSub, 2018) for ResourceSync Change
// Notification: the standalone `resourcesync hub` and the hub embedded in a
// Source are both this package.
//
// Rule IDs (WS-*, RS-WS-*) refer to shared/conformance/WEBSUB.md and
// RESOURCESYNC.md §11.
//
// # Model: fan-out by cursor
//
// Every notification is appended once to its topic's append-only log (a
// bbolt bucket per topic, keyed by an 8-byte big-endian sequence number);
// Publish and the publish endpoint answer only after that append is
// committed (fsync'd). Each subscription keeps a cursor: the last sequence
// number delivered. One goroutine per active subscription delivers the
// entries after its cursor, one at a time and in order, so a slow or
// failing subscriber only ever delays itself. On a 2xx the cursor advances
// in memory and is persisted by a flusher every FlushInterval, so a crash
// redelivers at most that window: delivery is at-least-once and FIFO per
// subscription (a receiver may de-duplicate with X-Hub-Delivery-Id). A
// failed delivery is retried with exponential backoff and jitter
// (RetrySchedule, honouring Retry-After) until GiveUpAfter has passed since
// its first failure; it then goes to the dead-letter store (DeadLetters,
// Replay) and the cursor moves on: the subscription stays until its lease
// ends (WS-HUB-28). 410 Gone ends the subscription (WS-HUB-27). Log entries
// every subscription has passed are pruned.
//
// Subscription requests are validated synchronously (4xx with a plain-text
// reason) and answered 202; the verification of intent is a durable job
// (bucket "verif") run asynchronously with its own retries (WS-HUB-5,
// WS-HUB-17). A subscription's state changes only when the verification
// succeeds (WS-HUB-9).
//
// # Outbound requests
//
// Verification, delivery and thin-ping fetches go through one dialer that
// resolves the host, refuses loopback, private, link-local, shared,
// multicast and reserved addresses (unless AllowPrivateCallbacks) and checks
// again in net.Dialer.Control on the address actually dialled, so neither
// DNS rebinding nor odd IP spellings get through. Callbacks are also
// checked when the subscription request arrives, before anything is
// dialled. Redirects are never followed for verification and delivery; a
// thin-ping fetch follows at most 3, each re-checked. Bodies read from the
// network are size-capped.
package hub
