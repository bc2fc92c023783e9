// Package oaireal runs OAI-PMH data providers that nobody in this project
// wrote, on loopback, for the harvester's tests (issue 21, section 3):
//
//   - Static: HTTP::OAI's static repository gateway (Debian
//     libhttp-oai-perl, examples/oai_static_gateway.pl, copied with a
//     two-line patch into testdata) run as CGI through net/http/cgi over a
//     static repository file this package writes from Go. Set replaces the
//     records between harvests (updates, additions, removals). The static
//     repository format has no deleted records (deletedRecord is always
//     "no"), no sets, no resumption tokens and day granularity only: a
//     record that disappears is just gone, and only a full ListIdentifiers
//     pass notices. The gateway also ignores from/until (every harvest gets
//     every record) and answers ListSets with noSetHierarchy.
//
//   - Replay: a server of responses recorded from real repositories (DSpace,
//     ArchivesSpace, arXiv; testdata/recorded, provenance in
//     testdata/README.md). It serves the recorded records as a repository
//     (all six verbs, from/until, set, pages with resumption tokens carrying
//     completeListSize, cursor and expirationDate) and adds what real
//     repositories do to a harvester: 503 with Retry-After, expired tokens,
//     deleted records, malformed records, records changed between harvests.
//
//   - Catmandu and OAIPMH run two real harvesters (Catmandu's OAI importer,
//     HTTP::OAI's oai_pmh) against any loopback URL, for tests of our own
//     data provider too.
//
// All need software from Debian (perl with HTTP::OAI for Static; the
// self-tests also run Catmandu and HTTP::OAI's oai_pmh as harvesters). On
// Linux a missing package fails the test with the apt-get line that
// installs it (scripts/test.sh installs them); elsewhere the test is
// skipped.
package oaireal
