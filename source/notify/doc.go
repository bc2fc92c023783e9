// Package notify publishes a Source's changes as ResourceSync Change
// Notifications (capability="change-notification") to a WebSub hub.
//
// Each set is one channel (topic). A Notifier reads the set's change
// journal from the last record it notified, encodes the records oldest
// first into payloads of at most MaxEntries entries whose from/until are
// contiguous and non-overlapping (RS-CN-2: each payload's from is the
// previous payload's until), and hands each to a Publisher: the embedded
// hub in-process, or an external hub over HTTP (RS-WS-2). The position is
// stored in the set's state only after the hub acknowledged, so a
// notification that could not be published is sent again by the next
// Notify, and nothing is lost across restarts (delivery is at least once;
// subscribers ignore what they already applied).
package notify
