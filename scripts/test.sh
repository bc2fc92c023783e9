#!/usr/bin/env bash
# Runs every check of the project: formatting, vet, the tests (plain and
# with the race detector) and each fuzz target for a bounded time.
# Installs what a fresh Debian machine lacks (xmllint, for the XSD checks).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
FUZZTIME="${FUZZTIME:-10s}"

if ! command -v xmllint >/dev/null 2>&1; then
  echo "== installing libxml2-utils (xmllint)"
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libxml2-utils >/dev/null
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt needed:"; echo "$unformatted"; exit 1; fi

echo "== go vet"
go vet ./...

echo "== go test"
go test -count=1 ./...

echo "== go test -race -short"
go test -count=1 -race -short ./...

echo "== fuzz (${FUZZTIME} each)"
for pkg in $(go list ./...); do
  for f in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "-- $pkg $f"
    go test -run '^$' -fuzz "^${f}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1 | tail -n 2
  done
done
echo "== all checks passed"
