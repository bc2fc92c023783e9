package destination

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"

	"github.com/resourcesync-go/resourcesync/rs"
)

// setInfo is one capability list's offer. TEMPORARY shape until discover lands.
type setInfo struct {
	Name                                               string
	CapabilityList                                     string
	ResourceList, ResourceDump, ChangeList, ChangeDump string
	ResourceListArchive, ChangeListArchive             string
	Direct                                             string
	DirectCapability                                   rs.Capability
}

func (e *engine) discover(ctx context.Context, source string) (base string, sets []setInfo, err error) {
	d, err := e.open(ctx, source)
	if err != nil {
		u := strings.TrimSuffix(source, "/") + "/.well-known/resourcesync"
		d, err = e.open(ctx, u)
		if err != nil {
			return "", nil, err
		}
	}
	defer d.Close()
	switch d.Head.Capability() {
	case rs.CapDescription:
		if i := strings.Index(d.URL, ".well-known/resourcesync"); i >= 0 {
			base = d.URL[:i]
		}
		for {
			en, err := d.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return "", nil, err
			}
			s, err := e.capList(ctx, en.Loc)
			if err != nil {
				return "", nil, err
			}
			sets = append(sets, s)
		}
	case rs.CapCapabilityList:
		d.Close()
		s, err := e.capList(ctx, d.URL)
		if err != nil {
			return "", nil, err
		}
		sets = append(sets, s)
	default:
		return "", nil, fmt.Errorf("unsupported")
	}
	if base == "" {
		u, _ := url.Parse(sets[0].CapabilityList)
		base = u.Scheme + "://" + u.Host + "/"
	}
	return base, sets, nil
}

func (e *engine) capList(ctx context.Context, u string) (setInfo, error) {
	s := setInfo{CapabilityList: u, Name: path.Base(path.Dir(u))}
	d, err := e.open(ctx, u)
	if err != nil {
		return s, err
	}
	defer d.Close()
	for {
		en, err := d.next()
		if err == io.EOF {
			return s, nil
		}
		if err != nil {
			return s, err
		}
		switch en.MD.Capability {
		case rs.CapResourceList:
			s.ResourceList = en.Loc
		case rs.CapResourceDump:
			s.ResourceDump = en.Loc
		case rs.CapChangeList:
			s.ChangeList = en.Loc
		case rs.CapChangeDump:
			s.ChangeDump = en.Loc
		case rs.CapChangeListArchive:
			s.ChangeListArchive = en.Loc
		case rs.CapResourceListArchive:
			s.ResourceListArchive = en.Loc
		}
	}
}
