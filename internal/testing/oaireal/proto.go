package oaireal

import (
	"fmt"
	"strings"
	"time"
)

// The protocol's names this package needs. They repeat package oai's on
// purpose: a harness under internal/ imports nothing of the module outside
// internal/ (internal/layers_test.go), and a provider nobody here wrote
// must not share our spelling of the protocol anyway.
const (
	oaiNamespace = "http://www.openarchives.org/OAI/2.0/"
	dcPrefix     = "oai_dc"

	verbIdentify            = "Identify"
	verbListMetadataFormats = "ListMetadataFormats"
	verbListSets            = "ListSets"
	verbListIdentifiers     = "ListIdentifiers"
	verbListRecords         = "ListRecords"
	verbGetRecord           = "GetRecord"

	errBadArgument             = "badArgument"
	errBadResumptionToken      = "badResumptionToken"
	errBadVerb                 = "badVerb"
	errCannotDisseminateFormat = "cannotDisseminateFormat"
	errIDDoesNotExist          = "idDoesNotExist"
	errNoRecordsMatch          = "noRecordsMatch"
	errNoSetHierarchy          = "noSetHierarchy"
)

// Granularity is a repository's datestamp granularity.
type Granularity int

const (
	Day    Granularity = iota // YYYY-MM-DD
	Second                    // YYYY-MM-DDThh:mm:ssZ
)

const (
	dayLayout    = "2006-01-02"
	secondLayout = "2006-01-02T15:04:05Z"
)

func (g Granularity) String() string {
	if g == Second {
		return "YYYY-MM-DDThh:mm:ssZ"
	}
	return "YYYY-MM-DD"
}

// Format writes t in UTC at granularity g.
func (g Granularity) Format(t time.Time) string {
	if g == Second {
		return t.UTC().Format(secondLayout)
	}
	return t.UTC().Format(dayLayout)
}

func (g Granularity) unit() time.Duration {
	if g == Second {
		return time.Second
	}
	return 24 * time.Hour
}

func parseGranularity(s string) (Granularity, error) {
	switch strings.TrimSpace(s) {
	case "YYYY-MM-DD":
		return Day, nil
	case "YYYY-MM-DDThh:mm:ssZ":
		return Second, nil
	}
	return Day, fmt.Errorf("oaireal: unknown granularity %q", s)
}

func parseDatestamp(s string) (time.Time, Granularity, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(secondLayout, s); err == nil {
		return t, Second, nil
	}
	if t, err := time.Parse(dayLayout, s); err == nil {
		return t, Day, nil
	}
	return time.Time{}, Day, fmt.Errorf("oaireal: bad datestamp %q", s)
}
