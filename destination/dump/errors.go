package dump

import (
	"errors"
	"strconv"
)

// Errors matched with errors.Is on what Open, NewReader and Each return.
// Each is wrapped in an *Error that names the package and the member.
var (
	// ErrUnsafePath: a member name or manifest path that is empty, absolute,
	// has a drive letter, a backslash, a NUL, or a "..", "." or empty
	// segment.
	ErrUnsafePath = errors.New("unsafe path")
	// ErrSymlink: a member whose mode (external attributes) is a symbolic link.
	ErrSymlink = errors.New("member is a symbolic link")
	// ErrNotRegular: a directory named as a file by the manifest, or a
	// member that is a device, pipe, socket or other non-regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrZipBomb: a member whose declared uncompressed size is more than
	// Limits.MaxRatio times its compressed size, or whose data overlaps
	// another member's (many entries inflating one compressed kernel).
	ErrZipBomb = errors.New("zip bomb")
	// ErrTooLarge: more members, a larger member, a larger manifest or a
	// larger total than Limits allow (declared sizes).
	ErrTooLarge = errors.New("too large")
	// ErrSizeMismatch: a member's data inflates to more or fewer bytes than
	// its header declares (a lying header); found while reading.
	ErrSizeMismatch = errors.New("size differs from the declared size")
	// ErrCorrupt: compressed data that does not decode, a wrong CRC-32, or
	// data outside the archive.
	ErrCorrupt = errors.New("corrupt member")
	// ErrUnsupported: a member named by the manifest that is encrypted or
	// uses a compression method other than store or deflate.
	ErrUnsupported = errors.New("unsupported compression or encryption")
	// ErrNoManifest: no regular member named exactly manifest.xml at the root.
	ErrNoManifest = errors.New("no manifest.xml at the root of the package")
	// ErrManifest: the manifest is not a dump manifest (wrong root or
	// capability, a syntax error, an entry without a path).
	ErrManifest = errors.New("invalid manifest")
	// ErrMissingMember: a manifest entry names a member the package lacks.
	ErrMissingMember = errors.New("member named by the manifest is missing")
	// ErrDuplicate: two members with the same name.
	ErrDuplicate = errors.New("duplicate member")
	// ErrFormat: the file is not a readable ZIP archive.
	ErrFormat = errors.New("not a valid ZIP archive")
)

// Error is a refusal of a package or a failure to read one of its members.
type Error struct {
	Package string // the package's file name, or "" for NewReader
	Member  string // the member's name; "" for the whole package or a manifest path
	Path    string // the manifest path (rs:md or rs:ln path) the error is about, as written
	Err     error  // one of the Err* sentinels
	Detail  string // what exactly; may be empty
	Cause   error  // underlying error (a zip, flate or rs error); may be nil
}

func (e *Error) Error() string {
	s := "dump"
	if e.Package != "" {
		s += " " + e.Package
	}
	// Quoted: hostile names carry NUL, control or terminal escape bytes.
	switch {
	case e.Path != "":
		s += ": manifest path " + strconv.Quote(e.Path)
	case e.Member != "":
		s += ": member " + strconv.Quote(e.Member)
	}
	s += ": " + e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap makes both the sentinel and the cause matchable.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}
