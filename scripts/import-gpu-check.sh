#!/usr/bin/env bash
# Files a GPU check's archive into assets/: results to assets/results/<gpu>/,
# the summary at the top of the summary log beside them (earlier checks below
# it), and, when asked, the traces to assets/traces/<gpu>/ (gzip-compressed:
# .json.gz), and re-renders the lesson pages' recorded tables
# (scripts/lesson-tables.py). Traces are large and every copy stays in the
# repository's history, so import them only when their kernels changed. A
# check that ran no lesson (stages build and tests) has no results: its summary
# is filed alone, under the GPU its summary names.
#
#   scripts/import-gpu-check.sh [--traces] gpu-check.tar.gz summary.txt
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
traces=0
if [ "${1:-}" = "--traces" ]; then traces=1; shift; fi
[ $# -eq 2 ] || { echo "usage: $0 [--traces] gpu-check.tar.gz summary.txt" >&2; exit 2; }
archive=$1 summary=$2
# Both inputs checked before anything is filed, so a bad call changes nothing.
[ -f "$archive" ] || { echo "import: no archive at $archive" >&2; exit 2; }
[ -f "$summary" ] || { echo "import: no summary at $summary" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar xzf "$archive" -C "$tmp"
shopt -s nullglob
results=("$tmp"/gpu-check/results/*.json)
# The GPU's name as the results record it (a check that only ran tests has none:
# then as the summary's "GPU: <name>, <driver>, ..." line has it), as a folder
# name: "NVIDIA H100 80GB HBM3" -> nvidia-h100-80gb-hbm3
if [ ${#results[@]} -gt 0 ]; then
  name=$(sed -n '/"gpu": {/,/}/p' "${results[0]}" | grep -m1 '"name"' | sed 's/.*"name": "\(.*\)".*/\1/')
else
  name=$(sed -n 's/^GPU: \([^,]*\),.*/\1/p' "$summary" | head -n 1)
fi
gpu=$(echo "$name" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\+/-/g; s/^-//; s/-$//')
[ -n "$gpu" ] || { echo "import: no GPU name in the results or the summary" >&2; exit 1; }
mkdir -p "$root/assets/results/$gpu"
[ ${#results[@]} -eq 0 ] || cp "${results[@]}" "$root/assets/results/$gpu/"
# Paths in the summary are the check machine's: keep them relative to its output folder.
# The log keeps every earlier check, newest first.
log="$root/assets/results/$gpu/gpu-check-summary.txt"
sed 's|[^ ]*/gpu-check/|gpu-check/|g' "$summary" > "$tmp/summary.txt"
if [ -f "$log" ]; then { cat "$tmp/summary.txt"; echo; cat "$log"; } > "$tmp/log.txt"; else cp "$tmp/summary.txt" "$tmp/log.txt"; fi
mv "$tmp/log.txt" "$log"
if [ $traces = 1 ]; then
  mkdir -p "$root/assets/traces/$gpu"
  for t in "$tmp"/gpu-check/traces/*.json.gz; do cp "$t" "$root/assets/traces/$gpu/"; done
  # Older checks wrote plain JSON: compressed here.
  for t in "$tmp"/gpu-check/traces/*.json; do gzip -9 -n -c "$t" > "$root/assets/traces/$gpu/$(basename "$t").gz"; done
fi
# The lesson pages' recorded tables, from the results just filed.
python3 "$root/scripts/lesson-tables.py" "$root"/docs/lessons/*.md
echo "import: $gpu: $(ls "$root/assets/results/$gpu" | wc -l) results files$([ $traces = 1 ] && echo ", $(ls "$root/assets/traces/$gpu" | wc -l) trace files")"
