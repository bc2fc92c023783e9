// Package retry is the one retry policy and the one retry loop of the
// project's HTTP clients: which failures are worth a second attempt, how
// long to wait before it (exponential backoff with jitter, or what a
// Retry-After header asked for, capped), the parsing of Retry-After itself
// (delay-seconds or an HTTP-date, RFC 9110 §10.2.3), and Do, the loop that
// applies them (after rclone's pacer.Call: fn says whether to try again,
// the Policy says when, Permanent errors stop, Pending answers such as 202
// Accepted are waited out without counting).
//
// The document Getter, the resource Fetcher, the SDShare client, the
// SDShare push sender and the SPARQL graph store run their requests
// through Do; the hub's deliveries and verifications (durable schedules,
// not request loops) and the subscriber's (re)subscriptions use the
// policy's pieces, so they all agree on what is retryable and on how
// Retry-After is read. TestOneRetryLoop keeps hand-written retry loops out
// of every package that imports this one.
package retry
