package provider

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/oai"
)

// memCollection is a Collection over a slice, for the fuzz test.
type memCollection []Item

func (m memCollection) Earliest(context.Context) (time.Time, error) { return m[0].Datestamp, nil }
func (m memCollection) Sets(context.Context) ([]Set, error) {
	return []Set{{Spec: "s", Name: "S"}}, nil
}
func (m memCollection) List(_ context.Context, q Query, yield func(Item) bool) error {
	for _, it := range m {
		if it.Cursor <= q.After || !inRange(it.Datestamp, q) || (q.Set != "" && (len(it.Sets) == 0 || it.Sets[0] != q.Set)) {
			continue
		}
		if !yield(it) {
			return nil
		}
	}
	return nil
}
func (m memCollection) Get(_ context.Context, id string) (Item, error) {
	for _, it := range m {
		if it.ID == id {
			return it, nil
		}
	}
	return Item{}, ErrNotFound
}
func (m memCollection) Open(_ context.Context, it Item) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader(`<?xml version="1.0"?><r xmlns="urn:r">` + it.ID + `</r>`)), nil
}

// Any request (query or form body) gets a well-formed OAI-PMH answer,
// and a token the handler issued resumes the list it belongs to.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		"verb=Identify", "verb=ListRecords&metadataPrefix=oai_dc", "verb=ListIdentifiers&metadataPrefix=r&from=2024-01-01&until=2024-12-31",
		"verb=GetRecord&identifier=oai:example.org:a&metadataPrefix=r", "verb=ListSets&resumptionToken=x", "verb=ListRecords&resumptionToken=MVI.x",
		"verb=ListRecords&metadataPrefix=oai_dc&set=s:t", "verb=%zz", "verb=ListMetadataFormats&identifier=oai:example.org:%3Cb%3E",
		"verb=ListIdentifiers&metadataPrefix=oai_dc&from=2024-01-01T00:00:00Z&until=2024-01-01", "verb=ListRecords&metadataPrefix=a<b",
	} {
		f.Add(s)
	}
	t0 := time.Date(2024, 3, 4, 5, 6, 7, 0, time.UTC)
	var c memCollection
	for i, id := range []string{"a", "b", "c%20d", "e/f", "g"} {
		c = append(c, Item{ID: id, URL: "http://example.org/" + id, Datestamp: t0.Add(time.Duration(i) * time.Hour), Type: "text/xml",
			Cursor: string(rune('a' + i)), Sets: []string{"s"}, Deleted: i == 4})
	}
	h, err := New(c, Config{BaseURL: "http://example.org/oai", PageSize: 1, Formats: []Format{{Prefix: "r", Namespace: "urn:r"}}, Now: func() time.Time { return t0 }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		for _, post := range []bool{false, true} {
			var req = httptest.NewRequest("GET", "/oai", nil)
			if post {
				req = httptest.NewRequest("POST", "/oai", strings.NewReader(q))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			} else {
				req.URL.RawQuery = q
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				t.Fatalf("%q: status %d", q, rec.Code)
			}
			body := rec.Body.Bytes()
			d := xml.NewDecoder(bytes.NewReader(body))
			for {
				_, err := d.Token()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("%q: not well-formed: %v\n%s", q, err, body)
				}
			}
			var r struct {
				Request struct {
					Verb string `xml:"verb,attr"`
				} `xml:"request"`
				Errors []struct {
					Code string `xml:"code,attr"`
				} `xml:"error"`
				Token string `xml:"ListRecords>resumptionToken"`
			}
			if err := xml.Unmarshal(body, &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Errors) > 0 && (r.Errors[0].Code == oai.BadVerb || r.Errors[0].Code == oai.BadArgument) && r.Request.Verb != "" {
				t.Fatalf("%q: %s echoes the request", q, r.Errors[0].Code)
			}
			if r.Token != "" {
				if _, perr := decodeToken(r.Token, h.key, oai.ListRecords, t0); perr != nil {
					t.Fatalf("%q: the issued token does not decode: %v", q, perr)
				}
			}
		}
	})
}
