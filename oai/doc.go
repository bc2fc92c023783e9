// Package oai holds what both directions of the OAI-PMH 2.0 bridge share:
// the protocol's namespaces, verbs, error codes, datestamps at the two
// granularities and a record's header.
//
// The harvester (package oai/harvest) keeps an OAI-PMH repository as a
// directory of record files that a ResourceSync Source publishes; the data
// provider (package oai/provider) offers any collection the toolkit
// publishes or mirrors to OAI-PMH harvesters.
//
// Specification: http://www.openarchives.org/OAI/2.0/openarchivesprotocol.htm
package oai
