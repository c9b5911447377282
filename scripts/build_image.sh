#!/usr/bin/env bash
# Builds truegreen's runtime image WITHOUT a Docker daemon and exports it as an image archive.
#
# No registry image can be pulled here, so the image is assembled FROM scratch out of what this
# machine already built: the truegreen binary, exactly the shared libraries it loads (from ldd, at
# the paths ldd reports, so the dynamic loader finds them without /etc/ld.so.cache) and the ONNX
# Runtime libraries (the GPU-flavor core with its CUDA/TensorRT provider plugins and the CUDA
# libraries those load, under /opt/truegreen/lib, found through TRUEGREEN_LIB_PATH). NVIDIA driver
# libraries (libcuda, libnvidia-*) are never copied: the container toolkit injects them. No shell,
# no package manager.
#
# The root filesystem is smoke-tested with `chroot ROOTFS /usr/bin/truegreen --version` (root
# only) so a missing library fails here, not in the cluster, and with the image's commands when
# asked (--smoke-matrix, below). The image is built with Debian's
# buildah (vfs storage, chroot isolation, private storage under the output directory) and pushed
# to an archive; if buildah is unusable the OCI layout is written with umoci instead (say so in
# the log). deploy/Dockerfile's build stage runs this script with --collect-only.
#
# TensorRT: without --tensorrt-dir the image carries no TensorRT and no TensorRT provider (only
# the CUDA provider, which deploy/matrix.production.yaml requires) and its label
# dev.truegreen.tensorrt says "none". With --tensorrt-dir DIR (a TensorRT 10 install whose lib/
# holds libnvinfer.so.10 ...) its libraries go to /opt/tensorrt/lib with the TensorRT provider,
# the label names the version, and deploy/matrix.production-tensorrt.yaml is the matrix to judge
# it by (label dev.truegreen.matrix).
#
# Smoke test: with --smoke-matrix and --smoke-pipeline (make image passes the deployment's matrix
# and the bundled small SD 1.5 pipeline) scripts/image_smoke.sh runs doctor and serve in the
# collected root filesystem and the build fails unless both pass; it then removes one CUDA library
# the providers need (--smoke-remove, default libcublasLt.so.13) and checks that the smoke test
# fails, so a smoke test that cannot see a broken image fails the build too. Without them only
# `truegreen --version` runs in the chroot.
#
# Usage: scripts/build_image.sh [--binary build/bin/truegreen] [--ort-dir third_party/onnxruntime]
#          [--out build/image/truegreen.tar] [--format oci-archive|docker-archive]
#          [--tag truegreen:local] [--builder auto|buildah|umoci] [--collect-only DIR]
#          [--compression zstd|gzip|none]   (layer compression; zstd is fast, gzip most compatible)
#          [--tensorrt-dir DIR] [--smoke-matrix FILE --smoke-pipeline DIR [--smoke-remove LIB]]
# Writes OUT and OUT's digest to <OUT without .tar>.digest. Exit 0 on success, non-zero on any
# failure (missing binary, unresolved library, smoke test, builder error).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BINARY="${ROOT}/build/bin/truegreen"
ORT_DIR="${ROOT}/third_party/onnxruntime"
OUT="${ROOT}/build/image/truegreen.tar"
FORMAT="oci-archive"
TAG="truegreen:local"
BUILDER="${TG_IMAGE_BUILDER:-auto}"
COLLECT_ONLY=""
COMPRESSION="zstd"
TENSORRT_DIR=""
SMOKE_MATRIX=""
SMOKE_PIPELINE=""
SMOKE_REMOVE="libcublasLt.so.13"

log() { printf '[build_image] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

while [ $# -gt 0 ]; do
  case "$1" in
    --binary) BINARY="$2"; shift 2 ;;
    --ort-dir) ORT_DIR="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --format) FORMAT="$2"; shift 2 ;;
    --tag) TAG="$2"; shift 2 ;;
    --builder) BUILDER="$2"; shift 2 ;;
    --collect-only) COLLECT_ONLY="$2"; shift 2 ;;
    --compression) COMPRESSION="$2"; shift 2 ;;
    --tensorrt-dir) TENSORRT_DIR="$2"; shift 2 ;;
    --smoke-matrix) SMOKE_MATRIX="$2"; shift 2 ;;
    --smoke-pipeline) SMOKE_PIPELINE="$2"; shift 2 ;;
    --smoke-remove) SMOKE_REMOVE="$2"; shift 2 ;;
    -h|--help) sed -n '2,38p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case "${FORMAT}" in oci-archive|docker-archive) ;; *) die "--format must be oci-archive or docker-archive" ;; esac
case "${COMPRESSION}" in zstd|gzip|none) ;; *) die "--compression must be zstd, gzip or none" ;; esac
case "${BUILDER}" in auto|buildah|umoci) ;; *) die "--builder must be auto, buildah or umoci" ;; esac
[ -x "${BINARY}" ] || die "binary '${BINARY}' not found or not executable (build it first: make build)"
[ -f "${ORT_DIR}/lib/libonnxruntime.so" ] || die "ONNX Runtime not found in '${ORT_DIR}' (run scripts/setup.sh)"
if [ -n "${TENSORRT_DIR}" ]; then
  compgen -G "${TENSORRT_DIR}/lib/libnvinfer.so.10*" >/dev/null ||
    die "--tensorrt-dir '${TENSORRT_DIR}': no lib/libnvinfer.so.10* (a TensorRT 10 install)"
fi
if [ -n "${SMOKE_MATRIX}${SMOKE_PIPELINE}" ]; then
  [ -f "${SMOKE_MATRIX}" ] || die "--smoke-matrix '${SMOKE_MATRIX}' not found"
  [ -f "${SMOKE_PIPELINE}/model_index.json" ] ||
    die "--smoke-pipeline '${SMOKE_PIPELINE}' has no model_index.json"
fi

# ---- 1. collect the root filesystem ----------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/tg-image.XXXXXX")"
cleanup() { rm -rf "${WORK}"; }
trap cleanup EXIT
ROOTFS="${COLLECT_ONLY:-${WORK}/rootfs}"
mkdir -p "${ROOTFS}/usr/bin" "${ROOTFS}/opt/truegreen/lib" "${ROOTFS}/tmp"
chmod 1777 "${ROOTFS}/tmp"

install -m 0755 "${BINARY}" "${ROOTFS}/usr/bin/truegreen"
if command -v strip >/dev/null 2>&1; then strip --strip-unneeded "${ROOTFS}/usr/bin/truegreen"; fi

is_driver_lib() {
  case "$(basename "$1")" in libcuda.so*|libnvidia-*|libnvcuvid.so*|libcudadebugger.so*) return 0 ;; esac
  return 1
}

# copy_deps FILE: copies every library ldd resolves for FILE to the same path under ROOTFS.
# "not found" is fatal for the binary (it would not start) and reported for the GPU provider
# plugins (their CUDA libraries come from the CUDA/cuDNN/TensorRT install, see docs).
copy_deps() {
  local file="$1" strict="$2" line lib
  local out
  out="$(ldd "${file}" 2>&1)" || die "ldd ${file} failed: ${out}"
  while IFS= read -r line; do
    line="${line#"${line%%[![:space:]]*}"}"  # ldd indents with a tab
    case "${line}" in
      *"not found"*)
        lib="$(echo "${line}" | awk '{print $1}')"
        if [ "${strict}" = 1 ]; then die "${file} needs ${lib}, which is not installed"; fi
        if ! is_driver_lib "${lib}"; then log "note: $(basename "${file}") needs ${lib} (not on this machine; not bundled)"; fi
        continue ;;
      *"=> /"*) lib="$(echo "${line}" | sed -E 's/.*=> (\/[^ ]+).*/\1/')" ;;
      /*) lib="$(echo "${line}" | awk '{print $1}')" ;;
      *) continue ;;
    esac
    is_driver_lib "${lib}" && continue
    case "${lib}" in "${ROOTFS}"/*) continue ;; esac  # already in the image (TensorRT)
    if [ ! -e "${ROOTFS}${lib}" ]; then
      mkdir -p "${ROOTFS}$(dirname "${lib}")"
      cp -L "${lib}" "${ROOTFS}${lib}"
    fi
  done <<< "${out}"
}

copy_deps "${BINARY}" 1
# Core and providers, as lib/ of a GPU release archive holds them (scripts/setup.sh lays
# third_party/onnxruntime/lib out so): the GPU-flavor core with its CUDA/TensorRT providers and the
# provider bridge, all in ONE folder, since ORT opens the bridge from the core's own directory.
# Symlinks within the folder (libonnxruntime.so -> .so.1 -> .so.1.29.0) stay symlinks; any other
# is copied as the file it points to. The split layout of older setups (a CPU-built core in lib/,
# providers in gpu/) crashes on a GPU and is refused. `audit image` checks the pair's flavor.
if [ -d "${ORT_DIR}/gpu" ]; then
  die "${ORT_DIR} has the split layout of an older setup (CPU-built core in lib/, providers in" \
    "gpu/), a pair that crashes on a GPU: run scripts/setup.sh, or pass --ort-dir with a GPU" \
    "release archive (core and providers in its lib/)"
fi
# TensorRT, when given: its libraries under /opt/tensorrt/lib, found by ldd for the provider.
TRT_VERSION=none
if [ -n "${TENSORRT_DIR}" ]; then
  mkdir -p "${ROOTFS}/opt/tensorrt/lib"
  cp -a "${TENSORRT_DIR}"/lib/libnv*.so* "${ROOTFS}/opt/tensorrt/lib/"
  TRT_VERSION="$(cd "${TENSORRT_DIR}/lib" && ls libnvinfer.so.10.* 2>/dev/null | sed -n 1p |
    sed -E 's/^libnvinfer\.so\.//')"
  TRT_VERSION="${TRT_VERSION:-10}"
  export LD_LIBRARY_PATH="${ROOTFS}/opt/tensorrt/lib${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
  log "TensorRT ${TRT_VERSION}: $(ls "${ROOTFS}/opt/tensorrt/lib" | wc -l) files from ${TENSORRT_DIR}/lib"
fi
nort=0
for lib in "${ORT_DIR}"/lib/libonnxruntime*.so*; do
  [ -e "${lib}" ] || continue
  name="$(basename "${lib}")"
  if [ "${name}" = libonnxruntime_providers_tensorrt.so ] && [ -z "${TENSORRT_DIR}" ]; then
    log "not shipping ${name}: no --tensorrt-dir, so the image has no TensorRT for it to load"
    continue
  fi
  target="$(readlink "${lib}" || true)"
  if [ -n "${target}" ] && [[ "${target}" != */* ]] && [ -e "${ORT_DIR}/lib/${target}" ]; then
    ln -sfn "${target}" "${ROOTFS}/opt/truegreen/lib/${name}"
  else
    cp -L "${lib}" "${ROOTFS}/opt/truegreen/lib/${name}"
  fi
  nort=$((nort + 1))
done
log "ONNX Runtime: ${nort} files from ${ORT_DIR}/lib:" \
  "$(cd "${ROOTFS}/opt/truegreen/lib" && ls | paste -sd' ' -)"
for lib in "${ROOTFS}"/opt/truegreen/lib/*.so* "${ROOTFS}"/opt/tensorrt/lib/*.so*; do
  [ -e "${lib}" ] || continue
  [ -L "${lib}" ] || copy_deps "${lib}" 0
done
# Libraries opened with dlopen at run time, which ldd never lists: the CUDA provider opens cuDNN 9
# itself (libcudnn.so.9 is no DT_NEEDED of it; only the TensorRT provider links it), and cuBLASLt
# and cuDNN's engines open NVRTC, which opens its builtins. Found where the dynamic linker would
# find them (ld.so.cache, LD_LIBRARY_PATH); one that is not on this machine is named, not bundled.
RUNTIME_OPENED=(libcudnn.so.9 libnvrtc.so.13 libnvrtc-builtins.so.13.0)
for soname in "${RUNTIME_OPENED[@]}"; do
  src=""
  for d in ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }}; do
    [ -e "${d}/${soname}" ] && { src="${d}/${soname}"; break; }
  done
  [ -n "${src}" ] || src="$(ldconfig -p 2>/dev/null | awk -v n="${soname}" '$1 == n && !f {print $NF; f = 1}')"
  if [ -z "${src}" ] || [ ! -e "${src}" ]; then
    log "note: ${soname} (opened at run time by the providers) is not on this machine; not bundled"
    continue
  fi
  case "${src}" in "${ROOTFS}"/*) continue ;; esac
  if [ ! -e "${ROOTFS}${src}" ]; then
    mkdir -p "${ROOTFS}$(dirname "${src}")"
    cp -L "${src}" "${ROOTFS}${src}"
  fi
  copy_deps "${src}" 0
done
# cuDNN 9 opens its sub-libraries (ops, cnn, adv, graph, heuristic, engines_*) lazily with dlopen,
# so ldd never lists them: bundle the siblings of every libcudnn.so.N that was collected.
while IFS= read -r cudnn; do
  [ -n "${cudnn}" ] || continue
  src_dir="$(dirname "${cudnn#"${ROOTFS}"}")"
  major="${cudnn##*.so.}"
  for sub in "${src_dir}"/libcudnn_*.so."${major}"; do
    [ -e "${sub}" ] || continue
    cp -L "${sub}" "${ROOTFS}${sub}"
    copy_deps "${sub}" 0
  done
done < <(find "${ROOTFS}" -name 'libcudnn.so.[0-9]*' -type f)
# Library directories outside the loader's defaults (no /etc/ld.so.cache in a scratch image).
LIB_DIRS="$(find "${ROOTFS}" -type f -name '*.so*' -printf '/%P\n' | xargs -r -n1 dirname | sort -u |
  grep -v -E '^/(usr/)?lib(64)?(/x86_64-linux-gnu)?$' | paste -sd: -)"
nfiles="$(find "${ROOTFS}" -type f | wc -l)"
log "root filesystem: ${nfiles} files, $(du -sh "${ROOTFS}" | cut -f1)"

# The image's environment (its config below; the smoke test runs with exactly this).
ENV_LIB="TRUEGREEN_LIB_PATH=/opt/truegreen/lib"
# ONNX Runtime's telemetry off in the image's environment too (truegreen sets it itself).
ENV_TELEMETRY="ORT_DISABLE_TELEMETRY=1"
# As NVIDIA's CUDA images do: ask the container toolkit for the GPUs (Kubernetes' device plugin
# narrows this to the GPUs the pod requested) and for the compute + NVML driver libraries.
ENV_GPU=(NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility)
IMAGE_ENV=("${ENV_LIB}" "${ENV_TELEMETRY}" "LD_LIBRARY_PATH=${LIB_DIRS}" "${ENV_GPU[@]}")

# run_smoke: scripts/image_smoke.sh on the root filesystem with the image's environment.
run_smoke() {
  local -a args=(--rootfs "${ROOTFS}" --matrix "${SMOKE_MATRIX}" --pipeline "${SMOKE_PIPELINE}")
  local e
  for e in "${IMAGE_ENV[@]}"; do args+=(--env "${e}"); done
  bash "${ROOT}/scripts/image_smoke.sh" "${args[@]}" "$@"
}

# Whole outputs are read before matching: under pipefail a reader that stops early (grep -q, head,
# awk's exit) kills its writer with SIGPIPE once the output passes the pipe buffer, and the script
# fails with 141 on a machine whose ldconfig cache is larger than this one's.
BINARY_DEPS="$(ldd "${BINARY}")"
if grep -q -E 'lib(a|ub|t|l)san\.so' <<<"${BINARY_DEPS}"; then
  # Sanitizer runtimes need more of /proc and /dev than the image has; the release build is smoked.
  log "smoke test skipped: ${BINARY} is a sanitizer build"
elif [ "$(id -u)" != 0 ] || ! command -v chroot >/dev/null 2>&1; then
  [ -z "${SMOKE_MATRIX}" ] || die "the smoke test (--smoke-matrix) needs root and chroot"
  log "smoke test skipped (needs root and chroot)"
else
  if ! version="$(chroot "${ROOTFS}" /usr/bin/truegreen --version 2>&1)"; then
    die "smoke test failed: chroot ${ROOTFS} /usr/bin/truegreen --version: ${version}"
  fi
  log "smoke test: chroot rootfs /usr/bin/truegreen --version -> ${version}"
  if [ -n "${SMOKE_MATRIX}" ]; then
    run_smoke || die "smoke test failed: the image cannot run its commands (above)"
    # The smoke test must see a broken image: without one CUDA library the providers need, it
    # has to fail (doctor then fails a check the image itself must pass).
    victim="$(find "${ROOTFS}" -name "${SMOKE_REMOVE}" \( -type f -o -type l \) -print -quit)"
    [ -n "${victim}" ] || die "smoke self-check: ${SMOKE_REMOVE} is not in the image"
    mv "${victim}" "${WORK}/smoke-removed"
    if run_smoke --doctor-only 2> "${WORK}/smoke-broken.log"; then
      mv "${WORK}/smoke-removed" "${victim}"
      die "smoke self-check: the smoke test passed an image without ${victim#"${ROOTFS}"}"
    fi
    mv "${WORK}/smoke-removed" "${victim}"
    log "smoke self-check: without ${victim#"${ROOTFS}"} the smoke test fails:" \
      "$(grep -m1 -E '^  ' "${WORK}/smoke-broken.log" | sed 's/^ *//' | cut -c1-200)"
  fi
fi
if [ -n "${COLLECT_ONLY}" ]; then
  trap - EXIT
  rm -rf "${WORK}"
  log "collected into ${ROOTFS}"
  exit 0
fi

# ---- 2. build and export the image -----------------------------------------------------------
mkdir -p "$(dirname "${OUT}")"
rm -f "${OUT}"
DIGEST_FILE="${OUT%.tar}.digest"
ENTRYPOINT='["/usr/bin/truegreen"]'
# Labels: what the image carries, and the matrix that judges it.
if [ "${TRT_VERSION}" = none ]; then MATRIX_LABEL=deploy/matrix.production.yaml
else MATRIX_LABEL=deploy/matrix.production-tensorrt.yaml; fi
LABELS=(org.opencontainers.image.title=truegreen "dev.truegreen.tensorrt=${TRT_VERSION}"
  "dev.truegreen.matrix=${MATRIX_LABEL}")

build_with_buildah() {
  local store="${WORK}/storage" ctr
  local -a B=(buildah --root "${store}/root" --runroot "${store}/run" --storage-driver vfs)
  export BUILDAH_ISOLATION=chroot
  ctr="$("${B[@]}" from --pull=false scratch)" || return 1
  "${B[@]}" copy "${ctr}" "${ROOTFS}/" / >/dev/null || return 1
  "${B[@]}" config --entrypoint "${ENTRYPOINT}" --cmd '["doctor"]' --env "${ENV_LIB}" \
    --env "${ENV_TELEMETRY}" \
    --env "LD_LIBRARY_PATH=${LIB_DIRS}" --env "${ENV_GPU[0]}" --env "${ENV_GPU[1]}" \
    --user 65532:65532 --port 8000 --workingdir / \
    --label "${LABELS[0]}" --label "${LABELS[1]}" --label "${LABELS[2]}" \
    --label org.opencontainers.image.description="truegreen runtime (binary + loaded libraries)" \
    "${ctr}" || return 1
  "${B[@]}" commit --quiet --format oci --rm "${ctr}" "${TAG}" >/dev/null || return 1
  local -a C=(--compression-format "${COMPRESSION}")
  if [ "${COMPRESSION}" = none ] || [ "${FORMAT}" = docker-archive ]; then C=(--disable-compression); fi
  "${B[@]}" push --quiet "${C[@]}" --digestfile "${DIGEST_FILE}" "${TAG}" \
    "${FORMAT}:${OUT}:${TAG}" || return 1
  "${B[@]}" rmi --all >/dev/null 2>&1 || true
}

build_with_umoci() {
  [ "${FORMAT}" = oci-archive ] || { log "umoci writes OCI layouts only (use --format oci-archive)"; return 1; }
  local layout="${WORK}/layout" bundle="${WORK}/bundle" ref="${TAG##*:}"
  umoci init --layout "${layout}" || return 1
  umoci new --image "${layout}:${ref}" || return 1
  # unpack + repack rather than `umoci insert`: umoci 0.4.7's insert writes a layer whose tar
  # stream ends without the last file's padding and the end-of-archive blocks.
  umoci unpack --image "${layout}:${ref}" "${bundle}" >/dev/null || return 1
  cp -a "${ROOTFS}/." "${bundle}/rootfs/" || return 1
  umoci repack --image "${layout}:${ref}" "${bundle}" || return 1
  umoci config --image "${layout}:${ref}" --config.entrypoint /usr/bin/truegreen \
    --config.cmd doctor --config.env "${ENV_LIB}" --config.env "${ENV_TELEMETRY}" \
    --config.env "LD_LIBRARY_PATH=${LIB_DIRS}" \
    --config.env "${ENV_GPU[0]}" --config.env "${ENV_GPU[1]}" \
    --config.user 65532:65532 \
    --config.exposedports 8000/tcp --config.workingdir / \
    --config.label "${LABELS[0]}" --config.label "${LABELS[1]}" \
    --config.label "${LABELS[2]}" || return 1
  umoci gc --layout "${layout}" || return 1
  tar -C "${layout}" -cf "${OUT}" . || return 1
  sed -E 's/.*"digest":"(sha256:[0-9a-f]{64})".*/\1/' "${layout}/index.json" > "${DIGEST_FILE}"
}

built=""
if [ "${BUILDER}" != umoci ]; then
  if command -v buildah >/dev/null 2>&1; then
    if build_with_buildah; then built=buildah; else log "buildah failed (see above)"; fi
  else
    log "buildah not installed"
  fi
  [ -n "${built}" ] || [ "${BUILDER}" = auto ] || die "buildah could not build the image"
fi
if [ -z "${built}" ]; then
  command -v umoci >/dev/null 2>&1 || die "neither buildah nor umoci could build the image"
  log "building the OCI layout with umoci"
  build_with_umoci || die "umoci could not build the image"
  built=umoci
fi
[ -s "${OUT}" ] || die "no archive written at ${OUT}"
log "built ${TAG} with ${built}: ${OUT} ($(du -h "${OUT}" | cut -f1)), digest $(cat "${DIGEST_FILE}")"
