// Package oai holds what both directions of the OAI-PMH 2.0 bridge share:
// the protocol's namespaces, verbs, error codes, datestamps at the two
// granularities and a record's header.
//
// The harvester (package oai/harvest) keeps an OAI-PMH repository as a
// directory of record files that a ResourceSync Source publishes, and
// package oai/oaisource runs it into a source.Source (serve --oai-pmh);
// the data provider (package oai/provider) offers any collection the
// toolkit publishes or mirrors to OAI-PMH harvesters, and package
// oai/provider/readstore reads a Source's embedded state for it while
// another process writes it (oai serve).
//
// Specification: http://www.openarchives.org/OAI/2.0/openarchivesprotocol.htm
package oai
