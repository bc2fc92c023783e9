// Package wspush is the live push of changes over WebSocket: a Source
// (serve) or a hub streams each change as an Activity Streams activity
// (feed/activity.Activity, one JSON text frame per change), and a mirror
// behind NAT receives it without a public callback URL.
//
// The handshake follows the Solid Notifications Protocol's
// WebSocketChannel2023: a client POSTs a subscription request (JSON-LD,
// type WebSocketChannel2023, naming a topic: a set's Capability List, the
// Source's base URL or one resource's URL) to the subscription endpoint,
// which the Source advertises with rel=SubscriptionRel (an rs:ln in each
// Capability List, which older ResourceSync clients ignore, and a Link
// header). The answer is a channel description whose receiveFrom is a
// ws:// or wss:// URL holding an unguessable token; the token is good
// for one connection and expires after Config.TokenTTL. Only the
// subscription needs credentials: the token stands for them, as in Solid,
// because browsers cannot set an Authorization header on a WebSocket.
//
// Everything is bounded, because a push must never slow the journal that
// feeds it: Publish never blocks; each connection has a send buffer of
// Config.SendBuffer frames, and a connection whose buffer is full (a
// reader that does not keep up, or never reads) is closed and must catch
// up from the Change Lists, as after any gap. Connections and outstanding
// tokens are capped (Config.MaxConns, Config.MaxPending), reads are
// limited to small control frames (a client sends nothing), pings detect
// dead peers, and browsers from other origins are refused unless
// Config.OriginPatterns names them.
//
// Delivery is at most once and in order per connection; a subscriber
// learns of a gap only by the connection ending, and then catches up from
// the Change Lists (destination/follow does).
package wspush
