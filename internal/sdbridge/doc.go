// Package sdbridge publishes SDShare collections as ResourceSync: each
// resource's fragment (SD-SRV-26, as canonical N-Triples) becomes one file
// in a directory per collection, which the ResourceSync Source (package
// source) scans and publishes like any other collection — hashes, lengths,
// Resource and Change Lists, dumps and change notifications through the
// hub — so a ResourceSync Destination can mirror an SDShare collection.
//
// The bridge follows the collection's change journal with a cursor kept in
// the collection's own state (meta key MetaCursor). Every step is
// idempotent: a file is written from the resource's current fragment (never
// from a past one), and removed only when the resource is gone from the
// inventory, so replaying records after a crash converges on the same tree.
// Files are written to a temporary directory beside the sets and renamed
// into place, so the Source's scanner never sees half a file.
package sdbridge
