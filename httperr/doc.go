// Package httperr is the one HTTP status error of the project's clients:
// every client here (the destination's document Getter and resource
// Fetcher, the SDShare client, the SDShare push sender, the SPARQL graph
// store, the validator and the WebSub subscriber) reports an answer other
// than the one it expected as a *StatusError, or as an error that wraps
// one, so that a single errors.As serves them all:
//
//	var se *httperr.StatusError
//	if errors.As(err, &se) && se.Code == http.StatusNotFound { … }
//
// The packages' own names for it (fetch.StatusError, discover.StatusError,
// client.StatusError, push.StatusError) are aliases of this type;
// sparql.EndpointError, subscriber.HubError and the validator's errors
// wrap one.
//
// A StatusError also has a StatusCode method, by which the project's retry
// policy judges whether the request is worth repeating.
package httperr
