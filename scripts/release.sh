#!/usr/bin/env bash
# Cross-compiles the release binaries of resourcesync into dist/ (ignored by
# git), with a SHA256SUMS file beside them:
#
#   scripts/release.sh                 # version from `git describe`
#   VERSION=v1.2.0 scripts/release.sh  # or as given
#   TARGETS="linux/amd64" scripts/release.sh
#
# Each binary is static (CGO_ENABLED=0), built with -trimpath and stamped
# with the version, the commit and the commit's time (-ldflags -X), which
# `resourcesync --version` prints. Check a download with
# `sha256sum -c --ignore-missing SHA256SUMS` (macOS: `shasum -a 256 -c`).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

VERSION="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
COMMIT="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
# The commit's time, not the clock's: the same commit builds the same bytes.
DATE="$(git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)"
TARGETS="${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}"
OUT="${OUT:-dist}"

rm -rf "$OUT"
mkdir -p "$OUT"
for target in $TARGETS; do
  os="${target%/*}"
  arch="${target#*/}"
  ext=""
  [ "$os" = windows ] && ext=".exe"
  name="resourcesync-${VERSION}-${os}-${arch}${ext}"
  echo "== $name"
  CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" TZ=UTC go build -trimpath \
    -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" \
    -o "$OUT/$name" ./cmd/resourcesync
done

cd "$OUT"
if command -v sha256sum >/dev/null 2>&1; then
  sha256sum resourcesync-* > SHA256SUMS
else
  shasum -a 256 resourcesync-* > SHA256SUMS
fi
echo "== $OUT/SHA256SUMS"
cat SHA256SUMS
