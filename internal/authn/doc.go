// Package authn is the one credential check of the servers (serve, hub,
// sdshare serve, sdshare receive): bearer tokens from a file (or the
// environment) and HTTP basic against an Apache htpasswd file of bcrypt
// hashes.
//
// The policy, in one place:
//
//   - A token file holds one token a line (blank lines and lines starting
//     with '#' are skipped); tokens are compared as SHA-256 digests in
//     constant time, so neither their content nor their length leaks.
//   - An htpasswd file holds USER:HASH lines whose hashes are bcrypt
//     ($2y$, $2a$, $2b$: "htpasswd -B"); any other format (MD5 $apr1$,
//     {SHA}, crypt, plain text) is refused when the file is read, naming
//     the line, rather than silently accepted.
//   - A request without credentials gets 401 and a challenge per scheme
//     configured (WWW-Authenticate: Bearer realm=..., Basic realm=...,
//     charset="UTF-8"); nothing the client sent is echoed.
//   - A credential that was verified once is remembered (a keyed digest
//     of it, at most 1024, forgotten when the files change), so bcrypt's
//     tens of milliseconds are spent once per client credential, and a
//     known client is never refused by the failure budget.
//   - Every other check first takes a token from a Budget, given back
//     when the check succeeds; without one the answer is 429 with
//     Retry-After, unchecked. Each client has its own budget (10 at once
//     then one a second; a client is an IPv4 address or an IPv6 /64; at
//     most 10,000 are remembered, the least recently used forgotten). A
//     password check (bcrypt) also takes from the budget of all clients
//     together (100 then 20 a second); a token check, a digest compared,
//     does not: guessers on other addresses so never make a valid token
//     wait. bcrypt comparisons run at most MaxBcrypt at a time, the
//     clients waiting for one taking turns: a new login waits for at most
//     one comparison of each client waiting, not for a whole flood queued
//     ahead of it. A flood of wrong passwords so costs a bounded number of
//     bcrypt runs, on a bounded number of cores. The hub's admin login
//     uses the same Budget (TakeClient: a token compared).
//   - The files are read again when their modification time, size or
//     identity changes (checked at most every Config.CheckEvery, 2 s by
//     default, on the next request): replace them (e.g. write and rename)
//     and the next requests use the new credentials; no signal needed,
//     which works alike on every OS. A file that is then missing, empty
//     (nothing but blank lines and comments) or malformed revokes the
//     credentials it held, logged as an ERROR: nobody gets in with them
//     until it is fixed (fail closed). Emptying or deleting the file is
//     what an operator does in an incident, and a file broken mid-edit
//     may be one whose leaked line was being removed. At start such a
//     file is an error. Config.Tokens are not from a file and stay.
package authn
