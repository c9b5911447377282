#!/usr/bin/env bash
# The memory model against measured peaks, and admission under a budget, at the large sizes
# (make bench; minutes, and up to MEMORY_SWEEP_BUDGET of RAM):
#   1. generate (dev policy, the small SD 1.5 pipeline, 2 steps) at 256², 512², 768², 1024²,
#      1536x1024 and batch 1, 2, 4, 8 with --memory-budget MEMORY_SWEEP_BUDGET (default 12GiB):
#      per run the estimate (held + job), the job's measured peak resident set and their ratio, or
#      the refusal (exit 2) for a job the budget cannot hold.
#   2. serve with --memory-budget 2GiB receiving 1536x1024, 1792x1024, 1024x1536 and a 1024² n:10
#      request in a row: each answer's status, then /readyz, the split counter and the server's
#      peak resident set against the budget.
# Usage: bash benchmarks/memory_sweep.sh [build-dir]   (MEMORY_SWEEP_ONLY=generate|serve picks one)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build="${1:-build}"
tg="${build}/bin/truegreen"
model="${build}/models/sd-tiny/sd15-legacy"
budget="${MEMORY_SWEEP_BUDGET:-12GiB}"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"; [ -n "${srv:-}" ] && kill "${srv}" 2>/dev/null' EXIT
echo "== machine: $(nproc) CPUs, $(awk '/MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ) =="

if [ "${MEMORY_SWEEP_ONLY:-generate}" = generate ] || [ -z "${MEMORY_SWEEP_ONLY:-}" ]; then
  echo "size batch estimate_MiB peak_MiB estimate/peak vae_tiled   (budget ${budget})"
  for size in 256x256 512x512 768x768 1024x1024 1536x1024; do
    for batch in 1 2 4 8; do
      out="$("${tg}" --policy dev generate --model "${model}" --prompt "a cat" --steps 2 \
        --size "${size}" --batch "${batch}" --memory-budget "${budget}" --json -o "${tmp}/o.png" \
        2>"${tmp}/err")"
      rc=$?
      if [ "${rc}" -ne 0 ]; then
        echo "${size} ${batch} refused (exit ${rc}): $(tail -c 300 "${tmp}/err" | tr '\n' ' ')"
        continue
      fi
      printf '%s' "${out}" >"${tmp}/out.json"
      python3 - "${size}" "${batch}" "${tmp}/out.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[3]))["memory"]
est = m["held_bytes"] + m["estimate_bytes"]
peak = m["peak_rss_bytes"]
print(f"{sys.argv[1]} {sys.argv[2]} {est/2**20:.0f} {peak/2**20:.0f} {est/peak:.3f} {m['vae_tiled']}")
PY
    done
  done
fi

if [ "${MEMORY_SWEEP_ONLY:-serve}" = serve ] || [ -z "${MEMORY_SWEEP_ONLY:-}" ]; then
  mkdir -p "${tmp}/models"
  ln -s "$(realpath "${model}")" "${tmp}/models/sd15"
  "${tg}" --policy dev serve --models "${tmp}/models" --port 0 --port-file "${tmp}/port" \
    --memory-budget 2GiB --deadline-ms 3600000 --access-log off 2>"${tmp}/serve.log" &
  srv=$!
  for _ in $(seq 1 600); do [ -s "${tmp}/port" ] && break; sleep 0.2; done
  port="$(cat "${tmp}/port")"
  for _ in $(seq 1 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "localhost:${port}/readyz")" = 200 ] && break
    sleep 0.5
  done
  echo "serve --memory-budget 2GiB: $(curl -s "localhost:${port}/v1/capabilities" |
    python3 -c 'import json,sys; m=json.load(sys.stdin)["memory"]; print("held", m["held_bytes"]>>20, "MiB; largest square per batch", m["models"]["sd15"]["largest_square_size_per_batch"])')"
  for req in 1536x1024:1 1792x1024:1 1024x1536:1 1024x1024:10; do
    size="${req%%:*}"
    n="${req##*:}"
    t0=$(date +%s.%N)
    code="$(curl -s -o "${tmp}/body" -w '%{http_code}' "localhost:${port}/v1/images/generations" \
      -H 'Content-Type: application/json' \
      -d "{\"prompt\":\"a cat\",\"size\":\"${size}\",\"steps\":2,\"n\":${n},\"response_format\":\"b64_json\"}")"
    t1=$(date +%s.%N)
    echo "${size} n=${n}: HTTP ${code} in $(python3 -c "print(f'{${t1}-${t0}:.1f}')") s: $(head -c 400 "${tmp}/body" | tr -d '\n' | cut -c1-400)"
  done
  echo "readyz: $(curl -s -o /dev/null -w '%{http_code}' "localhost:${port}/readyz")"
  curl -s "localhost:${port}/metrics" | grep -E '^truegreen_memory_(split|refused|failures)_total'
  echo "server peak RSS: $(awk '/VmHWM/{printf "%.0f MiB", $2/1024}' "/proc/${srv}/status") (budget 2048 MiB)"
  kill "${srv}"
  wait "${srv}" 2>/dev/null
  srv=""
fi
