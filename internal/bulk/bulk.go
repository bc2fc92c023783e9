package bulk

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

const (
	// Rel is the Link relation that advertises the endpoint: an
	// extension relation (a URI, RFC 8288 §2.1.2) no other client knows.
	Rel = "https://github.com/resourcesync-go/resourcesync/rel/bulk"
	// Path is the endpoint's path below the Source's base URL.
	Path = ".resourcesync/bulk"
	// MediaType is the response's Content-Type.
	MediaType = "application/vnd.resourcesync-go.bulk"
	// MaxPaths bounds the paths of one request, MaxRequestBytes its body.
	MaxPaths        = 1000
	MaxRequestBytes = 1 << 20
	// MaxMember is the largest resource a bulk response carries: 64 KiB,
	// the size the Source reads whole into a buffer (a larger one gains
	// nothing from sharing a response).
	MaxMember = 64 << 10
	// maxLine bounds a member's header line.
	maxLine = 8 << 10
)

// ErrProtocol is wrapped by every error of a malformed request or
// response.
var ErrProtocol = errors.New("bulk: malformed")

// ParseRequest reads a request body: the paths, one a line (a final LF is
// optional, CR LF accepted). Empty lines are skipped; a path holding a
// control byte or a space, or more than MaxPaths paths, or a body over
// MaxRequestBytes, is refused.
func ParseRequest(r io.Reader) ([]string, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxRequestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxRequestBytes {
		return nil, fmt.Errorf("%w: request over %d bytes", ErrProtocol, MaxRequestBytes)
	}
	var paths []string
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			continue
		}
		if !validPath(line) {
			return nil, fmt.Errorf("%w: path %q", ErrProtocol, line)
		}
		if len(paths) == MaxPaths {
			return nil, fmt.Errorf("%w: more than %d paths", ErrProtocol, MaxPaths)
		}
		paths = append(paths, string(line))
	}
	return paths, nil
}

// validPath: no control byte, no space, no DEL, not empty (what an
// escaped URL path is made of; the Source decides what it names).
func validPath[T string | []byte](p T) bool {
	if len(p) == 0 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// WriteRequest writes the request body for paths.
func WriteRequest(w io.Writer, paths []string) error {
	bw := bufio.NewWriter(w)
	for _, p := range paths {
		if !validPath(p) {
			return fmt.Errorf("%w: path %q", ErrProtocol, p)
		}
		bw.WriteString(p)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// AppendHeader appends a member's header line to b.
func AppendHeader(b []byte, status, length int, path string) []byte {
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(length), 10)
	b = append(b, ' ')
	b = append(b, path...)
	return append(b, '\n')
}

// End is the line that ends a response.
const End = "end\n"

// Reader reads a response's members in the order of the paths asked.
type Reader struct {
	br    *bufio.Reader
	paths []string
	next  int
	left  *io.LimitedReader // the current member's unread bytes
}

// NewReader reads the response body r to a request for paths.
func NewReader(r io.Reader, paths []string) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 16<<10), paths: paths}
}

// Member is one answer: Status 200 with Body (Length bytes), or another
// status without one.
type Member struct {
	Path   string
	Status int
	Length int64
	Body   io.Reader
}

// Next returns the answer to the next path asked. want is the length the
// client expects (from the Resource List): a 200 member of another
// length is refused, before any of its bytes is read. A negative want
// accepts any length up to MaxMember: a client that knows no length
// beforehand (an SDShare fragment) checks the member itself. A member's Body
// must be read before the next call or is skipped by it. After the last
// path, Next reads the end line and returns io.EOF.
func (r *Reader) Next(want int64) (Member, error) {
	if r.left != nil && r.left.N > 0 {
		if _, err := io.Copy(io.Discard, r.left); err != nil {
			return Member{}, err
		}
		if r.left.N > 0 {
			return Member{}, fmt.Errorf("%w: stream ends inside a member", io.ErrUnexpectedEOF)
		}
	}
	r.left = nil
	line, err := r.line()
	if err != nil {
		return Member{}, err
	}
	if r.next == len(r.paths) {
		if line != strings.TrimSuffix(End, "\n") {
			return Member{}, fmt.Errorf("%w: %q after the last path", ErrProtocol, trim(line))
		}
		return Member{}, io.EOF
	}
	f := strings.SplitN(line, " ", 3)
	if len(f) != 3 {
		return Member{}, fmt.Errorf("%w: header %q", ErrProtocol, trim(line))
	}
	st, err1 := strconv.Atoi(f[0])
	n, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || st < 100 || st > 599 || n < 0 || len(f[0]) != 3 {
		return Member{}, fmt.Errorf("%w: header %q", ErrProtocol, trim(line))
	}
	if f[2] != r.paths[r.next] {
		return Member{}, fmt.Errorf("%w: member %q where %q was asked", ErrProtocol, trim(f[2]), r.paths[r.next])
	}
	r.next++
	m := Member{Path: f[2], Status: st}
	if st != 200 {
		if n != 0 {
			return Member{}, fmt.Errorf("%w: status %d with %d bytes", ErrProtocol, st, n)
		}
		return m, nil
	}
	if n > MaxMember || (want >= 0 && n != want) {
		return Member{}, fmt.Errorf("%w: member %q of %d bytes, expected %d", ErrProtocol, m.Path, n, want)
	}
	m.Length = n
	r.left = &io.LimitedReader{R: r.br, N: n}
	m.Body = r.left
	return m, nil
}

// line reads a header line without its LF.
func (r *Reader) line() (string, error) {
	b, err := r.br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull || len(b) > maxLine:
		return "", fmt.Errorf("%w: header line over %d bytes", ErrProtocol, maxLine)
	case err == io.EOF:
		return "", fmt.Errorf("%w: stream ends before its end line", io.ErrUnexpectedEOF)
	case err != nil:
		return "", err
	}
	return string(b[:len(b)-1]), nil
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
