package authn

import (
	"html"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestChallengePageShellQuotes: the browser's 401 page shows commands to
// copy into a shell, with the URL asked for in them. A link to the
// server whose path holds shell syntax (";", "$(...)", "'", "&": all
// sent unescaped by browsers and kept by EscapedPath) made the page show
// a command that runs what the link's author chose. The URLs in the
// commands are shell words: quoted when they hold anything but plain
// URL characters.
func TestChallengePageShellQuotes(t *testing.T) {
	tf := write(t, filepath.Join(t.TempDir(), "tokens"), "s3cret\n")
	_, srv := newServer(t, Config{TokenFile: tf})
	pre := regexp.MustCompile(`(?s)<pre>(.*?)</pre>`)
	for _, path := range []string{"/rs;id", "/rs$(id)", "/rs'$(id)'", "/a&id", "/plain/path.xml"} {
		resp, body := get(t, srv.URL+path, func(r *http.Request) {
			r.Header.Set("Accept", "text/html")
			r.Header.Set("Sec-Fetch-Mode", "navigate")
		})
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("Content-Type"), "html") {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		cmds := pre.FindAllStringSubmatch(body, -1)
		if len(cmds) == 0 {
			t.Fatalf("%s: no command on the page:\n%s", path, body)
		}
		for _, m := range cmds {
			cmd := html.UnescapeString(m[1])
			if err := shellSafe(cmd); err != "" {
				t.Errorf("%s: the page shows %q: %s", path, cmd, err)
			}
		}
	}
}

// shellSafe checks that cmd, read as a POSIX shell would, has its
// special characters only inside single quotes or after a backslash (TOKEN, FILE and DEST are
// the placeholders the page shows).
func shellSafe(cmd string) string {
	in, esc := false, false
	for _, c := range cmd {
		switch {
		case esc:
			esc = false
		case c == '\\' && !in:
			esc = true
		case c == '\'':
			in = !in
		case in:
		case strings.ContainsRune(";&|$`()<>\"*?[]{}!#~\n", c):
			return "unquoted " + string(c)
		}
	}
	if in {
		return "unbalanced quote"
	}
	return ""
}
