#!/usr/bin/env bash
# Every config in examples/ is one a user can run as it is: it parses, plans on this
# machine's actors, and its tuner's schedule simulates to the end. (Training them is what
# docs/benchmarks.md measures; it takes minutes to half an hour.)
set -euo pipefail
source "$(dirname "$0")/prelude.sh" "$@"
examples="$2"
count=0
for config in "$examples"/*.json; do
  "$packtune" plan "$config" > /dev/null || { echo "FAILED: packtune plan $config"; exit 1; }
  out=$("$packtune" simulate "$config" --objective synthetic 2>&1) ||
    { echo "FAILED: packtune simulate $config"; echo "$out"; exit 1; }
  grep -q "^best trial" <<< "$out" || { echo "FAILED: $config: simulate found no best trial"; echo "$out"; exit 1; }
  count=$((count + 1))
done
[ "$count" -ge 2 ] || { echo "FAILED: expected the example configs in $examples, found $count"; exit 1; }
echo "$count passed, 0 failed: every example config plans and simulates"
