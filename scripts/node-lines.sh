#!/usr/bin/env bash
# Runs the demo and tiers of the tests (NODE_LINES_TIERS, default "unit integration ceilings") of the last
# commit on other Node.js lines (default: 22 24 26), each in a clone of its own with its own
# node_modules (better-sqlite3 is built for that line). The Node binaries come from the npm
# registry (node-<platform>-<arch>), so this needs no other network.
# Usage: bash scripts/node-lines.sh [major ...]
set -uo pipefail

repo=$(git rev-parse --show-toplevel) || exit 2
work=${NODE_LINES_DIR:-${TMPDIR:-/tmp}/report-sync-node-lines}
platform=$(node -p 'process.platform + "-" + process.arch')
majors=("$@")
[ ${#majors[@]} -eq 0 ] && majors=(22 24 26)
mkdir -p "$work"
failed=0

for major in "${majors[@]}"; do
  line="$work/node-$major"
  if [ ! -x "$line/package/bin/node" ]; then
    echo "node $major: fetching node-$platform@$major from the npm registry"
    rm -rf "$line" && mkdir -p "$line"
    tarball=$(cd "$line" && npm pack --silent "node-$platform@$major") || { echo "node $major: npm pack failed"; failed=1; continue; }
    tar xzf "$line/$tarball" -C "$line" && rm "$line/$tarball"
  fi
  clone="$work/clone-$major"
  rm -rf "$clone" && git clone -q "$repo" "$clone"
  (
    cd "$clone" || exit 1
    export PATH="$line/package/bin:$PATH" npm_config_nodedir="$line/package"
    log() { echo "node $(node --version): $*"; }
    npm ci --no-audit --no-fund > npm-ci.log 2>&1 || { log "npm ci failed, see $clone/npm-ci.log"; exit 1; }
    status=0
    for step in demo ${NODE_LINES_TIERS:-unit integration ceilings}; do
      case $step in
        demo) command=(timeout 300 npm run demo) ;;
        *) command=(npx vitest run --project "$step") ;;
      esac
      if "${command[@]}" > "$step.log" 2>&1; then log "$step passed"; else log "$step FAILED, see $clone/$step.log"; status=1; fi
    done
    exit $status
  ) || failed=1
done
exit $failed
