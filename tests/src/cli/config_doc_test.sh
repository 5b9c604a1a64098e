#!/bin/sh
# docs/config.md is what the config table (src/experiment/config_keys.def) generates: after a
# change to the table, `packtune config --markdown > docs/config.md` brings the page up to date.
set -eu
packtune=$1
doc=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$packtune" config --markdown > "$out"
if ! diff -u "$doc" "$out"; then
  echo "FAILED: $doc differs from the config table; run: packtune config --markdown > docs/config.md"
  exit 1
fi
echo "docs/config.md: up to date"
