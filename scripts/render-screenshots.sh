#!/usr/bin/env bash
# Re-renders every picture in assets/screenshots from the recorded traces and
# results in assets/ (the README and docs/ show them). Needs a viewer build and
# xvfb-run (scripts/setup.sh installs both). Look at each picture after.
#   scripts/render-screenshots.sh [build dir, default build]
set -euo pipefail
cd "$(dirname "$0")/.."
viewer="${1:-build}/bin/tile-viewer"
if [[ ! -x "$viewer" ]]; then
  echo "render-screenshots: no $viewer (build the viewer first: scripts/setup.sh, then cmake --build build)" >&2
  exit 2
fi
command -v xvfb-run >/dev/null || { echo "render-screenshots: xvfb-run not found (apt-get install xvfb)" >&2; exit 2; }

traces=assets/traces/nvidia-h100-80gb-hbm3
out=assets/screenshots
shot() {  # shot NAME viewer-arguments...
  local name=$1
  shift
  xvfb-run -a -s '-screen 0 1920x1080x24' "$viewer" --assets assets --size 1600x900 "$@" \
    --screenshot "$out/$name.png" >/dev/null
  echo "$out/$name.png"
}

# Tile order: the grouped 8192^3 run replayed part-way (the panel follows the trace).
shot order "$traces/lesson03_grouped.grouped8.8192.json.gz" --panel order
# L2 reuse: the two 8192^3 traces' orders through the L2 model on their GPU.
shot l2 "$traces/lesson03_grouped.row_major.8192.json.gz" \
  --compare "$traces/lesson03_grouped.grouped8.8192.json.gz" --panel l2
# Waves: 288 tiles on 132 SMs, the shape Stream-K is for.
shot waves "$traces/lesson04_hopper.tma_store.3072x3072x4096.json.gz" --panel waves
# Timelines: row-major vs grouped; tma_store vs streamk; tma_store vs balanced.
shot timeline "$traces/lesson03_grouped.row_major.8192.json.gz" \
  --compare "$traces/lesson03_grouped.grouped8.8192.json.gz" --panel timeline
shot streamk "$traces/lesson04_hopper.tma_store.3072x3072x4096.json.gz" \
  --compare "$traces/lesson04_hopper.streamk.3072x3072x4096.json.gz" --panel timeline
shot balanced "$traces/lesson04_hopper.tma_store.json.gz" \
  --compare "$traces/lesson04_hopper.balanced.json.gz" --panel timeline
# Split-K at M = 1: the serial semaphore's four k slices against Stream-K's free ranges, by k slice.
shot splitk "$traces/lesson06_splitk.serial.json.gz" --compare "$traces/lesson06_splitk.streamk.json.gz" --panel timeline
# Lesson 08: the two gathered products stacked, and the neurons the units in flight gathered.
shot neurons "$traces/lesson08_sparse_ffn.split_k.json.gz" --panel order
# Results: every recorded H100 run, bars and roofline.
shot results --panel results
