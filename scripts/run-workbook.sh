#!/usr/bin/env bash
# The main job: set up, build, then run the lessons in order (with no GPU or no
# CUDA build: each lesson's explanation with the results recorded on a real GPU),
# then open the viewer when a display exists.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WORKBOOK_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
status=0
"$build/bin/workbook" "$@" || status=$?
if [ -n "${DISPLAY:-}" ] && [ -x "$build/bin/tile-viewer" ] && [ -z "${CI:-}" ]; then
  echo "opening tile-viewer (close its window to finish)"
  "$build/bin/tile-viewer" || true
elif [ -x "$build/bin/tile-viewer" ]; then
  echo "no display: run $build/bin/tile-viewer on a machine with one (or under xvfb-run with --screenshot)"
fi
exit $status
