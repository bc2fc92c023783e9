// Package httpserver is the one policy every HTTP server of the project
// runs under: timeouts for each phase of a connection's life and a cap on
// concurrent connections.
//
// A net/http server with only ReadHeaderTimeout keeps an idle keep-alive
// connection open forever; a thousand of them use up a process's 1,024
// descriptors and no new client is accepted. Here:
//
//   - a connection idle between requests is closed after IdleTimeout;
//   - request headers must arrive within ReadHeaderTimeout;
//   - a request body fails when no byte arrives for ReadStall, or when it
//     is not complete after ReadTimeout (0: no such bound);
//   - a response fails when no byte can be written for WriteStall. The
//     deadline moves with every byte written, not with each response, so
//     that a long download at a slow but steady rate completes;
//   - at most MaxConns connections are open (by default derived from the
//     process's descriptor limit, RLIMIT_NOFILE). At the cap, the
//     connection that has waited longest without a request in progress
//     (idle keep-alive, or still sending its request headers) is closed
//     to make room; when every connection is busy with a request, new
//     ones wait in the listen queue until one ends. A flood of idle or
//     slowloris connections thus cannot keep a legitimate client out.
//
// Request bodies are timed with per-read deadlines set by the handler
// wrapper, not by http.Server.ReadTimeout, whose deadline stays on the
// connection during the handler: it would cancel the request's context
// of a long response when it expires.
package httpserver
