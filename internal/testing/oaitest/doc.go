// Package oaitest is a programmable OAI-PMH 2.0 data provider for tests:
// a real HTTP server on 127.0.0.1 (httptest) answering all six verbs from
// records the test adds, updates and deletes, stamped by a clock the test
// controls.
//
// It has what harvesters must cope with: day or second granularity,
// deletedRecord persistent, transient or no, pages of a chosen size with
// resumptionTokens carrying expirationDate and completeListSize, tokens
// that expire on demand (badResumptionToken), 503 answers with Retry-After
// for the next N requests, malformed records (bad XML in the metadata,
// invalid UTF-8, a header without identifier), from/until at the
// granularity, noRecordsMatch, and a hook run before each request so that
// a test can change the repository in the middle of a list.
//
// Records are compact: Generate adds any number of records produced from
// their number on demand (100,000 cost a few megabytes), so benchmarks can
// harvest large repositories.
//
//	s := oaitest.New(t, oaitest.Options{PageSize: 50})
//	s.Put("oai:x:1", []string{"a"}, map[string]string{"oai_dc": `<oai_dc:dc ...>...</oai_dc:dc>`})
//	s.Advance(time.Hour)
//	s.Delete("oai:x:1")
//	harvest from s.URL
package oaitest
