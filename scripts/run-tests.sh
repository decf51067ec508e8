#!/usr/bin/env bash
# The test command: set up, build, run every test. GPU tests skip, saying why,
# without a device. WORKBOOK_CUDA_ARCHITECTURES picks the architectures built
# (CI: 90a-real).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WORKBOOK_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" "$@"
