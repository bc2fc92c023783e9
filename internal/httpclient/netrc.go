package httpclient

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Netrc is a parsed .netrc file: login and password per machine, and the
// default entry.
type Netrc struct {
	machines map[string]NetrcEntry // by lower-case host name; the first entry wins, as in curl and ftp
	def      *NetrcEntry
}

// NetrcEntry is the login and password of one machine (account is read
// and ignored: HTTP has no use for it).
type NetrcEntry struct {
	Login, Password string
}

// Lookup returns the entry of host (a host name or IP address, without
// port: .netrc names machines, not ports), and ok false when the file has
// none (the default entry is returned by Default, not here).
func (n *Netrc) Lookup(host string) (NetrcEntry, bool) {
	if n == nil {
		return NetrcEntry{}, false
	}
	e, ok := n.machines[strings.ToLower(host)]
	return e, ok
}

// Default returns the default entry, if the file has one.
func (n *Netrc) Default() (NetrcEntry, bool) {
	if n == nil || n.def == nil {
		return NetrcEntry{}, false
	}
	return *n.def, true
}

// ParseNetrc parses the .netrc format of ftp(1) and curl: whitespace
// separated tokens; "machine NAME", "default", then "login NAME",
// "password STRING", "account STRING" in any order; "macdef NAME" starts
// a macro that runs to the next empty line and is skipped; "#" starts a
// comment to the end of the line (where a token would begin). A token may
// be written in double quotes, with \" \\ \n \r \t escapes, to hold
// spaces (as curl reads it).
func ParseNetrc(data []byte) (*Netrc, error) {
	n := &Netrc{machines: map[string]NetrcEntry{}}
	s := string(data)
	line := 1
	pos := 0
	// next returns the next token, or "" at the end.
	next := func() (string, error) {
		for pos < len(s) {
			c := s[pos]
			switch {
			case c == '\n':
				line++
				pos++
			case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
				pos++
			case c == '#':
				for pos < len(s) && s[pos] != '\n' {
					pos++
				}
			default:
				goto token
			}
		}
		return "", nil
	token:
		if s[pos] == '"' {
			var b strings.Builder
			pos++
			for pos < len(s) {
				c := s[pos]
				switch c {
				case '"':
					pos++
					if b.Len() == 0 {
						return "", fmt.Errorf("line %d: empty quoted token", line)
					}
					return b.String(), nil
				case '\\':
					if pos+1 >= len(s) {
						return "", fmt.Errorf("line %d: unterminated quoted token", line)
					}
					pos++
					switch e := s[pos]; e {
					case 'n':
						b.WriteByte('\n')
					case 'r':
						b.WriteByte('\r')
					case 't':
						b.WriteByte('\t')
					default:
						b.WriteByte(e)
					}
				case '\n':
					return "", fmt.Errorf("line %d: unterminated quoted token", line)
				default:
					b.WriteByte(c)
				}
				pos++
			}
			return "", fmt.Errorf("line %d: unterminated quoted token", line)
		}
		start := pos
		for pos < len(s) && !strings.ContainsRune(" \t\r\n\f\v", rune(s[pos])) {
			pos++
		}
		return s[start:pos], nil
	}
	var cur *NetrcEntry
	var curHost string
	haveDefault := false
	flush := func() {
		if cur == nil {
			return
		}
		if curHost == "" {
			if n.def == nil {
				e := *cur
				n.def = &e
			}
		} else if _, dup := n.machines[curHost]; !dup {
			n.machines[curHost] = *cur
		}
		cur = nil
	}
	for {
		tok, err := next()
		if err != nil {
			return nil, err
		}
		if tok == "" {
			break
		}
		switch tok {
		case "machine":
			flush()
			name, err := next()
			if err != nil {
				return nil, err
			}
			if name == "" {
				return nil, fmt.Errorf("line %d: machine without a name", line)
			}
			if haveDefault {
				// ftp(1): default must come last; entries after it are ignored
				// by curl too. Keep reading to check the syntax.
				cur, curHost = &NetrcEntry{}, "\x00ignored"
				continue
			}
			cur, curHost = &NetrcEntry{}, strings.ToLower(name)
		case "default":
			flush()
			haveDefault = true
			cur, curHost = &NetrcEntry{}, ""
		case "login", "password", "account":
			val, err := next()
			if err != nil {
				return nil, err
			}
			if val == "" {
				return nil, fmt.Errorf("line %d: %s without a value", line, tok)
			}
			if cur == nil {
				return nil, fmt.Errorf("line %d: %s outside a machine or default entry", line, tok)
			}
			switch tok {
			case "login":
				cur.Login = val
			case "password":
				cur.Password = val
			}
		case "macdef":
			flush()
			if name, err := next(); err != nil || name == "" {
				return nil, fmt.Errorf("line %d: macdef without a name", line)
			}
			// The macro's body runs from the next line to an empty line.
			for pos < len(s) && s[pos] != '\n' {
				pos++
			}
			for pos < len(s) {
				pos++ // the '\n'
				line++
				end := strings.IndexByte(s[pos:], '\n')
				if end < 0 {
					pos = len(s)
					break
				}
				if strings.TrimRight(s[pos:pos+end], "\r") == "" {
					break
				}
				pos += end
			}
		default:
			// Not quoted: the token may be the rest of a password with a space.
			return nil, fmt.Errorf("line %d: a token that is not a keyword (a value with spaces must be quoted)", line)
		}
	}
	flush()
	delete(n.machines, "\x00ignored")
	return n, nil
}

// NetrcPath returns the .netrc file to read: $NETRC when set, else
// ~/.netrc (on Windows ~/_netrc when there is no ~/.netrc, as curl).
func NetrcPath() string {
	if p := os.Getenv("NETRC"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	p := filepath.Join(home, ".netrc")
	if runtime.GOOS == "windows" {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			return filepath.Join(home, "_netrc")
		}
	}
	return p
}

// ReadNetrc reads and parses the file at path; a file that does not exist
// is an empty Netrc (most users have none).
func ReadNetrc(path string) (*Netrc, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	n, err := ParseNetrc(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}
