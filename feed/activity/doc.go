// Package activity holds the Activity Streams 2.0 shapes shared by the
// change feeds this module publishes and consumes: IIIF Change Discovery
// 1.0 (https://iiif.io/api/discovery/1.0/) and the Activity Streams form of
// LDES members (SEMIC's Cultural Heritage Event Streams), and the live
// WebSocket push, which sends each change as the same Activity.
//
// It is vocabulary only: no I/O, no journal, no HTTP. The publishers
// (package feed and its subpackages), the consumer and the push transport
// all encode and decode through these types, so one change has one JSON
// form wherever it travels.
package activity
