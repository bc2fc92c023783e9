// Package subscriber is the Destination's side of ResourceSync Change
// Notification over WebSub (shared/conformance/WEBSUB.md §1.8, WS-SUB-*;
// RESOURCESYNC.md §11, RS-CN/RS-WS).
//
// A Subscriber subscribes one callback URL to one topic (a change
// notification channel) at one hub:
//
//   - Subscribe posts hub.mode=subscribe and waits until the hub's
//     verification GET has been answered (or the hub denied it: ErrDenied).
//   - Handler answers the hub: verification GETs are confirmed only for a
//     pending or active subscription of the configured topic and mode (404
//     otherwise, WS-SUB-6); deliveries are checked (size, X-Hub-Signature when
//     a secret is set, payload is a change-notification urlset with from and
//     until), de-duplicated (X-Hub-Delivery-Id, else the payload digest),
//     acknowledged with 200 at once and handed to OnNotification one at a
//     time, in order of arrival, by a dispatcher goroutine (WS-SUB-9).
//   - Run keeps the subscription alive: it subscribes, renews at 80 % of the
//     granted lease, retries with backoff while the hub is unreachable, and
//     reports the hub's state through OnHubState so that the caller can fall
//     back to polling the Change Lists.
//   - Unsubscribe posts hub.mode=unsubscribe and waits for its verification.
//
// Discover finds a topic's hub and self URLs (WS-DISC-*); Channels reads
// them from a Capability List. Sequencer checks that notifications cover
// contiguous [from, until] intervals (RS-CN-2) and tells the caller when to
// reorder and when to catch up from the Change Lists.
//
// Answers to the hub (POLICY where WEBSUB.md leaves a choice):
//
//	200  delivery accepted (or a duplicate, ignored); also a payload that
//	     is not a change notification (not XML, not a urlset, wrong
//	     capability, from/until missing, an entry without loc/change): it
//	     is logged and dropped, because a hub that retries it in order
//	     would hold back every later notification, and the changes it
//	     carried surface as a from/until gap that the caller catches up
//	403  signature missing or invalid while a secret is set (WS-SUB-10)
//	410  the subscription was unsubscribed or denied here (WS-SUB-9)
//	413  payload larger than MaxPayloadBytes
//	503  the notification queue is full (Retry-After); the hub retries
package subscriber
