// Package retry is the one retry policy of the project's HTTP clients:
// which failures are worth a second attempt, how long to wait before it
// (exponential backoff with jitter, or what a Retry-After header asked
// for, capped), and the parsing of Retry-After itself (delay-seconds or an
// HTTP-date, RFC 9110 §10.2.3).
//
// The document Getter, the resource Fetcher, the hub's deliveries and
// verifications and the subscriber's (re)subscriptions all use it, so
// they agree on what is retryable and on how Retry-After is read.
package retry
