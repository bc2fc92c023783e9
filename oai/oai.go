package oai

import (
	"fmt"
	"strings"
	"time"
)

// Namespaces of the protocol and of the one metadata format every
// repository must support.
const (
	Namespace   = "http://www.openarchives.org/OAI/2.0/"
	SchemaURL   = "http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd"
	DCPrefix    = "oai_dc"
	DCNamespace = "http://www.openarchives.org/OAI/2.0/oai_dc/"
	DCSchemaURL = "http://www.openarchives.org/OAI/2.0/oai_dc.xsd"
	DCElements  = "http://purl.org/dc/elements/1.1/"
)

// The six verbs.
const (
	Identify            = "Identify"
	ListMetadataFormats = "ListMetadataFormats"
	ListSets            = "ListSets"
	ListIdentifiers     = "ListIdentifiers"
	ListRecords         = "ListRecords"
	GetRecord           = "GetRecord"
)

// The error codes of section 3.6.
const (
	BadArgument             = "badArgument"
	BadResumptionToken      = "badResumptionToken"
	BadVerb                 = "badVerb"
	CannotDisseminateFormat = "cannotDisseminateFormat"
	IDDoesNotExist          = "idDoesNotExist"
	NoRecordsMatch          = "noRecordsMatch"
	NoMetadataFormats       = "noMetadataFormats"
	NoSetHierarchy          = "noSetHierarchy"
)

// Error is an OAI-PMH error element: a response of status 200 that
// carries an error code instead of the verb's answer.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "oai-pmh: " + e.Code
	}
	return "oai-pmh: " + e.Code + ": " + e.Message
}

// Granularity is the finest datestamp a repository supports (Identify's
// granularity): a day or a second.
type Granularity int

const (
	Day    Granularity = iota // YYYY-MM-DD
	Second                    // YYYY-MM-DDThh:mm:ssZ
)

const (
	dayLayout    = "2006-01-02"
	secondLayout = "2006-01-02T15:04:05Z"
)

// ParseGranularity reads Identify's granularity element.
func ParseGranularity(s string) (Granularity, error) {
	switch strings.TrimSpace(s) {
	case "YYYY-MM-DD":
		return Day, nil
	case "YYYY-MM-DDThh:mm:ssZ":
		return Second, nil
	}
	return Day, fmt.Errorf("oai-pmh: unknown granularity %q", s)
}

func (g Granularity) String() string {
	if g == Second {
		return "YYYY-MM-DDThh:mm:ssZ"
	}
	return "YYYY-MM-DD"
}

// Format writes t in UTC at granularity g (truncated, never rounded up).
func (g Granularity) Format(t time.Time) string {
	if g == Second {
		return t.UTC().Format(secondLayout)
	}
	return t.UTC().Format(dayLayout)
}

// Unit is the length of one granule.
func (g Granularity) Unit() time.Duration {
	if g == Second {
		return time.Second
	}
	return 24 * time.Hour
}

// ParseDatestamp reads a UTC datestamp at either granularity and tells
// which one it was written at.
func ParseDatestamp(s string) (time.Time, Granularity, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(secondLayout, s); err == nil {
		return t, Second, nil
	}
	if t, err := time.Parse(dayLayout, s); err == nil {
		return t, Day, nil
	}
	return time.Time{}, Day, fmt.Errorf("oai-pmh: bad datestamp %q", s)
}

// Header is a record's header: its identifier, datestamp, set
// memberships and whether it is a deleted record.
type Header struct {
	Identifier string
	Datestamp  time.Time
	Sets       []string
	Deleted    bool
}
