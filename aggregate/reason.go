package aggregate

import (
	"context"
	"errors"
	"net"
	"net/http"
	"syscall"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/discover"
	"github.com/resourcesync-go/resourcesync/destination/dump"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/internal/boltdb"
	"github.com/resourcesync-go/resourcesync/internal/origin"
	"github.com/resourcesync-go/resourcesync/internal/watchdog"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/sdshare"
	"github.com/resourcesync-go/resourcesync/sdshare/atom"
	"github.com/resourcesync-go/resourcesync/sdshare/client"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// hostile are the errors of a Source that sends what no honest Source
// would: documents that are malformed or too large, redirects off its
// authority, loops, paths outside DEST, fragments about other resources.
var hostile = []error{
	origin.ErrOffOrigin,
	client.ErrFeedLoop, client.ErrTooManyPages, client.ErrRunFeedBytes, client.ErrURLTooLong,
	client.ErrTooLarge, client.ErrMalformedEntry,
	atom.ErrSyntax, atom.ErrNotAtom, atom.ErrTooLarge,
	sdshare.ErrOutOfScope,
	graphstore.ErrInvalid, // statements no store can hold (sparql.ErrInvalidTerm too)
	fetch.ErrOutsideDir, discover.ErrTooLarge,
	rdf.ErrLimit,
	discover.ErrNotResourceSync, discover.ErrNoCapability,
	rs.ErrSyntax, rs.ErrDTD, rs.ErrEntity, rs.ErrDepth, rs.ErrAttrs, rs.ErrTokenTooLarge,
	rs.ErrDocumentTooLarge, rs.ErrInvalidUTF8, rs.ErrInvalidChar, rs.ErrEncoding, rs.ErrTruncated,
	rs.ErrRoot, rs.ErrNamespace, rs.ErrTooManyLinks,
	destination.ErrOutsideAuthority, destination.ErrOutsideBase, destination.ErrUnmappable,
	destination.ErrReserved, destination.ErrPathCollision, destination.ErrSourceDocument,
}

// classify returns the Reason* class of the error that ended a run (""
// for nil): of a Destination's run, of an SDShare run, or of a graph
// store. The local causes come first (the DEST or the store is in use or
// unusable: nothing the Source did), then the Source's hostile answers,
// its silence, its absence and its HTTP errors, in that order, so an
// error that wraps several (a discovery error wrapping a refused
// connection) gets the most specific class. A discovery error with none
// of these causes (no set of that name, no Resource List, an overview
// feed listing no collection) is a line that leads to no usable Source:
// ReasonConfig. A graph store's failure (errGraphStore: the endpoint is
// down, answers 500, ...) is ReasonState, not the Source's reason, unless
// it refused the Source's statements (graphstore.ErrInvalid: hostile).
func classify(err error) string {
	if err == nil {
		return ""
	}
	var (
		status *httperr.StatusError
		rsSyn  *rs.SyntaxError
		rdfSyn *rdf.SyntaxError
		dumpE  *dump.Error
		netE   net.Error
		dnsE   *net.DNSError
		opE    *net.OpError
	)
	switch {
	case errors.Is(err, destination.ErrLocked), errors.Is(err, graphstore.ErrLocked),
		errors.Is(err, client.ErrStateLocked), errors.Is(err, boltdb.ErrLocked):
		return ReasonLocked
	case errors.Is(err, destination.ErrState), errors.Is(err, client.ErrStateCorrupt),
		errors.Is(err, graphstore.ErrCorrupt), errors.Is(err, graphstore.ErrClosed),
		errors.Is(err, errGraphStore) && !errors.Is(err, graphstore.ErrInvalid):
		return ReasonState
	case isAny(err, hostile), errors.As(err, &rsSyn), errors.As(err, &rdfSyn), errors.As(err, &dumpE):
		return ReasonHostile
	case errors.Is(err, watchdog.ErrStalled), errors.Is(err, watchdog.ErrTooSlow),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, http.ErrHandlerTimeout),
		errors.As(err, &netE) && netE.Timeout():
		return ReasonStalled
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH),
		errors.As(err, &dnsE), errors.As(err, &opE) && opE.Op == "dial":
		return ReasonUnreachable
	case errors.As(err, &status):
		if status.Code == http.StatusUnauthorized || status.Code == http.StatusForbidden {
			return ReasonAuth
		}
		return ReasonHTTP
	case errors.Is(err, destination.ErrDiscovery), errors.Is(err, client.ErrDiscovery),
		errors.Is(err, destination.ErrDeleteLimit):
		return ReasonConfig
	}
	return ReasonError
}

func isAny(err error, targets []error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
