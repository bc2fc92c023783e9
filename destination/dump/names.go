package dump

import "strings"

// unsafeName returns why name cannot name a member safely, or "" if it
// can. A trailing "/" (a directory member) is allowed. "." and empty
// segments are refused as well as "..": they give one file two spellings,
// which would defeat the duplicate check.
func unsafeName(name string) string {
	switch {
	case name == "":
		return "empty name"
	case strings.IndexByte(name, 0) >= 0:
		return "contains NUL"
	case strings.IndexByte(name, '\\') >= 0:
		return "contains a backslash"
	case name[0] == '/':
		return "absolute path"
	case len(name) >= 2 && name[1] == ':' && isLetter(name[0]):
		return "drive letter"
	}
	for seg := range strings.SplitSeq(strings.TrimSuffix(name, "/"), "/") {
		switch seg {
		case "..":
			return `".." segment`
		case ".", "":
			return `"." or empty segment`
		}
	}
	return ""
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// memberName maps a manifest path to a member name: the leading "/" that
// §11.2 requires is stripped; a path without it (as REF writes,
// RS-AMB-20) is taken as is.
func memberName(path string) string { return strings.TrimPrefix(path, "/") }
