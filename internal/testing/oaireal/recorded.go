package oaireal

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Response is what ParseResponse keeps of one recorded OAI-PMH response.
type Response struct {
	Verb string // the element after request: Identify, ListRecords, …, or "error"
	// ResponseDate is when the repository answered (zero if unreadable).
	ResponseDate time.Time
	Prefix       string // the request's metadataPrefix ("" when it had none)
	// Inner is the verb element's content, verbatim (Identify,
	// ListMetadataFormats and ListSets are replayed from it).
	Inner   []byte
	Records []Record // of ListRecords and GetRecord, in document order
}

// Record is one record as a repository serves it.
type Record struct {
	Prefix     string
	Identifier string
	Datestamp  string // as written by the repository
	Sets       []string
	Deleted    bool
	// Raw is the whole <record> element, byte for byte as recorded (or
	// as built by Put, or as given to PutRaw).
	Raw []byte
	// Header is the <header> element of Raw, for ListIdentifiers.
	Header []byte
}

// rootAttrs are the attributes a recorded root may carry: records are
// replayed verbatim inside a root declaring the same, so a record cannot
// depend on a prefix declared anywhere else.
var rootAttrs = map[string]bool{"xmlns": true, "xmlns:xsi": true, "xsi:schemaLocation": true}

// ParseResponse reads one recorded OAI-PMH 2.0 response.
func ParseResponse(doc []byte) (*Response, error) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	// Record raw namespaces-as-written: the attribute check below needs
	// the prefixes, not the resolved URIs.
	root, err := nextStart(d)
	if err != nil {
		return nil, err
	}
	if root.Name.Space != oaiNamespace || root.Name.Local != "OAI-PMH" {
		return nil, fmt.Errorf("oaireal: root is {%s}%s, not OAI-PMH", root.Name.Space, root.Name.Local)
	}
	for _, a := range root.Attr {
		name := a.Name.Local
		if a.Name.Space == "xmlns" {
			name = "xmlns:" + a.Name.Local
		} else if a.Name.Space == "http://www.w3.org/2001/XMLSchema-instance" {
			name = "xsi:" + a.Name.Local
		}
		if !rootAttrs[name] {
			return nil, fmt.Errorf("oaireal: root attribute %s=%q would not be replayed", name, a.Value)
		}
	}
	resp := &Response{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "responseDate":
			var v string
			if err := d.DecodeElement(&v, &se); err != nil {
				return nil, err
			}
			resp.ResponseDate, _ = time.Parse(time.RFC3339, strings.TrimSpace(v))
		case "request":
			for _, a := range se.Attr {
				if a.Name.Local == "metadataPrefix" {
					resp.Prefix = a.Value
				}
			}
			if err := d.Skip(); err != nil {
				return nil, err
			}
		default:
			resp.Verb = se.Name.Local
			innerStart := d.InputOffset()
			if err := parseVerb(d, doc, resp); err != nil {
				return nil, err
			}
			end := d.InputOffset()
			// Inner: between the end of the start tag and the end tag.
			inner := doc[innerStart:end]
			if i := bytes.LastIndex(inner, []byte("</")); i >= 0 {
				inner = inner[:i]
			}
			resp.Inner = append([]byte(nil), inner...)
			return resp, nil
		}
	}
	return nil, errors.New("oaireal: response has no verb element")
}

func nextStart(d *xml.Decoder) (xml.StartElement, error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return xml.StartElement{}, fmt.Errorf("oaireal: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se, nil
		}
	}
}

// parseVerb consumes the verb element's content, collecting records.
func parseVerb(d *xml.Decoder, doc []byte, resp *Response) error {
	for {
		start := d.InputOffset()
		tok, err := d.Token()
		if err != nil {
			return fmt.Errorf("oaireal: %w", err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			if t.Name.Local != "record" || t.Name.Space != oaiNamespace {
				if err := d.Skip(); err != nil {
					return err
				}
				continue
			}
			rec, err := parseRecord(d, doc, start)
			if err != nil {
				return err
			}
			rec.Prefix = resp.Prefix
			resp.Records = append(resp.Records, rec)
		}
	}
}

func parseRecord(d *xml.Decoder, doc []byte, start int64) (Record, error) {
	var rec Record
	for {
		hstart := d.InputOffset()
		tok, err := d.Token()
		if err != nil {
			return rec, fmt.Errorf("oaireal: %w", err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			rec.Raw = append([]byte(nil), doc[start:d.InputOffset()]...)
			return rec, nil
		case xml.StartElement:
			if t.Name.Local != "header" {
				if err := d.Skip(); err != nil {
					return rec, err
				}
				continue
			}
			for _, a := range t.Attr {
				if a.Name.Local == "status" && a.Value == "deleted" {
					rec.Deleted = true
				}
			}
			var h struct {
				Identifier string   `xml:"identifier"`
				Datestamp  string   `xml:"datestamp"`
				Sets       []string `xml:"setSpec"`
			}
			if err := d.DecodeElement(&h, &t); err != nil {
				return rec, err
			}
			rec.Identifier = strings.TrimSpace(h.Identifier)
			rec.Datestamp = strings.TrimSpace(h.Datestamp)
			for _, s := range h.Sets {
				rec.Sets = append(rec.Sets, strings.TrimSpace(s))
			}
			rec.Header = append([]byte(nil), doc[hstart:d.InputOffset()]...)
		}
	}
}
