#!/usr/bin/env bash
# make demo: truegreen's main job on this machine, end to end.
#  1. doctor with production expectations: on a machine without an NVIDIA driver this is
#     NOT ACCELERATED with the named cause (exit 3) — the point of truegreen; on a GPU node that
#     passes the matrix it says ACCELERATED (exit 0).
#  2. doctor with the dev policy: CPU allowed, reported DEGRADED (exit 0).
#  3. generate an image with the bundled small SD 1.5 pipeline (the published architecture at width
#     0.1 and depth 0.25, random weights: tools/gen_sd.py) on the dev policy.
#  4. truegreen serve on that pipeline and a generic ONNX model (dev policy): wait for ready,
#     one image through the OpenAI endpoint, one KServe v2 inference, /readyz and a few metrics,
#     then SIGTERM (drain, exit 0).
#  5. a short A/B with `bench --ab`: the same small model served with one lane worker and with two,
#     the same sweep against both, and the comparison report (markdown table shown, HTML written).
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
expect 0 "truegreen generate (small SD 1.5 pipeline, real architecture, dev policy = CPU, degraded)" -- \
  $TG --policy dev generate --model build/models/sd-tiny/sd15-legacy --prompt "a photo of a cat" \
  --steps 20 --size 512x512 --seed 0 -o build/demo/sd15-cat.png
if [ -f build/demo/sd15-cat.png ]; then echo "image: build/demo/sd15-cat.png"; fi

echo
echo "== truegreen serve (dev policy: CPU, degraded) =="
models=build/demo/models
rm -rf "${models}" build/demo/serve.port
mkdir -p "${models}/mm"
ln -s "$(pwd)/build/models/sd-tiny/sd15-legacy" "${models}/sd15"
ln -s "$(pwd)/build/models/runtime/matmul_softmax.onnx" "${models}/mm/model.onnx"
printf 'max_batch: 4\nbatch_delay_ms: 2\nwarmup:\n  - {x: [1, 8]}\n' > "${models}/mm/config.yaml"
echo "\$ $TG --policy dev serve --models ${models} --port 0 --port-file build/demo/serve.port"
$TG --policy dev serve --models "${models}" --port 0 --port-file build/demo/serve.port \
  --access-log build/demo/access.log 2> build/demo/serve.log &
srv=$!
port=""
for _ in $(seq 1 600); do
  [ -s build/demo/serve.port ] && port=$(cat build/demo/serve.port) && break
  sleep 0.1
done
ready=0
if [ -n "${port}" ]; then
  for _ in $(seq 1 1200); do
    if curl -sf "http://127.0.0.1:${port}/readyz" >/dev/null; then ready=1; break; fi
    kill -0 "${srv}" 2>/dev/null || break
    sleep 0.1
  done
fi
if [ "${ready}" -eq 1 ]; then
  grep -E "gate|ready" build/demo/serve.log | grep -v DEGRADED
  base="http://127.0.0.1:${port}"
  echo "\$ curl ${base}/readyz"
  curl -s "${base}/readyz"; echo
  echo "\$ curl -X POST ${base}/v1/images/generations (OpenAI images)"
  curl -s -X POST "${base}/v1/images/generations" \
    -d '{"prompt":"a photo of a cat","size":"256x256","steps":10,"seed":1,"response_format":"b64_json"}' \
    > build/demo/openai.json
  if python3 -c 'import json,base64,sys; d=json.load(open(sys.argv[1])); \
open(sys.argv[2],"wb").write(base64.b64decode(d["data"][0]["b64_json"]))' \
    build/demo/openai.json build/demo/serve-cat.png; then
    echo "image: build/demo/serve-cat.png ($(stat -c %s build/demo/serve-cat.png) bytes)"
  else
    echo "no image in the response"; fail=1
  fi
  echo "\$ curl -X POST ${base}/v2/models/mm/infer (KServe v2)"
  curl -s -X POST "${base}/v2/models/mm/infer" \
    -d '{"id":"demo","inputs":[{"name":"x","shape":[1,8],"datatype":"FP32","data":[1,2,3,4,5,6,7,8]}]}' \
    | tee build/demo/kserve.json; echo
  grep -q '"outputs"' build/demo/kserve.json || fail=1
  echo "\$ curl ${base}/metrics | grep ..."
  curl -s "${base}/metrics" | grep -E '^(nv_inference_request_success|nv_inference_count|truegreen_images_generated_total|truegreen_gate_status|truegreen_degraded|truegreen_canary_latency_seconds)'
else
  echo "server did not become ready:"; cat build/demo/serve.log; fail=1
fi
kill -TERM "${srv}" 2>/dev/null
wait "${srv}"
rc=$?
echo "(server exit ${rc} after SIGTERM; expected 0)"
[ "${rc}" -eq 0 ] || fail=1

echo
echo "== truegreen bench --ab: one lane worker against two, same small model, same sweep =="
ab=build/demo/ab
rm -rf "${ab}" && mkdir -p "${ab}/models"
ln -s "$(pwd)/build/models/sd-tiny/sd15-legacy" "${ab}/models/sd15"
for side in 1 2; do
  printf 'name: lane-workers-%s\nserve_args: [--policy, dev, --models, %s, --concurrency, "%s",\n  --access-log, "off"]\n' \
    "${side}" "${ab}/models" "${side}" > "${ab}/workers-${side}.yaml"
done
echo "\$ $TG bench --ab ${ab}/workers-1.yaml ${ab}/workers-2.yaml --concurrency 4 --size 256x256 --steps 4 ..."
if $TG bench --ab "${ab}/workers-1.yaml" "${ab}/workers-2.yaml" --model sd15 --concurrency 4 \
  --size 256x256 --steps 4 --warmup 1 --window 2 --max-trials 3 --no-progress \
  --ab-out "${ab}/report" > "${ab}/stdout.txt" 2> "${ab}/stderr.txt"; then
  # The table (a short run: a point with fewer samples than the P95 interval needs says "too few
  # samples (n = A/B)", not a verdict),
  # the capability diff and the gates line.
  sed -n '/^| \|^Capability diff\|^Regression gates/p' "${ab}/report/compare.md" | sed -n 1,16p
  echo "report: ${ab}/report/compare.html (and compare.md, compare.json, one JSON/HTML per side)"
else
  echo "A/B did not complete:"; tail -20 "${ab}/stderr.txt"; fail=1
fi

if [ "${fail}" -ne 0 ]; then
  echo "demo: a step did not behave as stated" >&2
  exit 1
fi
echo
echo "demo: done"
