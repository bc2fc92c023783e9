// Package hub is a WebSub hub (W3C WebSub, 2018) for ResourceSync Change
// Notification: the standalone `resourcesync hub` and the hub embedded in a
// Source are both this package.
//
// Rule IDs (WS-*, RS-WS-*) refer to shared/conformance/WEBSUB.md and
// RESOURCESYNC.md §11.
//
// # Model: fan-out by cursor
//
// The hub's state is a hubstore.Store: the embedded bbolt file in
// StateDir by default (package hubstore/boltstore), or one passed in
// Config.Store (in memory, PostgreSQL). Every notification is appended once
// to its topic's append-only log, numbered per topic; Publish and the
// publish endpoint answer only after that append is committed. Each
// subscription keeps a cursor: the last sequence number delivered. A
// subscription with entries after its cursor waits in its callback host's
// queue; that host's workers (at most MaxConcurrentPerHost goroutines,
// started on demand, gone when the queue is empty) take one delivery for
// it at a time and queue it again at the back. So its entries go one at a
// time and in order, a slow or failing subscriber delays only itself and
// its host's other subscriptions by at most the share of one worker, a
// slow host never delays another, and 10,000 subscriptions are not 10,000
// goroutines. On a 2xx the cursor advances in memory and is persisted
// by a flusher every FlushInterval (or ten times the last flush's
// duration, if longer: with many subscriptions), in one batch, so a crash
// redelivers at most that window: delivery is at-least-once and FIFO per
// subscription (a receiver may de-duplicate with X-Hub-Delivery-Id).
//
// A fan-out reads nothing from the store per subscription: the entry is
// cached once (with its Link and delivery id headers), the topic's head is
// kept in memory, and deliveries to one host share MaxConcurrentPerHost
// kept-alive connections. A failed delivery is retried
// with exponential backoff and jitter (RetrySchedule, honouring
// Retry-After) until GiveUpAfter has passed since its first failure; it
// then goes to the dead-letter store (DeadLetters, Replay) and the cursor
// moves on: the subscription stays until its lease ends (WS-HUB-28). 410
// Gone ends the subscription (WS-HUB-27). Log entries every subscription
// has passed (by its stored cursor) are pruned.
//
// Subscription requests are validated synchronously (4xx with a plain-text
// reason) and answered 202; the verification of intent is a durable job
// run asynchronously with its own retries (WS-HUB-5, WS-HUB-17). A
// subscription's state changes only when the verification succeeds
// (WS-HUB-9).
//
// # Cluster
//
// Several hubs ("nodes", Config.Node) may share one state. Any node accepts
// subscriptions and publishes. A node delivers only the subscriptions it
// has claimed in the store: it renews its claims every ClaimTTL/3, takes
// its fair share of the subscriptions (their number over the live nodes),
// hands the excess over when a node joins, and learns of the other nodes'
// appends and subscription changes through Store.Watch instead of polling.
// Cursor writes are fenced: a node that lost a claim cannot move the
// cursor, and stops delivering. When a node dies its claims expire after
// ClaimTTL and the others resume its subscriptions from their stored
// cursors, so nothing is lost and order is kept (what the dead node
// delivered after its last flush is delivered again). Verification jobs
// are claimed the same way. A clean stop (Run's context ending) flushes
// and releases the claims, so the others take over at once.
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
