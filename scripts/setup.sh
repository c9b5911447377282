#!/usr/bin/env bash
# Idempotent setup for truegreen on Debian 12: installs the Debian packages the build and the tests
# need, then fetches ONNX Runtime 1.29.0 (CPU core + GPU provider plugins) from the npm registry with
# `npm pack`, verifies the sha256 of each tarball and unpacks the parts we use into third_party/.
# A second run finds everything in place and downloads nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TP="${ROOT}/third_party"
CACHE="${TP}/.cache"
ORT_DIR="${TP}/onnxruntime"

# Debian packages, by name. Keep this list the single place where build/test dependencies live.
PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates ccache
  clang libclang-rt-14-dev clang-format
  libboost-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  libspng-dev libpng-dev zlib1g-dev libutf8proc-dev libarchive-dev libssl-dev libzstd-dev libre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-onnx python3-numpy python3-jsonschema libxml2-utils prometheus curl
  umoci skopeo buildah zstd tar gzip file binutils
  openssl  # certificates for the HTTPS test of `k8s promote` (tests/audit_k8s_tls_test.cc)
  chromium  # headless screenshot test of the bench HTML report (tests/bench_load_test.cc)
  nginx-light wrk time  # make bench: the generator and the server against nginx under wrk
)

log() { printf '[setup] %s\n' "$*" >&2; }

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi

if [ "${#missing[@]}" -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  log "Debian packages: all present"
fi

# name@version  sha256-of-tarball
ORT_CORE_PKG="com.github.asus4.onnxruntime@0.4.9"
ORT_CORE_SHA="e59788788818fdde1b2e522e766a21ba0f7d8391de55737abf81e32cc801785d"
ORT_GPU_PKG="com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9"
ORT_GPU_SHA="2b459e0c17f340c92970c10ed86de4f37a3009f93c14053e6ad4334cbb6be412"
ORT_VERSION="1.29.0"

mkdir -p "${CACHE}"

# fetch NAME@VERSION SHA -> prints the verified tarball path
fetch() {
  local spec="$1" sha="$2" name ver tgz
  name="${spec%@*}"; ver="${spec##*@}"
  tgz="${CACHE}/${name}-${ver}.tgz"
  if [ -f "${tgz}" ] && echo "${sha}  ${tgz}" | sha256sum -c --status; then
    echo "${tgz}"; return 0
  fi
  log "npm pack ${spec}"
  (cd "${CACHE}" && npm pack --silent "${spec}" >/dev/null)
  if ! echo "${sha}  ${tgz}" | sha256sum -c --status; then
    log "checksum mismatch for ${tgz}: expected ${sha}, got $(sha256sum "${tgz}" | cut -d' ' -f1)"
    rm -f "${tgz}"
    exit 1
  fi
  echo "${tgz}"
}

stamp="${ORT_DIR}/.stamp"
want="layout-2 ${ORT_CORE_SHA} ${ORT_GPU_SHA}"
if [ -f "${stamp}" ] && [ "$(cat "${stamp}")" = "${want}" ]; then
  log "ONNX Runtime ${ORT_VERSION}: present in ${ORT_DIR}"
  exit 0
fi

core_tgz="$(fetch "${ORT_CORE_PKG}" "${ORT_CORE_SHA}")"
gpu_tgz="$(fetch "${ORT_GPU_PKG}" "${ORT_GPU_SHA}")"

rm -rf "${ORT_DIR}.tmp"
mkdir -p "${ORT_DIR}.tmp/lib" "${ORT_DIR}.tmp/include" "${ORT_DIR}.tmp/gpu"
hdr='package/Plugins/iOS~/onnxruntime.xcframework/ios-arm64/onnxruntime.framework/Headers'
tar --no-same-owner -xzf "${core_tgz}" -C "${ORT_DIR}.tmp" \
  package/Plugins/Linux/x64/libonnxruntime.so package/LICENSE package/ThirdPartyNotices.txt "${hdr}"
mv "${ORT_DIR}.tmp/package/Plugins/Linux/x64/libonnxruntime.so" "${ORT_DIR}.tmp/lib/"
mv "${ORT_DIR}.tmp/${hdr}"/*.h "${ORT_DIR}.tmp/include/"
mv "${ORT_DIR}.tmp/package/LICENSE" "${ORT_DIR}.tmp/package/ThirdPartyNotices.txt" "${ORT_DIR}.tmp/"
rm -rf "${ORT_DIR}.tmp/package"
tar --no-same-owner -xzf "${gpu_tgz}" -C "${ORT_DIR}.tmp" package/Plugins/Linux/x64
mv "${ORT_DIR}.tmp/package/Plugins/Linux/x64/"*.so "${ORT_DIR}.tmp/gpu/"
# ORT looks for libonnxruntime_providers_shared.so next to libonnxruntime.so when it loads a GPU
# provider; without it the provider is opened anyway and can crash on a stub driver.
ln -s ../gpu/libonnxruntime_providers_shared.so "${ORT_DIR}.tmp/lib/libonnxruntime_providers_shared.so"
rm -rf "${ORT_DIR}.tmp/package"
echo "${want}" > "${ORT_DIR}.tmp/.stamp"
rm -rf "${ORT_DIR}"
mv "${ORT_DIR}.tmp" "${ORT_DIR}"
log "ONNX Runtime ${ORT_VERSION}: unpacked into ${ORT_DIR} (lib/, gpu/, include/)"
