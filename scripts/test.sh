#!/usr/bin/env bash
# Runs every check of the project: formatting, vet, the tests (plain and
# with the race detector) and each fuzz target for a bounded time.
# Installs what a fresh Debian machine lacks (see below).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
FUZZTIME="${FUZZTIME:-10s}"

# What the tests use from Debian, installed when missing:
#   xmllint (libxml2-utils): our XML against the XSDs and the Atom RELAX NG grammar;
#   virtuoso-t, isql-vt (virtuoso-opensource-7-bin): the real SPARQL 1.1 endpoint
#     the SDShare graph store tests start on loopback (internal/testing/sparqltest);
#   rapper (raptor2-utils): a second RDF parser our Turtle/RDF-XML readers and
#     writers are cross-checked against;
#   initdb, postgres (postgresql): the throwaway PostgreSQL the store, replica
#     and hub-cluster tests start on loopback (internal/testing/pgtest; as root they
#     run it as the user postgres, which the package creates);
#   chromium: the headless browser the HTML views are tested in
#     (internal/testing/browsertest, through the DevTools protocol);
#   nginx: the reverse proxy (auth_basic, a bearer-token check) a protected
#     Source is mirrored through (cmd/resourcesync protected_test.go; run in
#     the foreground on loopback with a temporary prefix, never as a service);
#   apache2 (apache2-bin: the server binary and modules only, no service that
#     would start on port 80) and /etc/mime.types (media-types): the Apache
#     block of docs/publish-nginx.md is run on loopback (docs_test.go).
#   perl with HTTP::OAI (libhttp-oai-perl, libxml-sax-writer-perl): the static
#     repository gateway the OAI-PMH harvester is tested against, run as CGI on
#     loopback, and HTTP::OAI's oai_pmh harvester (internal/testing/oaireal);
#   mkfs.vfat, fusefat (dosfstools, fusefat): a FAT image mounted through FUSE,
#     the case-insensitive file system sync and the OAI-PMH harvester are tested
#     on (internal/testing/casefoldfs; the kernel here may lack vfat and casefold);
#   catmandu (libcatmandu-perl, libcatmandu-oai-perl): a second real OAI-PMH
#     harvester, run against the test repositories (internal/testing/oaireal)
#     and, with oai_pmh, against oai serve (cmd/resourcesync oai_serve_test.go).
#   aws (awscli), s3cmd: the independent S3 clients that check what the S3
#     storage wrote and change what it reads (internal/testing/s3test; Debian's
#     /usr/bin/aws, whatever other aws is on PATH).
need=()
command -v xmllint >/dev/null 2>&1 || need+=(libxml2-utils)
command -v virtuoso-t >/dev/null 2>&1 || need+=(virtuoso-opensource-7-bin)
command -v rapper >/dev/null 2>&1 || need+=(raptor2-utils)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need+=(chromium)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
[ -x /usr/sbin/apache2 ] || need+=(apache2-bin)
[ -f /etc/mime.types ] || need+=(media-types)
perl -MHTTP::OAI -e 1 >/dev/null 2>&1 || need+=(libhttp-oai-perl)
perl -MXML::SAX::Writer -e 1 >/dev/null 2>&1 || need+=(libxml-sax-writer-perl)
command -v catmandu >/dev/null 2>&1 || need+=(libcatmandu-perl)
perl -MCatmandu::Importer::OAI -e 1 >/dev/null 2>&1 || need+=(libcatmandu-oai-perl)
command -v mkfs.vfat >/dev/null 2>&1 || [ -x /usr/sbin/mkfs.vfat ] || need+=(dosfstools)
command -v fusefat >/dev/null 2>&1 || need+=(fusefat)
[ -x /usr/bin/aws ] || need+=(awscli)
command -v s3cmd >/dev/null 2>&1 || need+=(s3cmd)
if [ ${#need[@]} -gt 0 ]; then
  echo "== installing ${need[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# versitygw, the S3 server the S3 storage is tested against on loopback
# (internal/testing/s3test), from the Go module proxy into GOPATH/bin, once.
VERSITYGW_VERSION=v1.8.0
if ! command -v versitygw >/dev/null 2>&1 && [ ! -x "$(go env GOPATH)/bin/versitygw" ]; then
  echo "== installing versitygw ${VERSITYGW_VERSION}"
  (cd / && GOBIN="$(go env GOPATH)/bin" go install "github.com/versity/versitygw/cmd/versitygw@${VERSITYGW_VERSION}")
fi

# npm tools the tests run as real peers, pinned, each in its own directory
# of the cache internal/testing/npmtest reads ($RESOURCESYNC_NPM_DIR, else
# ~/.cache/resourcesync-npm/NAME-VERSION): ldes-client (replicates our
# LDES, source/ldesclient_test.go) and sitemapper (reads our plain
# sitemaps, source/publish/plainsitemap_test.go). Under CI=true a missing
# one fails its test.
NPM_DIR="${RESOURCESYNC_NPM_DIR:-$HOME/.cache/resourcesync-npm}"
for pkg in ldes-client@0.3.0 sitemapper@4.1.6; do
  name="${pkg%@*}"; version="${pkg##*@}"
  if [ ! -f "$NPM_DIR/$name-$version/node_modules/$name/package.json" ]; then
    echo "== installing npm $pkg"
    mkdir -p "$NPM_DIR/$name-$version"
    (cd "$NPM_DIR/$name-$version" && npm install --no-audit --no-fund --silent "$pkg" >/dev/null)
  fi
done

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt needed:"; echo "$unformatted"; exit 1; fi

echo "== go vet"
go vet ./...

echo "== cross-compile"
GOOS=darwin GOARCH=arm64 go vet ./...
GOOS=windows go vet ./...
GOOS=darwin go build ./...
GOOS=windows go build ./...

echo "== go test"
go test -count=1 -timeout 30m ./...

echo "== go test -race -short"
go test -count=1 -timeout 30m -race -short ./...

echo "== fuzz (${FUZZTIME} each)"
# A finding always writes its input under testdata/fuzz/TARGET. Go 1.26's
# coordinator can also fail a run with a bare "context deadline exceeded"
# at the end of -fuzztime while no input failed (golang/go#75804, fixed in
# Go 1.27): that alone is reported and does not fail the checks.
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "-- $pkg $f"
    corpus="$dir/testdata/fuzz/$f"
    before=$(ls "$corpus" 2>/dev/null || true)
    out=$(mktemp)
    if go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" "$pkg" >"$out" 2>&1; then
      tail -n 2 "$out"; rm -f "$out"; continue
    fi
    cat "$out"
    found=""
    for c in $(ls "$corpus" 2>/dev/null || true); do
      if ! grep -qxF "$c" <<<"$before"; then
        found=1; echo "--- failing input $corpus/$c:"; cat "$corpus/$c"; echo
      fi
    done
    if [ -z "$found" ] && grep -q '^    context deadline exceeded$' "$out"; then
      echo "(no failing input: the fuzz coordinator's deadline race, golang/go#75804; not a finding)"
      rm -f "$out"; continue
    fi
    rm -f "$out"; exit 1
  done
done
echo "== all checks passed"
