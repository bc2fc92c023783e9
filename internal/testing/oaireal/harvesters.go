package oaireal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Harvested is one record as Catmandu's OAI importer reports it with
// --handler raw: the metadata child as Catmandu serialised it.
type Harvested struct {
	Identifier string   `json:"_identifier"`
	Datestamp  string   `json:"_datestamp"`
	Status     string   `json:"_status"` // "deleted" for a deleted record
	Metadata   string   `json:"_metadata"`
	Sets       []string `json:"_setSpec"`
}

// loopbackEnv is the environment of a harvester child: no proxy, so that
// it dials the loopback URL it is given and nothing else.
func loopbackEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasSuffix(strings.ToLower(k), "_proxy") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "no_proxy=*")
}

// Catmandu harvests url with Catmandu's OAI importer (a real harvester:
// Identify, ListRecords with resumption tokens; HTTP::OAI underneath):
//
//	catmandu convert OAI --url URL --metadataPrefix oai_dc --handler raw ARGS... to JSON --array 1
//
// args go before "to" (--from, --until, --set, --metadataPrefix to replace
// oai_dc, --listIdentifiers 1). The error holds Catmandu's stderr.
func Catmandu(t testing.TB, url string, args ...string) ([]Harvested, error) {
	t.Helper()
	bin := Need(t, "catmandu", PkgCatmandu)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv := []string{"convert", "OAI", "--url", url, "--handler", "raw"}
	if !contains(args, "--metadataPrefix") {
		argv = append(argv, "--metadataPrefix", "oai_dc")
	}
	argv = append(append(argv, args...), "to", "JSON", "--array", "1")
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Env = loopbackEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("catmandu %s: %v: %s", strings.Join(argv, " "), err, stderr.Bytes())
	}
	var recs []Harvested
	if err := json.Unmarshal(out, &recs); err != nil {
		return nil, fmt.Errorf("catmandu output: %v: %.300s", err, out)
	}
	return recs, nil
}

// OAIPMH runs HTTP::OAI's command-line harvester (oai_pmh ARGS..., the
// base URL last; -X VERB, --metadataPrefix, --from, --until, --set) and
// returns its output, the error holding it when it fails.
func OAIPMH(t testing.TB, args ...string) (string, error) {
	t.Helper()
	bin := Need(t, "oai_pmh", PkgHTTPOAI)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = loopbackEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("oai_pmh %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
