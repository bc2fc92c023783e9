package destination

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/resourcesync-go/resourcesync/internal/origin"
)

// elsewhere checks that the documents a run must read (each set's
// Resource List and Change List) are on an authority the policy allows.
// One that is not is most often the Source itself under another name
// than the one typed (localhost for 127.0.0.1, a proxy's public name):
// the error says which --base makes the documents and resources the
// Source's own, before --allow-host, which only lets documents be read
// there.
func elsewhere(pol *origin.Policy, base string, sets []setInfo) error {
	for _, s := range sets {
		for _, u := range []string{s.ResourceList, s.ChangeList} {
			if u == "" || pol.Check(u) == nil {
				continue
			}
			return fmt.Errorf("%s %w: %s", u, origin.ErrOffOrigin, baseHint(base, u))
		}
	}
	return nil
}

// baseHint suggests the base URL on the authority of doc that keeps the
// path of base.
func baseHint(base, doc string) string {
	bu, err1 := url.Parse(base)
	du, err2 := url.Parse(doc)
	if err1 != nil || err2 != nil || du.Host == "" {
		return ""
	}
	p := "/"
	if strings.HasPrefix(du.Path, bu.Path) {
		p = bu.Path
	}
	dir, err := hostDir(du)
	if err != nil {
		dir = "HOST"
	}
	want := (&url.URL{Scheme: du.Scheme, Host: du.Host, Path: p}).String()
	return fmt.Sprintf("the Source's documents name %s://%s, not %s://%s where SOURCE led; "+
		"if both name this Source, run again with --base %s (or with SOURCE on %s); "+
		"--allow-host %s would mirror them as another host's, into DEST/%s/%s/",
		du.Scheme, du.Host, bu.Scheme, bu.Host, want, du.Host, du.Host, HostsDirName, dir)
}
