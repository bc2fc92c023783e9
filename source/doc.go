// Package source runs a ResourceSync Source over one or more directories:
// it keeps each set's state (inventory and change journal, package
// source/store) up to date with the directory (package source/scan),
// publishes the documents (package source/publish) and serves documents
// and resources over HTTP (package source/server). Rescans run at an
// interval, on filesystem events, or on demand; each Update is a scan of
// every set followed by a publish, so documents always describe a state
// the journal has durably recorded.
//
// # Replicas
//
// With Config.OpenStore returning a store.Shared (package
// source/store/pgstore: one PostgreSQL database), several Source processes
// serve the same directories (shared storage) behind one base URL. Each
// set has one scanner at a time, the holder of its Lead role: it scans,
// journals and publishes (publish.Config.Replicas), and stops writing as
// soon as the role is lost. Every process renders its own copy of the
// documents from the store and the meta the leader recorded, on each Watch
// signal, byte for byte what the leader wrote (publish.Set.Follow). A
// process that takes a role over renders, then scans the whole directory
// against the shared inventory, so the journal continues without a gap or
// a duplicate. Dumps and archives are off with shared stores. See Run,
// LeadAll and Render.
package source
