package fragbulk

import (
	"net/url"
	"strings"
)

const (
	// Rel advertises the endpoint: an extension relation (a URI, RFC
	// 8288 §2.1.2) no other SDShare client knows.
	Rel = "https://github.com/resourcesync-go/resourcesync/rel/sdshare-bulk"
	// Sub is the endpoint's path below a collection's URL.
	Sub = "bulk"
	// FragmentPrefix starts every member path: a fragment URL relative
	// to the collection's URL.
	FragmentPrefix = "fragment?"
)

// Member returns the path a fragment URL href is asked for by, relative
// to dir (the collection's URL, the endpoint's without Sub), or false
// when href is not a fragment URL below dir that a bulk request can
// carry: another origin or path, a #fragment, a byte a request line
// cannot hold.
func Member(dir, href string) (string, bool) {
	rel, ok := strings.CutPrefix(href, dir)
	if !ok || !strings.HasPrefix(rel, FragmentPrefix) || strings.ContainsRune(rel, '#') {
		return "", false
	}
	for i := 0; i < len(rel); i++ {
		if c := rel[i]; c <= ' ' || c == 0x7f {
			return "", false
		}
	}
	return rel, true
}

// ParseMember reads a member path: the resource asked for and the format
// parameter ("" when absent). false: not a fragment path, or without a
// resource.
func ParseMember(p string) (resource, format string, ok bool) {
	q, ok := strings.CutPrefix(p, FragmentPrefix)
	if !ok {
		return "", "", false
	}
	v, err := url.ParseQuery(q)
	if err != nil {
		return "", "", false
	}
	res := v["resource"]
	if len(res) != 1 || res[0] == "" || len(v["format"]) > 1 {
		return "", "", false
	}
	return res[0], v.Get("format"), true
}
