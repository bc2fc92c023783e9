// Package dump reads a downloaded ResourceSync dump package (a ZIP file
// with a Resource Dump Manifest or Change Dump Manifest at /manifest.xml,
// §11.2 and §13.2) without trusting it.
//
//	p, err := dump.Open(file, dump.Limits{})
//	...
//	defer p.Close()
//	err = p.Each(ctx, func(e rs.Entry, r io.Reader) error {
//		if r == nil { // change="deleted": no bitstream
//			return remove(e.Loc)
//		}
//		_, err := fetch.Install(r, fetch.Request{Path: local(e.Loc),
//			Length: e.MD.Length, HasLength: e.MD.HasLength, Hashes: e.MD.Hashes})
//		return err
//	})
//
// The package only reads: it never creates files from member names. Where
// a bitstream goes is the caller's decision (from the entry's loc), and
// fetch.Install verifies its length and hashes against the manifest.
//
// # Safety rules
//
// Open checks the whole archive before anything is read, and refuses the
// whole package if any member — listed in the manifest or not — is
// hostile: a package that carries a "../" member was not made by a
// trustworthy Source, and a refusal before any file is installed leaves
// the Destination's copy as it was rather than half-updated. Refused:
//
//   - member names, and manifest paths after their leading "/" is
//     stripped, that are empty, absolute, start with a drive letter
//     ("C:"), contain a backslash or NUL, or have a "..", "." or empty
//     segment (ErrUnsafePath; "." and "a//b" are refused too, since two
//     spellings of one name would defeat the duplicate check);
//   - symbolic links (ErrSymlink) and devices, pipes, sockets
//     (ErrNotRegular), from the mode bits in the external attributes;
//   - two members with the same name (ErrDuplicate): readers disagree on
//     which one counts;
//   - more than MaxMembers members, a member declaring more than
//     MaxMemberBytes, members declaring more than MaxTotalBytes in total,
//     a manifest declaring more than MaxManifestBytes (ErrTooLarge);
//   - a member over 1 MiB whose declared uncompressed size is more than
//     MaxRatio times its compressed size (ErrZipBomb);
//   - a member whose compressed data overlap another member's, the
//     "overlapping files" bomb that inflates one kernel many times
//     (ErrZipBomb);
//   - data that extend past the end of the file (ErrCorrupt);
//   - manifest entries that declare more than MaxTotalBytes in all
//     (ErrTooLarge), or, past 1 MiB, more than MaxPackageRatio (200)
//     times the package's size (ErrZipBomb): each entry counts its
//     rs:md length (the member's size without one), so many members just
//     under the per-member ratio floor, or one member named by thousands
//     of entries, cannot inflate a small package to gigabytes.
//
// Then the manifest is decoded once (rs.Decoder, legacy drafts mapped as
// it maps them) and refused (ErrManifest) unless it is a urlset whose
// capability is resourcedump-manifest or changedump-manifest. Every entry
// other than a deletion must have a path naming a regular member
// (ErrMissingMember, ErrNotRegular for a directory, ErrUnsupported for an
// encrypted member or a method other than store and deflate). Paths
// without the leading "/" (as REF writes them, RS-AMB-20) are accepted.
// A path names the member whose name is the path without its "/", byte
// for byte: no percent-decoding (our Source escapes both alike) and no
// case folding. A path in an rs:ln (a patch in a Change Dump) must be safe too; Each does
// not deliver those members. Members that no entry names are ignored and
// counted by Unlisted. Several entries may name one member.
//
// Headers can lie, so the limits are also enforced on the bytes: the
// reader Each hands out decompresses the raw data itself and never yields
// more than the declared uncompressed size, which Open held to
// MaxMemberBytes and MaxRatio; data that would go on is refused with
// ErrSizeMismatch, as are data that end early, and a wrong CRC-32 or
// undecodable deflate data is ErrCorrupt. Since data ranges are disjoint,
// what members over 1 MiB inflate to is at most MaxRatio times the size of
// the archive. In all, Each delivers at most what the manifest's entries
// declare (Declared) and a small slack (64 KiB, 1%, a byte per entry),
// then refuses with ErrTooLarge, whatever the consumer reads.
//
// Every error is an *Error naming the package and the member (quoted, as
// hostile names may hold control bytes) and wrapping one of the Err*
// sentinels, matchable with errors.Is.
//
// Memory: archive/zip holds the central directory, a few times its size
// on disk in the worst case (it reads records until a bad one, whatever
// the directory end declares), so bound the package's size before Open
// (a Resource Dump entry states its length). A directory end declaring
// more than MaxMembers members is refused before archive/zip parses
// anything. Open adds 12 bytes per member (and 5, briefly, for the
// checks). The manifest is streamed, twice (in Open and in Each),
// never held.
//
// Not checked: that the local file header repeats the central directory's
// name (archive/zip reads the central directory only, and so does every
// check here); compression methods of members nobody reads.
package dump
