// Package aggstoreurl opens the aggregator's state (an aggstore.Store)
// from the --state location of the command:
//
//	""                            the bolt file ROOT/.aggregate/aggregate.db
//	DIR, file:///DIR, bolt:DIR    the bolt file DIR/aggregate.db
//	postgres://... (or postgresql://...)  PostgreSQL (several nodes)
//
// ROOT is the aggregator's root directory (the mirrors' parent). A
// missing directory is created, mode 0700. The grammar is
// internal/location's; each scheme registers its Opener once (Register):
// an unknown scheme is ErrScheme, naming the known ones. The name Open
// returns is for messages: a file path, or the URL with its passwords
// hidden.
package aggstoreurl
