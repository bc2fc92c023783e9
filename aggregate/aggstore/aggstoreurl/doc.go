// Package aggstoreurl opens the aggregator's state (an aggstore.Store)
// from the --state URL of the command:
//
//	""                       the bolt file ROOT/.aggregate/aggregate.db
//	bolt:DIR                 the bolt file DIR/aggregate.db
//	postgres://... (or postgresql://...)  PostgreSQL (several nodes)
//
// ROOT is the aggregator's root directory (the mirrors' parent). A
// missing directory is created, mode 0700. Anything else is an error
// naming the forms above. The name Open returns is for messages: a file
// path, or the URL with its passwords hidden (internal/stateurl).
package aggstoreurl
