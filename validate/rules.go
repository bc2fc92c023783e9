package validate

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"

	"github.com/resourcesync-go/resourcesync/rs"
)

// maxLocLen is the longest loc the Sitemap XSD allows (RS-GEN-7).
const maxLocLen = 2048

// checker holds the bounded state of one document's validation.
type checker struct {
	name    string
	report  func(Problem)
	info    *Info
	dec     *rs.Decoder
	in      *countReader
	head    *rs.Head
	cap     rs.Capability
	legacy  string
	dropped int

	prevTime    rs.Time // event time of the previous timed entry (RS-CHL-3)
	prevFromLM  bool    // prevTime came from lastmod (1.0-style)
	sawDatetime bool
	warnedLM    bool                     // RS-LEG-10 reported
	caps        map[rs.Capability]rs.Pos // Capability List entries (RS-CAP-2)
	prevItem    *ChildRef                // previous item of an index or archive
	tooMany     bool
}

// emit reports a problem. Errors in a document the decoder recognised as a
// pre-1.0 draft become warnings: such documents are accepted leniently,
// their features mapped onto the 1.1 model.
func (c *checker) emit(pos rs.Pos, rule string, sev rs.Severity, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if sev == rs.SevError && c.legacy != "" {
		sev = rs.SevWarning
		msg += " (accepted: ResourceSync " + c.legacy + " draft document)"
	}
	if sev == rs.SevError {
		c.info.Errors++
	} else {
		c.info.Warnings++
	}
	c.report(Problem{Doc: c.name, Line: pos.Line, Col: pos.Col, Rule: rule, Severity: sev, Message: msg})
}

func (c *checker) isIndex() bool { return c.head != nil && c.head.Root == rs.SitemapIndex }

// docRule names the per-document checklist rule of the document's kind.
func docRule(cp rs.Capability, index bool) string {
	switch cp {
	case rs.CapDescription:
		return "RS-SD-1"
	case rs.CapCapabilityList:
		return "RS-CAP-1"
	case rs.CapResourceList:
		if index {
			return "RS-RLI-1"
		}
		return "RS-RL-1"
	case rs.CapResourceDump:
		return "RS-RD-1"
	case rs.CapResourceDumpManifest:
		return "RS-RDM-1"
	case rs.CapChangeList:
		if index {
			return "RS-CHLI-2"
		}
		return "RS-CHL-1"
	case rs.CapChangeDump:
		return "RS-CD-1"
	case rs.CapChangeDumpManifest:
		return "RS-CDM-2"
	case rs.CapChangeNotification:
		return "RS-CN-1"
	case rs.CapFrameworkNotification:
		return "RS-FN-1"
	}
	if cp.IsArchive() {
		if index {
			return "RS-ARC-5"
		}
		return "RS-ARC-3"
	}
	return "RS-GEN-1"
}

// collects reports whether the document's items are documents.
func (c *checker) collects() bool {
	return c.isIndex() || c.cap == rs.CapDescription || c.cap == rs.CapCapabilityList || c.cap.IsArchive()
}

// changeItems reports whether items record changes (urlset change documents).
func (c *checker) changeItems() bool {
	if c.isIndex() {
		return false
	}
	switch c.cap {
	case rs.CapChangeList, rs.CapChangeDumpManifest, rs.CapChangeNotification, rs.CapFrameworkNotification:
		return true
	}
	return false
}

// entry checks one item.
func (c *checker) entry(e *rs.Entry, pos rs.Pos) {
	c.info.Entries++
	if c.info.Entries > rs.MaxEntries && !c.tooMany {
		c.tooMany = true
		c.emit(pos, "RS-GEN-8", rs.SevError, "more than %d items in one document; split it and group the parts with an index", rs.MaxEntries)
	}
	c.loc(e.Loc, pos)
	if e.ChangeFreq != "" {
		switch e.ChangeFreq {
		case "always", "hourly", "daily", "weekly", "monthly", "yearly", "never":
		default:
			c.emit(pos, "RS-GEN-9", rs.SevError, "changefreq %q is not one of always, hourly, daily, weekly, monthly, yearly, never", e.ChangeFreq)
		}
	}
	md := &e.MD
	c.itemChange(e, pos)
	c.itemTimes(md, pos)
	c.hashes(md.Hashes, pos, "rs:md")
	if md.HasLength && md.Length < 0 {
		c.emit(pos, "RS-URL-6", rs.SevError, "rs:md length %d is negative", md.Length)
	}
	c.itemPath(md, pos)
	c.itemCapability(e, pos)
	for i := range e.Links {
		c.link(&e.Links[i], pos, false)
	}
	if c.collects() {
		c.child(e, pos)
	}
}

// loc checks RS-GEN-7.
func (c *checker) loc(loc string, pos rs.Pos) {
	switch {
	case loc == "":
		c.emit(pos, "RS-GEN-7", rs.SevError, "item has no loc")
	case len(loc) > maxLocLen:
		c.emit(pos, "RS-GEN-7", rs.SevError, "loc is %d characters, more than %d", len(loc), maxLocLen)
	default:
		if !absoluteURI(loc) {
			c.emit(pos, "RS-GEN-7", rs.SevError, "loc %q is not an absolute URI", loc)
		}
	}
}

func absoluteURI(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && (u.Host != "" || u.Opaque != "" || u.Path != "")
}

// uriSyntax reports whether s is an absolute URI (or IRI: characters
// beyond ASCII are allowed) without characters RFC 3986 excludes - white
// space, controls, "<>\^`{|} - and with well-formed percent escapes.
func uriSyntax(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b >= 0x80:
		case b <= ' ' || b == 0x7f || strings.IndexByte("\"<>\\^`{|}", b) >= 0:
			return false
		case b == '%':
			if i+2 >= len(s) || !isHex(s[i+1:i+3]) {
				return false
			}
		}
	}
	return absoluteURI(s)
}

// knownCapabilities are the capability values the specifications define.
var knownCapabilities = []rs.Capability{
	rs.CapDescription, rs.CapCapabilityList, rs.CapResourceList, rs.CapResourceDump,
	rs.CapResourceDumpManifest, rs.CapChangeList, rs.CapChangeDump, rs.CapChangeDumpManifest,
	rs.CapResourceListArchive, rs.CapResourceDumpArchive, rs.CapChangeListArchive,
	rs.CapChangeDumpArchive, rs.CapChangeNotification, rs.CapFrameworkNotification,
}

// capFolder removes the separators misspellings add or drop.
var capFolder = strings.NewReplacer("-", "", "_", "", " ", "")

// misspelt returns the defined capability that c spells differently -
// other case, "_" or no "-" (resourceList, resource_list) - or "".
// Capability values are compared exactly, so such a document is not the
// kind it means to be.
func misspelt(c rs.Capability) rs.Capability {
	// Called for every item: the common cases (no capability, a defined
	// one) cost nothing, and the replacer is built once.
	if c == "" || c.Known() {
		return ""
	}
	fold := func(s string) string { return strings.ToLower(capFolder.Replace(s)) }
	f := fold(string(c))
	for _, k := range knownCapabilities {
		if k != c && fold(string(k)) == f {
			return k
		}
	}
	return ""
}

// itemChange checks change values, their presence (RS-CHL-2 and kin),
// datetime bounds (RS-URL-4) and forward chronological order (RS-CHL-3).
func (c *checker) itemChange(e *rs.Entry, pos rs.Pos) {
	md := &e.MD
	if md.Change != "" && !md.Change.Valid() {
		c.emit(pos, "RS-URL-3", rs.SevError, "change %q is not one of created, updated, deleted", md.Change)
	}
	if !c.changeItems() {
		return
	}
	if md.Change == "" {
		rule := map[rs.Capability]string{
			rs.CapChangeList:            "RS-CHL-2",
			rs.CapChangeDumpManifest:    "RS-CDM-3",
			rs.CapChangeNotification:    "RS-CN-3",
			rs.CapFrameworkNotification: "RS-FN-1",
		}[c.cap]
		c.emit(pos, rule, rs.SevError, "item of a %s has no rs:md change", c.cap)
	}
	root := &c.head.MD
	if !md.DateTime.IsZero() {
		if !root.From.IsZero() && md.DateTime.Before(root.From) {
			c.emit(pos, "RS-URL-4", rs.SevError, "datetime %s is before the document's from %s", md.DateTime, root.From)
		}
		if !root.Until.IsZero() && md.DateTime.After(root.Until) {
			c.emit(pos, "RS-URL-4", rs.SevError, "datetime %s is after the document's until %s", md.DateTime, root.Until)
		}
	}
	if c.cap == rs.CapFrameworkNotification {
		return // FN prescribes no order
	}
	t, fromLM := md.DateTime, false
	if t.IsZero() && !e.LastMod.IsZero() {
		if !c.warnedLM && !c.sawDatetime {
			c.warnedLM = true
			c.emit(pos, "RS-LEG-10", rs.SevWarning, "1.0-style change document: lastmod taken as the change time because rs:md has no datetime")
		}
		if !c.sawDatetime {
			t, fromLM = e.LastMod, true
		}
	}
	if !md.DateTime.IsZero() && !c.sawDatetime {
		c.sawDatetime = true
		if c.prevFromLM {
			// In a 1.1 document lastmod is not the change time: restart.
			c.prevTime = rs.Time{}
		}
	}
	if t.IsZero() {
		return // untimed entries are ordered by position only (RS-AMB-3)
	}
	if !c.prevTime.IsZero() && t.Before(c.prevTime) {
		rule := map[rs.Capability]string{
			rs.CapChangeList:         "RS-CHL-3",
			rs.CapChangeDumpManifest: "RS-CDM-1",
			rs.CapChangeNotification: "RS-CN-3",
		}[c.cap]
		what := "datetime"
		if fromLM {
			what = "lastmod"
		}
		c.emit(pos, rule, rs.SevError, "entries are not in forward chronological order: %s %s is before the previous entry's %s", what, t, c.prevTime)
	}
	c.prevTime, c.prevFromLM = t, fromLM
}

type timeAttr struct {
	name string
	t    rs.Time
}

// itemTimes checks item-level at/completed/from/until (RS-ROOT-6, Appendix A).
func (c *checker) itemTimes(md *rs.Metadata, pos rs.Pos) {
	if !md.At.IsZero() && !md.Completed.IsZero() && md.Completed.Before(md.At) {
		c.emit(pos, "RS-ROOT-2", rs.SevError, "item completed %s is before its at %s", md.Completed, md.At)
	}
	if !md.From.IsZero() && !md.Until.IsZero() && md.Until.Before(md.From) {
		c.emit(pos, "RS-ROOT-4", rs.SevError, "item until %s is before its from %s", md.Until, md.From)
	}
	snap := []timeAttr{{"at", md.At}, {"completed", md.Completed}}
	chg := []timeAttr{{"from", md.From}, {"until", md.Until}}
	forbid := func(attrs []timeAttr, rule string, sev rs.Severity, why string) {
		for _, a := range attrs {
			if !a.t.IsZero() {
				c.emit(pos, rule, sev, "item rs:md@%s is not used in %s", a.name, why)
			}
		}
	}
	idx := c.isIndex()
	switch {
	case c.cap.IsArchive():
		if strings.HasPrefix(string(c.cap), "change") {
			forbid(snap, "RS-AMB-10", rs.SevWarning, "a "+string(c.cap))
		} else {
			forbid(chg, "RS-AMB-10", rs.SevWarning, "a "+string(c.cap))
		}
	case c.cap == rs.CapResourceList && !idx:
		forbid(snap, "RS-ROOT-6", rs.SevError, "Resource List items")
		forbid(chg, "RS-ROOT-6", rs.SevError, "Resource List items")
	case c.cap == rs.CapResourceList || c.cap == rs.CapResourceDump:
		forbid(chg, "RS-ROOT-6", rs.SevError, "items of a "+kind(c.cap, idx))
	case c.cap == rs.CapChangeList && !idx:
		forbid(snap, "RS-ROOT-6", rs.SevError, "Change List items")
		forbid(chg, "RS-ROOT-6", rs.SevError, "Change List items")
	case c.cap == rs.CapChangeList || c.cap == rs.CapChangeDump:
		forbid(snap, "RS-ROOT-6", rs.SevError, "items of a "+kind(c.cap, idx))
	case c.cap.IsManifest():
		forbid(snap, "RS-ROOT-6", rs.SevError, "manifest items")
		forbid(chg, "RS-ROOT-6", rs.SevError, "manifest items")
	case c.cap.Known():
		forbid(snap, "RS-ROOT-6", rs.SevWarning, "items of a "+kind(c.cap, idx))
		forbid(chg, "RS-ROOT-6", rs.SevWarning, "items of a "+kind(c.cap, idx))
	}
}

func kind(cp rs.Capability, index bool) string {
	if index {
		return string(cp) + " index"
	}
	return string(cp)
}

// itemPath checks rs:md@path (RS-URL-9, RS-RDM-2, RS-CDM-3).
func (c *checker) itemPath(md *rs.Metadata, pos rs.Pos) {
	if md.Path != "" {
		c.pathSyntax(md.Path, pos, "rs:md")
		if !c.cap.IsManifest() {
			c.emit(pos, "RS-URL-9", rs.SevWarning, "rs:md@path is only used in dump manifests")
		}
		return
	}
	switch c.cap {
	case rs.CapResourceDumpManifest:
		c.emit(pos, "RS-RDM-2", rs.SevError, "Resource Dump Manifest item has no rs:md path")
	case rs.CapChangeDumpManifest:
		if md.Change != rs.Deleted {
			c.emit(pos, "RS-CDM-3", rs.SevError, "Change Dump Manifest item (change %q) has no rs:md path", md.Change)
		}
	}
}

func (c *checker) pathSyntax(p string, pos rs.Pos, where string) {
	if !strings.HasPrefix(p, "/") {
		c.emit(pos, "RS-URL-9", rs.SevError, "%s path %q does not start with /", where, p)
	} else if strings.HasSuffix(p, "/") {
		c.emit(pos, "RS-URL-9", rs.SevError, "%s path %q ends with /", where, p)
	}
}

// itemCapability checks item rs:md@capability (RS-SD-3, RS-CAP-2, RS-CAP-6,
// RS-FN-1).
func (c *checker) itemCapability(e *rs.Entry, pos rs.Pos) {
	ic := e.MD.Capability
	near := misspelt(ic)
	if near != "" {
		c.emit(pos, "RS-URL-10", rs.SevError, "item capability %q is not a defined value (values are case-sensitive): %q?", ic, near)
	}
	switch c.cap {
	case rs.CapDescription:
		if ic != "" && ic != rs.CapCapabilityList {
			c.emit(pos, "RS-SD-3", rs.SevError, "Source Description item has capability %q; only capabilitylist is allowed", ic)
		}
	case rs.CapCapabilityList:
		if c.isIndex() {
			return
		}
		if ic == "" {
			c.emit(pos, "RS-CAP-2", rs.SevError, "Capability List item has no rs:md capability")
			return
		}
		if !ic.Known() {
			if near == "" {
				c.emit(pos, "RS-URL-10", rs.SevWarning, "unknown capability %q", ic)
			}
		} else if ic == rs.CapDescription || ic == rs.CapCapabilityList || ic.IsManifest() {
			c.emit(pos, "RS-URL-10", rs.SevError, "capability %q cannot be listed in a Capability List", ic)
		}
		if c.caps == nil {
			c.caps = map[rs.Capability]rs.Pos{}
		}
		if first, dup := c.caps[ic]; dup {
			c.emit(pos, "RS-CAP-2", rs.SevError, "capability %q listed twice (first at line %d)", ic, first.Line)
		} else if len(c.caps) < 64 { // bounded: there are 14 known values
			c.caps[ic] = pos
		}
		if (ic == rs.CapChangeNotification || ic == rs.CapFrameworkNotification) && e.Link(rs.RelHub) == "" {
			c.emit(pos, "RS-CAP-6", rs.SevError, "%s channel has no rs:ln rel=\"hub\"", ic)
		}
	case rs.CapFrameworkNotification:
		if ic == "" {
			c.emit(pos, "RS-FN-1", rs.SevError, "framework notification item has no rs:md capability")
		}
	}
}

// child records an item of an index, archive, Source Description or
// Capability List and checks the order and continuity of change intervals.
func (c *checker) child(e *rs.Entry, pos rs.Pos) {
	ref := ChildRef{Loc: e.Loc, Capability: e.MD.Capability, At: e.MD.At, Completed: e.MD.Completed,
		From: e.MD.From, Until: e.MD.Until, Hub: e.Link(rs.RelHub), Pos: pos}
	if len(c.info.Children) <= rs.MaxEntries {
		c.info.Children = append(c.info.Children, ref)
	}
	clIndex := c.isIndex() && c.cap == rs.CapChangeList
	cdIndex := c.isIndex() && c.cap == rs.CapChangeDump
	chArchive := c.cap == rs.CapChangeListArchive || c.cap == rs.CapChangeDumpArchive
	if !clIndex && !cdIndex && !chArchive {
		return
	}
	if ref.From.IsZero() && clIndex {
		c.emit(pos, "RS-CHLI-3", rs.SevWarning, "Change List Index item has no rs:md from")
	}
	if prev := c.prevItem; prev != nil {
		if clIndex && prev.Until.IsZero() {
			c.emit(prev.Pos, "RS-CHLI-3", rs.SevError, "only the last (open) Change List may lack until; %s is followed by another list", prev.Loc)
		}
		if !ref.From.IsZero() && !prev.From.IsZero() && ref.From.Before(prev.From) {
			switch {
			case clIndex:
				c.emit(pos, "RS-CHLI-1", rs.SevError, "Change Lists are not in forward chronological order: from %s is before the previous list's from %s", ref.From, prev.From)
			case cdIndex:
				c.emit(pos, "RS-CD-6", rs.SevWarning, "Change Dumps are not in chronological order: from %s is before the previous dump's from %s", ref.From, prev.From)
			default:
				c.emit(pos, "RS-ARC-4", rs.SevError, "archive entries are not chronological: from %s is before the previous entry's from %s", ref.From, prev.From)
			}
		} else if !ref.From.IsZero() && !prev.Until.IsZero() && !ref.From.Equal(prev.Until) {
			what := "gap"
			if ref.From.Before(prev.Until) {
				what = "overlap"
			}
			msg := fmt.Sprintf("consecutive change documents are not contiguous (%s): from %s, previous until %s", what, ref.From, prev.Until)
			switch {
			case clIndex:
				c.emit(pos, "RS-DEST-3", rs.SevError, "%s", msg)
			case cdIndex:
				c.emit(pos, "RS-DEST-3", rs.SevWarning, "%s", msg)
			default:
				c.emit(pos, "RS-AMB-16", rs.SevWarning, "%s", msg)
			}
		}
	}
	c.prevItem = &ref
}

// link checks an rs:ln (RS-LN-1..3, RS-REL-9, RS-URL-5, RS-URL-9).
func (c *checker) link(l *rs.Link, pos rs.Pos, root bool) {
	if l.Rel == "" {
		c.emit(pos, "RS-LN-1", rs.SevError, "rs:ln has no rel")
	} else {
		for _, r := range strings.Fields(l.Rel) {
			if !relToken(r) && !absoluteURI(r) {
				c.emit(pos, "RS-LN-3", rs.SevError, "rs:ln rel %q is neither a lowercase registered token nor an absolute URI", r)
			}
		}
	}
	if l.Href == "" {
		c.emit(pos, "RS-LN-1", rs.SevError, "rs:ln rel=%q has no href", l.Rel)
	} else if !uriSyntax(l.Href) {
		c.emit(pos, "RS-LN-1", rs.SevError, "rs:ln rel=%q href %q is not an absolute URI", l.Rel, l.Href)
	}
	if l.Pri < 0 || l.Pri > 999999 {
		c.emit(pos, "RS-LN-2", rs.SevError, "rs:ln pri %d is outside 1..999999", l.Pri)
	}
	if l.HasLength && l.Length < 0 {
		c.emit(pos, "RS-XSD-4", rs.SevError, "rs:ln length %d is negative", l.Length)
	}
	c.hashes(l.Hashes, pos, "rs:ln")
	if l.Path != "" {
		c.pathSyntax(l.Path, pos, "rs:ln")
	}
	if l.Rel == rs.RelPatch && !root {
		if l.Type == "" {
			c.emit(pos, "RS-REL-9", rs.SevError, "patch link has no type")
		}
		switch c.cap {
		case rs.CapChangeDumpManifest:
			if l.Path == "" {
				c.emit(pos, "RS-REL-9", rs.SevError, "patch link in a Change Dump Manifest has no path")
			}
		case rs.CapChangeList, rs.CapChangeNotification:
		default:
			c.emit(pos, "RS-REL-9", rs.SevWarning, "patch links are only meaningful in Change Lists and Change Dump Manifests")
		}
	}
}

func relToken(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		b := s[i]
		if !('a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '.' || b == '-') {
			return false
		}
	}
	return true
}

// hashes judges a hash attribute (RS-URL-5, RS-AMB-1, RS-LEG-12).
func (c *checker) hashes(hs rs.Hashes, pos rs.Pos, where string) {
	var seen []string
	for _, h := range hs {
		if h.Alg == "" || h.Value == "" {
			c.emit(pos, "RS-URL-5", rs.SevError, "%s hash token %q is not algorithm:digest", where, h.Alg+":"+h.Value)
			continue
		}
		for _, s := range seen {
			if s == h.Alg {
				c.emit(pos, "RS-URL-5", rs.SevError, "%s hash gives algorithm %s twice", where, h.Alg)
			}
		}
		if len(seen) < 8 {
			seen = append(seen, h.Alg)
		}
		n := rs.DigestHexLen(h.Alg)
		err := h.Check()
		switch {
		case strings.Contains(h.Value, ","):
			c.emit(pos, "RS-URL-5", rs.SevError, "%s hash %q: %v", where, h.Alg+":"+h.Value, err)
		case n == 0:
			c.emit(pos, "RS-URL-5", rs.SevWarning, "%s hash algorithm %q is not md5, sha-1 or sha-256; it cannot be verified", where, h.Alg)
		case err == nil:
		case paddedBase64(h.Value, n/2):
			if c.legacy != "" {
				c.emit(pos, "RS-LEG-12", rs.SevWarning, "%s %s digest %q is base64 (pre-1.0 style), not hex", where, h.Alg, h.Value)
			} else {
				c.emit(pos, "RS-URL-5", rs.SevError, "%s %s digest %q is base64, not hex (RS-LEG-12: written by resync before 1.0.6)", where, h.Alg, h.Value)
			}
		case base64Like(h.Value, n/2):
			c.emit(pos, "RS-AMB-1", rs.SevWarning, "%s %s digest %q looks like base64, not hex; it cannot be verified (erratum of spec Example 27)", where, h.Alg, h.Value)
		case isHex(h.Value):
			c.emit(pos, "RS-URL-5", rs.SevError, "%s %s digest has %d hex digits, want %d", where, h.Alg, len(h.Value), n)
		default:
			c.emit(pos, "RS-URL-5", rs.SevError, "%s hash: %v", where, err)
		}
	}
}

// paddedBase64 reports whether v is the padded base64 (standard or URL
// alphabet) of exactly n bytes: what resync before 1.0.6 wrote. Example 27's
// unpadded 43-character values do not qualify (RS-AMB-1).
func paddedBase64(v string, n int) bool {
	if len(v) != base64.StdEncoding.EncodedLen(n) {
		return false
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		if b, err := enc.Strict().DecodeString(v); err == nil && len(b) == n {
			return true
		}
	}
	return false
}

// base64Like reports whether v is written in a base64 alphabet (standard
// or URL) with the length of n bytes' base64, padded or not: the shape of
// the values of spec Example 27 (43 or 44 characters for sha-256), an
// erratum (RS-AMB-1) rather than a broken document.
func base64Like(v string, n int) bool {
	if len(v) < base64.RawStdEncoding.EncodedLen(n) || len(v) > base64.StdEncoding.EncodedLen(n) {
		return false
	}
	for i := 0; i < len(v); i++ {
		b := v[i]
		if !('0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || strings.IndexByte("+/-_=", b) >= 0) {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F') {
			return false
		}
	}
	return s != ""
}

// finish runs the checks that need the whole head (root rs:md and rs:ln may
// come after the items, RS-GEN-10) or the last item.
func (c *checker) finish() {
	h := c.head
	pos := c.dec.HeadPos()
	cp := h.MD.Capability
	idx := h.Root == rs.SitemapIndex
	rule := docRule(cp, idx)
	md := &h.MD

	switch {
	case cp == "":
		c.emit(pos, "RS-GEN-1", rs.SevError, "no root rs:md capability: not a ResourceSync document (a plain sitemap?)")
	case misspelt(cp) != "":
		c.emit(pos, "RS-GEN-2", rs.SevError, "capability %q is not a defined value (values are case-sensitive): %q?", cp, misspelt(cp))
	case !cp.Known():
		c.emit(pos, "RS-GEN-1", rs.SevWarning, "unknown capability %q (RS-GEN-2 lists the defined values)", cp)
	}

	// List vs index (RS-GEN-3, RS-DEST-8).
	if idx {
		switch {
		case cp == rs.CapCapabilityList:
			c.emit(pos, "RS-CAP-1", rs.SevWarning, "a Capability List should not be a sitemapindex")
		case cp == rs.CapChangeNotification:
			c.emit(pos, "RS-CN-4", rs.SevError, "a change notification must be a urlset, never a sitemapindex")
		case cp == rs.CapFrameworkNotification:
			c.emit(pos, "RS-FN-1", rs.SevError, "a framework notification must be a urlset, never a sitemapindex")
		case cp.IsManifest():
			c.emit(pos, rule, rs.SevError, "a %s must be a urlset: a package has exactly one manifest", cp)
		}
	}

	// Root times (RS-ROOT-1..5).
	if !md.At.IsZero() && !md.Completed.IsZero() && md.Completed.Before(md.At) {
		c.emit(pos, "RS-ROOT-2", rs.SevError, "completed %s is before at %s", md.Completed, md.At)
	}
	if !md.From.IsZero() && !md.Until.IsZero() && md.Until.Before(md.From) {
		c.emit(pos, "RS-ROOT-4", rs.SevError, "until %s is before from %s", md.Until, md.From)
	}
	switch {
	case cp.IsSnapshot():
		if md.At.IsZero() && !c.dec.HeadAttrInvalid("at") { // an invalid one is reported as RS-DT-2
			c.emit(pos, rule, rs.SevError, "%s has no root rs:md at", kind(cp, idx))
		}
		for _, a := range []timeAttr{{"from", md.From}, {"until", md.Until}} {
			if !a.t.IsZero() {
				c.emit(pos, "RS-ROOT-5", rs.SevError, "root rs:md@%s is not used in a %s (snapshot documents use at)", a.name, kind(cp, idx))
			}
		}
	case cp.IsChange():
		if md.From.IsZero() && cp != rs.CapFrameworkNotification && !c.dec.HeadAttrInvalid("from") {
			c.emit(pos, rule, rs.SevError, "%s has no root rs:md from", kind(cp, idx))
		}
		if md.Until.IsZero() && cp == rs.CapChangeNotification && !c.dec.HeadAttrInvalid("until") {
			c.emit(pos, "RS-CN-1", rs.SevError, "change notification has no root rs:md until")
		}
		for _, a := range []timeAttr{{"at", md.At}, {"completed", md.Completed}} {
			if !a.t.IsZero() {
				c.emit(pos, "RS-ROOT-5", rs.SevError, "root rs:md@%s is not used in a %s (change documents use from/until)", a.name, kind(cp, idx))
			}
		}
	case cp.Known():
		for _, a := range []timeAttr{{"at", md.At}, {"completed", md.Completed}, {"from", md.From}, {"until", md.Until}} {
			if !a.t.IsZero() {
				c.emit(pos, "RS-ROOT-5", rs.SevWarning, "root rs:md@%s is not defined for a %s", a.name, kind(cp, idx))
			}
		}
	}

	// Root links.
	for i := range h.Links {
		c.link(&h.Links[i], pos, true)
	}
	up := h.Link(rs.RelUp)
	switch {
	case cp == rs.CapDescription:
		if up != "" {
			c.emit(pos, "RS-SD-1", rs.SevWarning, "a Source Description has a rel=\"up\" link (%s); it is the top of the tree and should have none", up)
		}
	case cp == rs.CapCapabilityList:
		if up == "" {
			c.emit(pos, "RS-CAP-1", rs.SevError, "Capability List has no root rs:ln rel=\"up\" to its Source Description")
		}
	case cp == rs.CapChangeNotification || cp == rs.CapFrameworkNotification || !cp.Known():
		// up is optional in notification payloads.
	default:
		if up == "" {
			r := rule
			if r == "RS-RL-1" {
				r = "RS-RL-2"
			}
			c.emit(pos, r, rs.SevWarning, "%s has no root rs:ln rel=\"up\" to its Capability List (mandatory; omitted by the spec's walkthrough examples, accepted with a warning)", kind(cp, idx))
		}
	}

	// The last item of a Change List Index (RS-CHLI-3).
	if idx && cp == rs.CapChangeList && c.prevItem != nil && c.prevItem.Until.IsZero() && !md.Until.IsZero() {
		c.emit(c.prevItem.Pos, "RS-CHLI-3", rs.SevError, "the index is closed (until %s) but its last Change List %s has no until", md.Until, c.prevItem.Loc)
	}
}
