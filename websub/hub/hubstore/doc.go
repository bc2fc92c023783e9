// Package hubstore defines the state of a WebSub hub (package
// websub/hub) as an interface, Store, so that the hub runs on the embedded
// bbolt file (package boltstore, the default), in memory (package
// memstore, tests) or on PostgreSQL (package pgstore), and so that several
// hub processes ("nodes") can share one state and the work on it.
//
// # Topic logs
//
// Every notification is appended once to its topic's log and numbered
// 1, 2, 3, ... per topic: Append returns the previous head + 1, with no
// gap and no reuse, whichever node appends (the head is kept apart from
// the entries, so pruning never lowers it). Append is durable when it
// returns (fsync'd or committed). Entries reads forward from a cursor in
// pages of at most max entries; Prune deletes the entries below a
// sequence number, in bounded steps.
//
// # Subscriptions and delivery state
//
// A subscription is identified by its Key (the hub's normalised topic and
// callback). Its delivery state is the cursor (last seq delivered or
// dead-lettered, never moving backwards) and the retry state of the entry
// after it. Subscribe and Unsubscribe apply a verified request and delete
// its job in one transaction (WS-HUB-9); a new subscription starts at the
// topic's head, so it receives only what is published after it.
//
// # Claims and fencing
//
// In a cluster each subscription is delivered by one node at a time: the
// node that holds its claim. Claim renews a node's claims for ttl and takes
// unheld or expired ones (at most max more); it returns everything the node
// holds with its durable cursor, and how many nodes are alive and how many
// subscriptions exist, so that each node aims at its fair share and
// Releases the excess when a node joins. A node that is not returned a
// subscription, or whose lease ran out before it renewed, must stop
// delivering it. UpdateCursors and AddDeadLetter write only for the current
// holder: a node that lost a claim cannot move the cursor, backwards or
// forwards (fencing), so the new holder resumes from the durable cursor
// and delivery stays at-least-once and in order per subscription.
// Verification jobs are claimed the same way (ClaimJobs). Lease times
// are the store's clock (PostgreSQL: the server's now()); job due times
// are the caller's clock (Job.NextAt compared with the now passed in).
// Close does not release claims (a crashed process does not either);
// Release does. Single-process stores keep claims in memory with the same
// semantics, so the hub runs the same code on one node or many.
//
// # Watch
//
// Watch tells every handle (node) that entries were appended, that
// subscriptions changed or that jobs were added, coalesced, so that nodes
// need not poll: on EventEntries a node reads the heads, on
// EventSubscriptions it claims, on EventJobs it claims jobs. Claims that
// expire are not signalled: nodes find them when they renew (every ttl/3).
//
// # Mapping to PostgreSQL
//
// The interface is shaped so that every call is one statement or a short
// transaction on an index:
//
//	hub_topics(topic PK, head)                     Append: UPDATE ... SET head=head+1 RETURNING head; INSERT entry
//	hub_entries(topic, seq, ...) PK(topic, seq)    Entries: range scan LIMIT max; Prune: DELETE seq < below
//	hub_nodes(node PK, lease_until)                Claim: upsert heartbeat; count live
//	hub_subs(key PK, topic, ..., cursor, holder, lease_until) index (topic), (holder)
//	  Claim: UPDATE ... SET lease_until=now()+ttl WHERE holder=$node RETURNING *;
//	         UPDATE ... WHERE key IN (SELECT key ... WHERE holder IS NULL OR lease_until<now()
//	                                  LIMIT max FOR UPDATE SKIP LOCKED) RETURNING *
//	  UpdateCursors: UPDATE ... FROM unnest(...) WHERE holder=$node AND lease_until>now()
//	                 SET cursor=greatest(cursor,$c) RETURNING key
//	hub_jobs(id PK, key, host, next_at, holder, lease_until) index (key, id), (host)
//	hub_dead(id PK, ...)
//	Watch: LISTEN/NOTIFY with the Event as payload.
//
// # Times
//
// Implementations keep times to the microsecond at least and return them
// in UTC; the zero time stays zero.
//
// # Implementations
//
// Any implementation must pass hubstoretest.Run, and one that can be
// opened twice on one state (memstore, pgstore) hubstoretest.RunCluster.
package hubstore
