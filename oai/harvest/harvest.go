package harvest

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// Config says which repository to harvest and where to keep its records.
type Config struct {
	// Endpoint is the repository's base URL (without ?verb=).
	Endpoint string
	// Prefixes are the metadata prefixes harvested; none means oai_dc.
	Prefixes []string
	// Sets are the set specs harvested; none means the whole repository.
	Sets []string
	// Dir holds the record files (RecordPath under it). The Source
	// publishes it; nothing else should write there.
	Dir string
	// State is the directory of the harvest state (created if missing);
	// it must not be inside Dir.
	State string
	// Client makes the requests; nil means a default client.
	Client *http.Client
	// FullEvery is the interval of the full ListIdentifiers pass that
	// finds deletions a repository with deletedRecord=no does not report;
	// 0 means 24h. Repositories that report deletions get none.
	FullEvery time.Duration
	// Log receives warnings (malformed records, retries); nil discards.
	Log *slog.Logger
	// Committed is called after each page's files are written and
	// durable, with the slash-separated paths (relative to Dir) written
	// or removed, before the harvest state moves past the page. serve
	// passes them to source.Source.UpdatePaths, so the journal records a
	// page at once. An error stops the harvest; the page is harvested
	// again next time.
	Committed func(ctx context.Context, paths []string) error
}

// Stats counts what one Harvest did.
type Stats struct {
	Pages     int           // responses read
	Written   int           // record files created or changed
	Unchanged int           // records whose file already had their bytes
	Deleted   int           // record files removed
	Malformed int           // records skipped with a warning
	Full      bool          // this harvest listed everything (first harvest or full pass)
	Duration  time.Duration // wall time
}

// Status is what the serve status page shows of the harvester.
type Status struct {
	Endpoint    string
	Granularity string    // from Identify
	LastStart   time.Time // start of the last completed harvest
	LastEnd     time.Time
	LastStats   Stats
	Records     int64  // record files in Dir
	LastError   string // of the last failed harvest, "" after a success
	Running     bool
}

// Harvester harvests one repository into Config.Dir. Its methods are safe
// for concurrent use; Harvest calls are serialised.
type Harvester struct {
	cfg Config
}

// New checks cfg and opens the harvest state.
func New(cfg Config) (*Harvester, error) {
	panic("not implemented")
}

// Harvest runs one harvest: everything the first time (and on a full
// pass), the changes since the last completed harvest otherwise. A harvest
// interrupted (error, cancellation, kill -9) resumes from its last
// committed page.
func (h *Harvester) Harvest(ctx context.Context) (Stats, error) {
	panic("not implemented")
}

// Status reports the last harvest.
func (h *Harvester) Status() Status {
	panic("not implemented")
}

// Close releases the harvest state.
func (h *Harvester) Close() error {
	panic("not implemented")
}

// RecordPath is where the record of identifier in prefix is kept, relative
// to Config.Dir and slash-separated: PREFIX/HH/ESCAPED.xml, where HH is
// the first byte of the SHA-256 of the identifier in hex (256 directories,
// so that no directory listing grows past a few thousand entries at a
// million records) and ESCAPED the identifier with '%', '/', '\\',
// control bytes, '<', '>', '"', '|', '?', '*', a leading '.' and (on
// Windows only, which forbids it in names) ':' percent-encoded; the ':' of
// the usual oai:host:id identifiers thus stays readable in the URL.
// ParseRecordPath reverses it.
func RecordPath(identifier, prefix string) string {
	panic("not implemented")
}

// ParseRecordPath returns the identifier and prefix of a RecordPath.
func ParseRecordPath(rel string) (identifier, prefix string, ok bool) {
	panic("not implemented")
}
