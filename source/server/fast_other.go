//go:build !linux

package server

import (
	"net/http"

	"github.com/resourcesync-go/resourcesync/source/store"
)

// serveSmall is the Linux fast path; elsewhere the general path serves
// every resource.
func serveSmall(http.ResponseWriter, *http.Request, string, string, *store.Resource, *Set) bool {
	return false
}
