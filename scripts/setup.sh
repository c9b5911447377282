#!/usr/bin/env bash
# Idempotent setup for truegreen on Debian 12: installs the Debian packages the build and the tests
# need, then fetches ONNX Runtime 1.29.0 (a GPU-flavor core with its CUDA/TensorRT providers, and a
# CPU-built core for the tests) from the npm registry with `npm pack`, verifies the sha256 of each
# tarball and unpacks the parts we use into third_party/.
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
  libonnx-dev libprotobuf-dev  # runtime/onnx_model.h: ONNX models, checker, shape inference
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-onnx python3-numpy python3-jsonschema python3-yaml libxml2-utils prometheus curl
  umoci skopeo buildah zstd tar gzip file binutils
  openssl  # certificates for the HTTPS test of `k8s promote` (tests/audit_k8s_tls_test.cc)
  chromium  # headless screenshot test of the bench HTML report (tests/bench_load_test.cc)
  nginx-light wrk time  # make bench: the generator and the server against nginx under wrk
)

log() { printf '[setup] %s\n' "$*" >&2; }

missing=()
for p in "${PACKAGES[@]}"; do
  if ! grep -q 'install ok installed' <<<"$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)"; then
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

# ONNX Runtime 1.29.0, by package name, each tarball pinned by sha256. All three carry build info
# git-commit-id=2e2543fbe9, the ORT 1.29.0 release commit:
#   ORT_CORE_PKG  the Node binding's tarball. Its linux-x64 libonnxruntime.so.1 is a core built with
#                 CUDA and TensorRT (GetAvailableProviders lists both); only that file is used.
#   ORT_GPU_PKG   the CUDA 13 / TensorRT 10 provider libraries and libonnxruntime_providers_shared.so.
#   ORT_CPU_PKG   the C/C++ headers, the licence texts, and a CPU-built core, kept apart as the real
#                 fixture of the build-flavor tests (beside GPU providers that core crashes on a GPU;
#                 docs/POLICY.md).
# Layout, as in an ORT GPU release archive (core and providers in ONE folder; docs/GPU.md):
#   third_party/onnxruntime/include/*.h
#   third_party/onnxruntime/lib/libonnxruntime.so -> libonnxruntime.so.1 -> libonnxruntime.so.1.29.0
#   third_party/onnxruntime/lib/libonnxruntime_providers_{shared,cuda,tensorrt}.so
#   third_party/onnxruntime-cpu/lib/libonnxruntime.so          (test fixture only, never shipped)
ORT_CORE_PKG="onnxruntime-node@1.29.0"
ORT_CORE_SHA="cfdfb45ec4044b1fdca43e5d2e180fb6817e649ff8ad1e0dfc90e18e51b67037"
ORT_GPU_PKG="com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9"
ORT_GPU_SHA="2b459e0c17f340c92970c10ed86de4f37a3009f93c14053e6ad4334cbb6be412"
ORT_CPU_PKG="com.github.asus4.onnxruntime@0.4.9"
ORT_CPU_SHA="e59788788818fdde1b2e522e766a21ba0f7d8391de55737abf81e32cc801785d"
ORT_VERSION="1.29.0"
ORT_CPU_DIR="${TP}/onnxruntime-cpu"

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

# Both folders carry the same stamp; any other layout (an older setup's) is replaced whole.
want="layout-3 ${ORT_CORE_SHA} ${ORT_GPU_SHA} ${ORT_CPU_SHA}"
if [ "$(cat "${ORT_DIR}/.stamp" 2>/dev/null)" = "${want}" ] &&
  [ "$(cat "${ORT_CPU_DIR}/.stamp" 2>/dev/null)" = "${want}" ]; then
  log "ONNX Runtime ${ORT_VERSION}: present in ${ORT_DIR} (GPU-flavor core + providers)"
  exit 0
fi

core_tgz="$(fetch "${ORT_CORE_PKG}" "${ORT_CORE_SHA}")"
gpu_tgz="$(fetch "${ORT_GPU_PKG}" "${ORT_GPU_SHA}")"
cpu_tgz="$(fetch "${ORT_CPU_PKG}" "${ORT_CPU_SHA}")"

new="${ORT_DIR}.tmp"
cpu_new="${ORT_CPU_DIR}.tmp"
lib="${new}/lib"
rm -rf "${new}" "${cpu_new}"
mkdir -p "${lib}" "${new}/include" "${cpu_new}/lib"
# The GPU-flavor core: one file out of the Node binding's tarball (the rest is other platforms).
node_core='package/bin/napi-v6/linux/x64/libonnxruntime.so.1'
tar --no-same-owner -xzf "${core_tgz}" -C "${new}" "${node_core}"
mv "${new}/${node_core}" "${lib}/libonnxruntime.so.${ORT_VERSION}"
ln -s "libonnxruntime.so.${ORT_VERSION}" "${lib}/libonnxruntime.so.1"
ln -s libonnxruntime.so.1 "${lib}/libonnxruntime.so"
rm -rf "${new}/package"
# The providers beside it: ORT opens libonnxruntime_providers_shared.so from the core's own
# directory before any GPU provider, so every provider library sits in lib/ too.
tar --no-same-owner -xzf "${gpu_tgz}" -C "${new}" package/Plugins/Linux/x64
for f in libonnxruntime_providers_shared.so libonnxruntime_providers_cuda.so \
  libonnxruntime_providers_tensorrt.so; do
  [ -f "${new}/package/Plugins/Linux/x64/${f}" ] || { log "error: ${ORT_GPU_PKG} has no ${f}"; exit 1; }
  mv "${new}/package/Plugins/Linux/x64/${f}" "${lib}/"
done
rm -rf "${new}/package"
# Headers and licence texts; the CPU-built core goes to its own folder, away from the providers.
hdr='package/Plugins/iOS~/onnxruntime.xcframework/ios-arm64/onnxruntime.framework/Headers'
tar --no-same-owner -xzf "${cpu_tgz}" -C "${new}" \
  package/Plugins/Linux/x64/libonnxruntime.so package/LICENSE package/ThirdPartyNotices.txt "${hdr}"
mv "${new}/${hdr}"/*.h "${new}/include/"
mv "${new}/package/LICENSE" "${new}/package/ThirdPartyNotices.txt" "${new}/"
mv "${new}/package/Plugins/Linux/x64/libonnxruntime.so" "${cpu_new}/lib/"
rm -rf "${new}/package"
printf '%s\n' \
  "CPU-built ONNX Runtime ${ORT_VERSION} core from ${ORT_CPU_PKG}, installed by scripts/setup.sh" \
  "only as the real fixture of the build-flavor tests: beside the GPU providers it crashes on a" \
  "GPU. Nothing loads it by default and no image ships it; ../onnxruntime/lib is the pair in use." \
  > "${cpu_new}/README"
echo "${want}" > "${new}/.stamp"
echo "${want}" > "${cpu_new}/.stamp"
rm -rf "${ORT_DIR}" "${ORT_CPU_DIR}"
mv "${new}" "${ORT_DIR}"
mv "${cpu_new}" "${ORT_CPU_DIR}"
log "ONNX Runtime ${ORT_VERSION}: ${ORT_DIR}/lib holds the GPU-flavor core (${ORT_CORE_PKG}) and" \
  "the CUDA/TensorRT providers (${ORT_GPU_PKG}); the CPU-built core is in ${ORT_CPU_DIR} (tests)"
