package destination

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/resourcesync-go/resourcesync/destination/dump"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/rs"
)

// maxPackageBytes bounds one dump package download (the package's own
// length in the Resource Dump is also enforced).
const maxPackageBytes = 64 << 30

// dumpBaseline installs the resources of the set's Resource Dump. It is a
// head start for a baseline: the Resource List pass that follows skips
// what a package brought and fetches what it did not, so a package that
// fails or is refused costs time, not correctness. Refused packages are
// reported as failures.
func (e *engine) dumpBaseline(ctx context.Context, s setInfo, sr *SetReport) error {
	d, err := e.open(ctx, s.ResourceDump)
	if err != nil {
		e.phase(s.Name, "Resource Dump unreadable (%v): using the Resource List", err)
		return nil
	}
	defer d.Close()
	e.phase(s.Name, "baseline from the Resource Dump %s", s.ResourceDump)
	n := 0
	return e.eachEntry(ctx, d, 0, func(pk *rs.Entry) error {
		n++
		return e.installPackage(ctx, s, sr, pk, n)
	})
}

func (e *engine) installPackage(ctx context.Context, s setInfo, sr *SetReport, pk *rs.Entry, n int) error {
	tmp := filepath.Join(e.tmpDir, fmt.Sprintf("package-%d.zip", n))
	defer os.Remove(tmp)
	if pk.MD.HasLength && pk.MD.Length > maxPackageBytes {
		e.packageFailed(s, sr, pk.Loc, fmt.Errorf("%w: package of %d bytes", dump.ErrTooLarge, pk.MD.Length))
		return nil
	}
	res, err := e.f.Fetch(ctx, fetch.Request{URLs: locations(pk), Length: pk.MD.Length, HasLength: pk.MD.HasLength,
		Hashes: pk.MD.Hashes, Path: tmp, Dir: e.dir, NoSync: true})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.packageFailed(s, sr, pk.Loc, err)
		return nil
	}
	pkg, err := dump.Open(tmp, dump.Limits{})
	if err != nil {
		e.packageFailed(s, sr, pk.Loc, err)
		return nil
	}
	defer pkg.Close()
	e.phase(s.Name, "package %s: %d resources, %s", pk.Loc, pkg.Entries(), humanBytes(res.Length))
	p := e.newPass(ctx, s.Name, sr)
	err = pkg.Each(ctx, func(en rs.Entry, r io.Reader) error {
		if r == nil || en.MD.Change == rs.Deleted {
			return nil
		}
		en.Loc = e.m.Key(en.Loc)
		rel, err := e.m.Rel(en.Loc)
		if err != nil {
			p.fail(en.Loc, "", rs.Time{}, err)
			return nil
		}
		if _, err := e.lstat(e.m.Path(rel)); err == nil {
			return nil // a file the state does not name: the list pass judges it
		}
		if _, err := rs.DecodeDigests(en.MD.Hashes); err != nil {
			return nil // not trusted; the list pass reports it (or fetches it, if the list's digests are fine)
		}
		res, err := fetch.Install(r, fetch.Request{Path: e.m.Path(rel), Dir: e.dir, Length: en.MD.Length, HasLength: en.MD.HasLength,
			Hashes: e.verifyHashes(en.MD.Hashes), ModTime: en.LastMod.Time(), NoSync: !e.opt.FsyncEach})
		if err != nil {
			if errors.Is(err, fetch.ErrSymlinkInDest) {
				return nil // the list pass reports it as this resource's failure
			}
			if errors.Is(err, fetch.ErrHashMismatch) || errors.Is(err, fetch.ErrLengthMismatch) {
				// The list pass fetches it again.
				e.emit(Event{Kind: EventRetry, Set: s.Name, URI: en.Loc, Path: rel, Error: "in dump package: " + err.Error()})
				return nil
			}
			return err // a hostile or corrupt member: refuse the rest of the package
		}
		p.installed(job{uri: en.Loc, rel: rel, e: en}, res)
		return nil
	})
	if ferr := p.finish(); ferr != nil {
		return ferr
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.packageFailed(s, sr, pk.Loc, err)
	}
	return nil
}

func (e *engine) packageFailed(s setInfo, sr *SetReport, loc string, err error) {
	sr.Failed++
	if len(sr.Failures) < maxFailuresListed {
		sr.Failures = append(sr.Failures, Failure{URI: loc, Error: "dump package refused: " + err.Error()})
	}
	e.emit(Event{Kind: EventFailed, Set: s.Name, URI: loc, Error: "dump package refused: " + err.Error() + " (its resources are fetched from the Resource List)"})
}
