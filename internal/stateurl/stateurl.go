package stateurl

import "github.com/resourcesync-go/resourcesync/internal/location"

// IsPostgres reports whether s is a PostgreSQL URL.
func IsPostgres(s string) bool { return location.IsPostgres(s) }

// Redact hides the passwords of a store URL for messages
// (location.Redact).
func Redact(u string) string { return location.Redact(u) }
