// Package stateurl keeps two helpers of the store URLs for the callers
// that used them before internal/location: IsPostgres and Redact. The
// grammar and the registries are internal/location's; new code uses it.
package stateurl
