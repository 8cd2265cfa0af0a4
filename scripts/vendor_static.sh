#!/usr/bin/env bash
# Refresh the front-end libraries served from static/vendor, from the npm registry.
# They are committed, so a fresh machine needs no npm; run this only to upgrade.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
(cd "$tmp" && npm pack htmx.org@2.0.11 >/dev/null && tar xzf htmx.org-*.tgz)
cp "$tmp/package/dist/htmx.min.js" static/vendor/htmx.min.js
rm -rf "$tmp"
