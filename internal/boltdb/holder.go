package boltdb

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/resourcesync-go/resourcesync/internal/redact"
)

// HolderSuffix names the record beside a bbolt file (path+HolderSuffix)
// of the process holding it open for writing (MarkHolder).
const HolderSuffix = ".holder"

// holder is the record MarkHolder writes.
type holder struct {
	PID   int       `json:"pid"`
	Args  []string  `json:"args"`
	Since time.Time `json:"since"`
}

// MarkHolder records this process (pid, command line, time) as the one
// holding the bbolt file at path open for writing, in path+HolderSuffix,
// so that another process whose open fails with ErrLocked can say who
// holds it (Holder) and the user can tell which command to stop: two
// commands on one state otherwise only learn that "another user" has it.
// The record is written atomically (a temporary file renamed over it)
// and mode 0600, as the state itself (a command line may hold a secret).
// Call it once the file is open for writing, and the returned function
// before closing it: it removes the record if the record is still this
// process's. A record left by a killed process is harmless: Holder checks
// that its process still runs. Failures are ignored: the record is a
// courtesy, never a reason to refuse the state.
func MarkHolder(path string) (release func()) {
	me := holder{PID: os.Getpid(), Args: os.Args, Since: time.Now().UTC().Truncate(time.Second)}
	b, err := json.Marshal(me)
	if err != nil {
		return func() {}
	}
	rec := path + HolderSuffix
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(rec)+".*")
	if err != nil {
		return func() {}
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), rec)
	}
	if err != nil {
		os.Remove(f.Name())
		return func() {}
	}
	return func() {
		if h, ok := readHolder(rec); ok && h.PID == me.PID && h.Since.Equal(me.Since) {
			os.Remove(rec)
		}
	}
}

// maxHolderRecord bounds what readHolder reads: a record is a pid, a
// command line and a time.
const maxHolderRecord = 64 << 10

// readHolder reads a record. Whoever can write the state's directory can
// put anything there, so only a regular file is read (a FIFO is opened
// without waiting for a writer: holderOpenFlags), and at most
// maxHolderRecord bytes of it: a record that is a FIFO hung the command
// that only wanted to name the holder, and a sparse file of a terabyte,
// read whole, killed it (out of memory).
func readHolder(rec string) (holder, bool) {
	var h holder
	f, err := os.OpenFile(rec, os.O_RDONLY|holderOpenFlags, 0)
	if err != nil {
		return holder{}, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxHolderRecord {
		return holder{}, false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxHolderRecord+1))
	if err != nil || len(b) > maxHolderRecord || json.Unmarshal(b, &h) != nil || h.PID <= 0 {
		return holder{}, false
	}
	return h, true
}

// Holder describes the process holding the bbolt file at path open, for
// the message of a lock timeout: "pid 1234: resourcesync serve /data,
// since 2026-11-29T05:00:00Z", or "" when it cannot be known. On Linux
// the holder is found in /proc/locks (so a reader, or a process that
// keeps no record, is found too) and its command line read from
// /proc/PID/cmdline; elsewhere it is the process MarkHolder recorded,
// if that process still runs (on Windows, where that is not checked
// here, it is said to be as recorded). Secrets in the command line
// (internal/redact) are masked.
func Holder(path string) string {
	rec, recorded := readHolder(path + HolderSuffix)
	for _, pid := range lockHolders(path) {
		args, _ := cmdline(pid)
		if recorded && rec.PID == pid && (args == nil || slices.Equal(args, rec.Args)) {
			return describe(pid, rec.Args, rec.Since, "")
		}
		return describe(pid, args, time.Time{}, "")
	}
	if !recorded {
		return ""
	}
	switch alive(rec.PID) {
	case no:
		return ""
	case yes:
		if args, ok := cmdline(rec.PID); ok && !slices.Equal(args, rec.Args) {
			return "" // the pid was reused
		}
		return describe(rec.PID, rec.Args, rec.Since, "")
	}
	return describe(rec.PID, rec.Args, rec.Since, " (as recorded when it opened the file)")
}

func describe(pid int, args []string, since time.Time, note string) string {
	s := fmt.Sprintf("pid %d", pid)
	if pid == os.Getpid() {
		s += " (this process)"
	}
	if len(args) > 0 {
		a := maskFlags(args)
		a[0] = filepath.Base(a[0])
		for i, arg := range a {
			// Another process's arguments, for a terminal: one with
			// escape sequences, line breaks or bidi controls is shown
			// quoted, so that it cannot retitle the terminal or forge a
			// line of the message.
			if strings.IndexFunc(arg, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) >= 0 {
				a[i] = strconv.QuoteToGraphic(arg)
			}
		}
		s += ": " + redact.String(strings.Join(a, " "))
	}
	if !since.IsZero() {
		s += ", since " + since.Format(time.RFC3339)
	}
	return s + note
}

// maskFlags is a copy of args with the values of secret-bearing flags
// (--hub-admin-token T, --password=P: names ending in token, password,
// secret or key; the value of a --header) masked: the message may end up
// in a log, or on another user's terminal.
func maskFlags(args []string) []string {
	a := slices.Clone(args)
	secret := func(flag string) bool {
		name := strings.ToLower(strings.TrimLeft(flag, "-"))
		for _, suf := range []string{"token", "password", "passwd", "secret", "key"} {
			if strings.HasSuffix(name, suf) {
				return true
			}
		}
		return false
	}
	// --header 'Name: value' is a credential whatever the name (an API
	// key, a cookie): the name stays, the value is masked.
	isHeader := func(flag string) bool { return strings.TrimLeft(flag, "-") == "header" }
	header := func(v string) string {
		if name, _, ok := strings.Cut(v, ":"); ok {
			return name + ": " + redact.Mask
		}
		return redact.Mask
	}
	for i := 1; i < len(a); i++ {
		if !strings.HasPrefix(a[i], "-") {
			continue
		}
		if name, v, ok := strings.Cut(a[i], "="); ok {
			if secret(name) {
				a[i] = name + "=" + redact.Mask
			} else if isHeader(name) {
				a[i] = name + "=" + header(v)
			}
		} else if secret(a[i]) && i+1 < len(a) {
			a[i+1] = redact.Mask
			i++
		} else if isHeader(a[i]) && i+1 < len(a) {
			a[i+1] = header(a[i+1])
			i++
		}
	}
	return a
}

// tristate is an answer that may be unknown.
type tristate int

const (
	unknown tristate = iota
	yes
	no
)
