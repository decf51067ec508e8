#!/usr/bin/env bash
# Installs what the workbook needs from the distribution's packages (Debian 12,
# Ubuntu 24.04), only what is missing, with sudo when not root; then configures
# and builds into build/. Never installs CUDA: without a usable nvcc the build is
# host-only and says so.
#
#   scripts/setup.sh              set up and build
#   scripts/setup.sh --sanitize   also the sanitizer build: the host code under
#                                 AddressSanitizer + UndefinedBehaviorSanitizer and
#                                 the libFuzzer targets, with clang, into build-sanitize/
# Environment: WORKBOOK_CUDA_ARCHITECTURES (e.g. 90a-real) picks the GPU architectures;
#              WORKBOOK_BUILD_DIR the build folder (default build/; the sanitizer
#              build goes beside it, with -sanitize appended).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WORKBOOK_BUILD_DIR:-$root/build}
sanitize=0
[ "${1:-}" = "--sanitize" ] && sanitize=1

packages=(g++ cmake make pkg-config git libgtest-dev nlohmann-json3-dev libcli11-dev zlib1g-dev libpng-dev
          libimgui-dev libglfw3-dev libgl-dev xvfb xauth libgl1-mesa-dri)
[ $sanitize = 1 ] && packages+=(clang libclang-rt-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
echo "setup: needs ${packages[*]}"
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all present"
fi

# nvcc is often installed outside PATH.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi

# configure_and_build DIR [CMAKE ARGS...]
configure_and_build() {
  local dir=$1
  shift
  local args=(-S "$root" -B "$dir" "$@")
  if [ ! -f "$dir/CMakeCache.txt" ]; then args+=("${generator[@]}"); fi
  cmake "${args[@]}" | grep -E "matmul-workbook|tile-viewer|Error|error" || true
  cmake --build "$dir" -j "$(nproc)"
}

cuda_args=()
if [ -n "${WORKBOOK_CUDA_ARCHITECTURES:-}" ]; then
  cuda_args+=("-DWORKBOOK_CUDA_ARCHITECTURES=$WORKBOOK_CUDA_ARCHITECTURES")
fi
configure_and_build "$build" -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}"
if [ $sanitize = 1 ]; then
  configure_and_build "$build-sanitize" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
      -DCMAKE_CXX_COMPILER=clang++ -DWORKBOOK_SANITIZE=ON -DWORKBOOK_FUZZ=ON
fi
