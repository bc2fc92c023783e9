package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// pushBody is an N-Triples fragment of resource r of about n bytes, in
// short statements (many triples per byte: the parse's worst case).
func pushBody(r string, n int) []byte {
	var b bytes.Buffer
	b.Grow(n + 64)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "<%s> <x:p> \"%d\" .\n", r, i)
	}
	return b.Bytes()
}

type pushAnswer struct {
	code       int
	retryAfter string
	body       string
	err        error
}

func pushTo(hc *http.Client, base, resource string, body []byte) pushAnswer {
	req, err := http.NewRequest(http.MethodPost, base+"?resource="+resource+"&graph=x:g", bytes.NewReader(body))
	if err != nil {
		return pushAnswer{err: err}
	}
	req.Header.Set("Content-Type", "application/n-triples")
	resp, err := hc.Do(req)
	if err != nil {
		return pushAnswer{err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return pushAnswer{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: strings.TrimSpace(string(b))}
}
