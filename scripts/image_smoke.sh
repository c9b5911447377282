#!/usr/bin/env bash
# Runs the commands truegreen's image exists for inside a collected root filesystem, as a container
# has it: chroot as the image's user (65532), the image's environment only, in a private mount
# namespace with /proc and a minimal /dev (null, zero, random, urandom) mounted. Needs root.
#
#   1. `truegreen --json doctor --matrix MATRIX` (the deployment's matrix): on a machine without
#      an NVIDIA driver it must exit 3, and every failing check must be one that the NVIDIA
#      container toolkit and a GPU node supply: the driver library and NVML (driver.*), device
#      nodes and devices (devices.*), and provider loads that failed on libcuda
#      (onnxruntime.provider.*). Any other failing check (a missing CUDA library, a provider that
#      cannot load for another reason, a wrong ORT pair), a crash, or another exit code fails.
#   2. `truegreen --policy dev serve` on PIPELINE (copied into the root filesystem): it must turn
#      ready, answer one OpenAI image request with a PNG, and drain on SIGTERM with exit 0.
# Everything it puts into ROOTFS (the pipeline, /proc and /dev mount points) is removed again.
#
# Usage: scripts/image_smoke.sh --rootfs DIR --matrix FILE --pipeline DIR [--env NAME=VALUE]...
#          [--doctor-only]
# Exit 0 when both pass (or doctor, with --doctor-only); 1 with the reason otherwise.
set -euo pipefail

ROOTFS=""
MATRIX=""
PIPELINE=""
DOCTOR_ONLY=0
declare -a ENVS=()
log() { printf '[image_smoke] %s\n' "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

while [ $# -gt 0 ]; do
  case "$1" in
    --rootfs) ROOTFS="$2"; shift 2 ;;
    --matrix) MATRIX="$2"; shift 2 ;;
    --pipeline) PIPELINE="$2"; shift 2 ;;
    --env) ENVS+=("$2"); shift 2 ;;
    --doctor-only) DOCTOR_ONLY=1; shift ;;
    -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -x "${ROOTFS}/usr/bin/truegreen" ] || die "no /usr/bin/truegreen in root filesystem '${ROOTFS}'"
[ -f "${MATRIX}" ] || die "matrix '${MATRIX}' not found"
[ -f "${PIPELINE}/model_index.json" ] || die "pipeline '${PIPELINE}' has no model_index.json"
[ "$(id -u)" = 0 ] || die "needs root (chroot and a private mount namespace)"
for tool in unshare chroot mount curl python3; do
  command -v "${tool}" >/dev/null 2>&1 || die "needs ${tool}"
done

ROOTFS="$(cd "${ROOTFS}" && pwd)"
SMOKE=/tmp/truegreen-smoke  # inside the root filesystem
HOST_SMOKE="${ROOTFS}${SMOKE}"
made_proc=0
made_dev=0
[ -e "${ROOTFS}/proc" ] || { mkdir "${ROOTFS}/proc"; made_proc=1; }
[ -e "${ROOTFS}/dev" ] || { mkdir "${ROOTFS}/dev"; made_dev=1; }
cleanup() {
  rm -rf "${HOST_SMOKE}"
  [ "${made_proc}" = 0 ] || rmdir "${ROOTFS}/proc" 2>/dev/null || true
  [ "${made_dev}" = 0 ] || rmdir "${ROOTFS}/dev" 2>/dev/null || true
}
trap cleanup EXIT
rm -rf "${HOST_SMOKE}"
mkdir -p "${HOST_SMOKE}/models"
cp "${MATRIX}" "${HOST_SMOKE}/matrix.yaml"
cp -rL "${PIPELINE}" "${HOST_SMOKE}/models/sd"
chown -R 65532:65532 "${HOST_SMOKE}"

# in_image ARGS...: replaces the calling (sub)shell with /usr/bin/truegreen ARGS in the root
# filesystem (an exec chain: the pid of `in_image ... &` is truegreen's own, so it can be
# signalled); call it in a subshell or in the background.
in_image() {
  exec unshare --mount --propagation private -- /bin/bash -c '
    set -e
    root="$1"; shift
    mount -t proc proc "${root}/proc"
    mount -t tmpfs -o size=64k,mode=0755 tmpfs "${root}/dev"
    for n in null zero random urandom; do
      touch "${root}/dev/${n}"
      mount --bind "/dev/${n}" "${root}/dev/${n}"
    done
    exec "$@"' in_image "${ROOTFS}" env -i "${ENVS[@]}" \
    "$(command -v chroot)" --userspec=65532:65532 "${ROOTFS}" /usr/bin/truegreen "$@"
}

# ---- 1. doctor with the deployment's matrix ------------------------------------------------------
set +e
(in_image --json doctor --matrix "${SMOKE}/matrix.yaml") > "${HOST_SMOKE}/doctor.json" \
  2> "${HOST_SMOKE}/doctor.err"
rc=$?
set -e
if [ "${rc}" != 3 ]; then
  cat "${HOST_SMOKE}/doctor.err" >&2
  die "doctor --json --matrix exited ${rc}, expected 3 (NOT ACCELERATED: no driver here)"
fi
# Only what the NVIDIA container toolkit and a GPU node supply may fail.
if ! python3 - "${HOST_SMOKE}/doctor.json" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
bad = []
for c in d.get("checks", []):
    if c.get("result") != "FAIL":
        continue
    cid = c.get("id", "")
    text = " ".join(str(c.get(k, "")) for k in ("found", "cause"))
    if re.match(r"^(driver|devices)\.", cid):
        continue
    if cid.startswith("onnxruntime.provider.") and "libcuda.so" in text:
        continue
    bad.append(f"{cid}: {text}")
for s in d.get("startup", {}).get("steps", []):
    if s.get("outcome") == "refused" and s.get("step") != "factory":
        bad.append(f"startup step {s.get('step')} refused: {s.get('detail')}")
    if s.get("step") == "factory" and s.get("outcome") == "refused" and "libcuda.so" not in s.get("detail", ""):
        bad.append(f"startup step factory refused for another reason: {s.get('detail')}")
if not d.get("checks"):
    bad.append("no admission checks in doctor's output")
for b in bad:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
then
  die "doctor failed checks that the image itself must pass (above)"
fi
log "doctor --json --matrix: exit 3, failing only on driver, devices and libcuda"
[ "${DOCTOR_ONLY}" = 0 ] || exit 0

# ---- 2. serve a small pipeline (dev policy): ready, one image, SIGTERM drain -----------------------
in_image --policy dev serve --models "${SMOKE}/models" --host 127.0.0.1 --port 0 \
  --port-file "${SMOKE}/serve.port" --access-log off 2> "${HOST_SMOKE}/serve.err" &
srv=$!
port=""
for _ in $(seq 1 600); do
  [ -s "${HOST_SMOKE}/serve.port" ] && port="$(cat "${HOST_SMOKE}/serve.port")" && break
  kill -0 "${srv}" 2>/dev/null || break
  sleep 0.1
done
ready=0
if [ -n "${port}" ]; then
  for _ in $(seq 1 1800); do
    if curl -sf "http://127.0.0.1:${port}/readyz" >/dev/null; then ready=1; break; fi
    kill -0 "${srv}" 2>/dev/null || break
    sleep 0.1
  done
fi
fail=""
if [ "${ready}" = 1 ]; then
  curl -s -X POST "http://127.0.0.1:${port}/v1/images/generations" \
    -d '{"model":"sd","prompt":"a photo of a cat","size":"256x256","steps":2,"seed":1,"response_format":"b64_json"}' \
    > "${HOST_SMOKE}/image.json" || true
  python3 -c 'import json,base64,sys; d=json.load(open(sys.argv[1])); \
b=base64.b64decode(d["data"][0]["b64_json"]); sys.exit(0 if b[:8]==b"\x89PNG\r\n\x1a\n" else 1)' \
    "${HOST_SMOKE}/image.json" 2>/dev/null || fail="no PNG in the image response: $(head -c 400 "${HOST_SMOKE}/image.json")"
else
  fail="serve did not turn ready"
fi
kill -TERM "${srv}" 2>/dev/null || true
set +e
wait "${srv}"
rc=$?
set -e
if [ -n "${fail}" ] || [ "${rc}" != 0 ]; then
  tail -n 30 "${HOST_SMOKE}/serve.err" >&2
  die "${fail:-serve exited ${rc} after SIGTERM, expected 0}"
fi
log "--policy dev serve: ready, one image, SIGTERM drain exit 0"
