#!/usr/bin/env bash
# `make audit-deploy`: truegreen's own deployment must pass truegreen's own audits, as deployed.
#
# The image is audited with the version matrix deploy/k8s mounts (the ConfigMap's matrix.yaml,
# extracted here, not a file named beside it), so an image that cannot satisfy the deployment's
# matrix fails (image.matrix, exit 6). Then the Dockerfile and the manifests (against the same
# matrix). Last, the audit must see a disagreement: an image without TensorRT (label
# dev.truegreen.tensorrt=none) audited with deploy/matrix.production-tensorrt.yaml must fail; if
# it passes, this script fails.
#
# Usage: scripts/audit_deploy.sh [--binary build/bin/truegreen] [--image build/image/truegreen.tar]
# Exit 0 when every audit passes and the disagreement is caught; non-zero otherwise.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TG="${ROOT}/build/bin/truegreen"
IMAGE="${ROOT}/build/image/truegreen.tar"
log() { printf '[audit_deploy] %s\n' "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) TG="$2"; shift 2 ;;
    --image) IMAGE="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -x "${TG}" ] || die "no truegreen binary at ${TG} (make build)"
[ -f "${IMAGE}" ] || die "no image at ${IMAGE} (make image)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tg-audit-deploy.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT
MATRIX="${WORK}/deployed-matrix.yaml"
python3 - "${ROOT}/deploy/k8s/configmap.yaml" "${MATRIX}" <<'PY' || die "no matrix.yaml in deploy/k8s/configmap.yaml"
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
open(sys.argv[2], "w").write(doc["data"]["matrix.yaml"])
PY
log "the matrix deploy/k8s mounts: $(grep -m1 '^name:' "${MATRIX}")"

"${TG}" audit image "${IMAGE}" --budget 2GiB --matrix "${MATRIX}"
"${TG}" audit dockerfile "${ROOT}/deploy/Dockerfile" --context "${ROOT}"
"${TG}" audit k8s "${ROOT}/deploy/k8s" --matrix "${MATRIX}"

# The audit must catch a matrix the image cannot satisfy.
trt="$("${TG}" --json audit image "${IMAGE}" --budget 2GiB 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["capabilities"].get("components",{}).get("tensorrt",{}).get("version",""))' || true)"
if [ -z "${trt}" ]; then
  set +e
  out="$("${TG}" audit image "${IMAGE}" --budget 2GiB \
    --matrix "${ROOT}/deploy/matrix.production-tensorrt.yaml" 2>&1)"
  rc=$?
  set -e
  [ "${rc}" = 6 ] || die "audit image with deploy/matrix.production-tensorrt.yaml against an image" \
    "without TensorRT exited ${rc}, expected 6: ${out}"
  grep -q "tensorrt" <<<"${out}" || die "the TensorRT disagreement was not named: ${out}"
  log "image without TensorRT vs deploy/matrix.production-tensorrt.yaml: fails (exit 6), as it must"
fi
