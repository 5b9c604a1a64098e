#!/usr/bin/env bash
# docs/config.md is what the config table (src/experiment/config_keys.def) generates: after a
# change to the table, `packtune config --markdown > docs/config.md` brings the page up to date.
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
doc=$2
"$packtune" config --markdown > "$work/config.md"
if ! diff -u "$doc" "$work/config.md"; then
  echo "FAILED: $doc differs from the config table; run: packtune config --markdown > docs/config.md"
  exit 1
fi
echo "docs/config.md: up to date"
