package aggregate

import (
	"errors"
	"time"
)

// Kinds of Source.
const (
	KindResourceSync = "resourcesync"
	KindSDShare      = "sdshare"
)

// ErrSources: the sources file (or URL) is malformed; the message names
// the line. The aggregator keeps its previous Sources when a reload fails.
var ErrSources = errors.New("sources")

// Source is one line of the sources file (ParseSources reads it):
//
//	# comment
//	URL DEST [--option value | --option=value | --flag ...]  # comment
//
// Fields are separated by blanks; a field may be double-quoted, wholly or
// in part (with \" and \\ inside), to hold blanks, a leading # or a
// leading --. A # after a blank, outside quotes, starts a comment. URL is
// an absolute http(s) URL. DEST is relative to the aggregator's --root,
// slash-separated, cleaned, never absolute, never "." or "..", never
// inside .resourcesync or .aggregate, and no DEST is another's or
// another's ancestor (compared without case, as macOS and Windows do).
// The options:
//
//	--poll-interval D        poll every D (default: aggregate's; also spelled --interval)
//	--follow                 subscribe to the Source's change notifications (WebSub) when it offers a hub; poll every --poll-interval meanwhile and as a fallback
//	--set NAME               only this set (repeatable; default every set)
//	--sdshare                URL is an SDShare overview feed: merged into the graph store, DEST keeps the client's state; excludes --follow, --set, --no-dumps, --max-delete, --no-delete and --allow-reset
//	--bearer-token-file FILE credentials by reference to a file (relative paths: to the sources file's directory; a list read from a URL names files only inside RemoteSources.FilesDir, by relative paths)
//	--netrc-file FILE        .netrc with HTTP basic credentials (likewise)
//	--ca-cert FILE           extra CA certificates (PEM; likewise)
//	--allow-host HOST[:PORT] as sync --allow-host (repeatable)
//	--max-delete N|P%        as sync --max-delete
//	--no-delete              keep files the Source deleted
//	--allow-reset            as sync --allow-reset: follow a Source that started afresh (deleting the mirror's files)
//	--no-dumps               never baseline from Resource Dumps
//	--base-url URL           as sync --base-url
//	--workers N              concurrent downloads within this Source's runs, 1 to 256 (default: aggregate --source-workers)
//	--timeout D              as sync --timeout
//	--include GLOB           as sync --include (repeatable; with --exclude and --filter-from, in the order given)
//	--exclude GLOB           as sync --exclude (repeatable)
//	--filter-from FILE       as sync --filter-from (a file as --bearer-token-file's; read at each run)
//	--force                  as sync --force: replace files not written by resourcesync, kept as NAME.resourcesync-old
//
// An unknown option, or one given twice (but the repeatable ones), is an
// error. A URL with user information is refused (credentials belong in a
// file). A list has at most MaxSourcesLines lines of at most
// MaxSourcesLine bytes, MaxSourcesSize bytes in all.
type Source struct {
	// ID identifies the Source in the aggregator's store, status and
	// events: its DEST as written in the file, cleaned.
	ID   string `json:"id"`
	URL  string `json:"url"`
	Dest string `json:"dest"` // = ID, relative to the root
	Kind string `json:"kind"` // KindResourceSync or KindSDShare
	// Interval between polls (0: the aggregator's default).
	Interval time.Duration `json:"interval_ns,omitempty"`
	Follow   bool          `json:"follow,omitempty"`
	Sets     []string      `json:"sets,omitempty"`
	// Credential files, absolute after parsing.
	BearerTokenFile string        `json:"bearer_token_file,omitempty"`
	NetrcFile       string        `json:"netrc_file,omitempty"`
	CACertFile      string        `json:"ca_cert,omitempty"`
	AllowHosts      []string      `json:"allow_hosts,omitempty"`
	MaxDelete       string        `json:"max_delete,omitempty"`
	NoDelete        bool          `json:"no_delete,omitempty"`
	AllowReset      bool          `json:"allow_reset,omitempty"`
	NoDumps         bool          `json:"no_dumps,omitempty"`
	BaseURL         string        `json:"base_url,omitempty"`
	Workers         int           `json:"workers,omitempty"`
	Timeout         time.Duration `json:"timeout_ns,omitempty"`
	// Filters are the line's --include, --exclude and --filter-from, in
	// their order, each "include GLOB", "exclude GLOB" or "filter-from
	// FILE" (absolute after parsing): see Filter.
	Filters []string `json:"filters,omitempty"`
	Force   bool     `json:"force,omitempty"`
	// Line is where the Source was defined (for messages).
	Line int `json:"line,omitempty"`
	// Typed is the URL as the line wrote it when it had no scheme
	// ("example.org/rs", taken as https://example.org/rs in URL; see
	// httpclient.AssumeHTTPS), for the command to say so; "" otherwise.
	Typed string `json:"typed,omitempty"`
}
