#!/usr/bin/env bash
# make demo: truegreen's main job on this machine, end to end.
#  1. doctor with production expectations: on a machine without an NVIDIA driver this is
#     NOT ACCELERATED with the named cause (exit 3) — the point of truegreen; on a GPU node that
#     passes the matrix it says ACCELERATED (exit 0).
#  2. doctor with the dev policy: CPU allowed, reported DEGRADED (exit 0).
#  3. generate an image with the bundled tiny SD 1.5-shaped pipeline on the dev policy.
# The demo itself fails only if a step does something other than what is stated above.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TG=build/bin/truegreen
fail=0
expect() {  # expect "CODES" DESCRIPTION -- CMD...
  local want="$1" what="$2"
  shift 3
  echo
  echo "== ${what} =="
  echo "\$ $*"
  "$@"
  local rc=$?
  echo "(exit ${rc}; expected one of: ${want})"
  case " ${want} " in *" ${rc} "*) ;; *) fail=1 ;; esac
}

# 3 here (no driver); 0 on a proven GPU node; 4 on a drifted one.
expect "3 0 4" "truegreen doctor (production expectations: GPU path required)" -- $TG doctor
expect 0 "truegreen doctor --policy dev (CPU allowed, labelled degraded)" -- $TG --policy dev doctor
mkdir -p build/demo
expect 0 "truegreen generate (tiny SD 1.5-shaped pipeline, dev policy = CPU, degraded)" -- \
  $TG --policy dev generate --model build/models/sd-tiny/sd15-legacy --prompt "a photo of a cat" \
  --steps 20 --size 512x512 --seed 0 -o build/demo/sd15-cat.png
if [ -f build/demo/sd15-cat.png ]; then echo "image: build/demo/sd15-cat.png"; fi
if [ "${fail}" -ne 0 ]; then
  echo "demo: a step did not behave as stated" >&2
  exit 1
fi
echo
echo "demo: done"
