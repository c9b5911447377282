#!/usr/bin/env bash
# `truegreen serve` speed targets, side by side in one run:
#   1. GET /v2/health/ready, keep-alive, 64 connections: >= 0.8x the request rate of Debian's
#      nginx answering `return 200`, both driven by wrk with the same threads and connections;
#      nginx runs as many workers as the server has I/O threads (IO_THREADS). ROUNDS rounds, the
#      order alternating; verdict on the median ratio. Each side's CPU per request (user+sys of
#      the serving processes during its wrk run, from /proc) is printed too: steadier than the
#      rates on a shared machine.
#   2. build/bin/server_bench (benchmarks/server_bench.cc) against the same server: HTTP overhead at
#      concurrency 1 over in-process generation (<= 1 %), and images/s at concurrency 16 against
#      the best in-process throughput (>= 0.95x), on the tiny SD 1.5 pipeline at SIZE / STEPS.
# The server runs with POLICY (default the dev profile: this machine has no GPU; server_bench's
# in-process side loads the same one), `--access-log off`, a queue of 64 and the background canary
# off, on an ephemeral port; everything is stopped at exit.
# Usage: benchmarks/server_vs_inprocess.sh
#   env: ROUNDS=3 SECS=5 IO_THREADS=2 GEN_THREADS=2 SIZE=512x512 STEPS=20 POLICY=dev C1_PAIRS=20
#        (POLICY=benchmarks/policy.dev-nospin.yaml: ONNX Runtime's threads do not spin after a run;
#         POLICY=benchmarks/policy.dev-1thread.yaml: one intra-op thread, the steady c1 measurement)
# The c1 part also times nginx sending a copy of one generation's response body (a static file)
# after the same pause: the floor under what any HTTP server could add.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
IO_THREADS=${IO_THREADS:-2}
GEN_THREADS=${GEN_THREADS:-2}  # server --concurrency = in-process threads tried (1..GEN_THREADS)
SIZE=${SIZE:-512x512}
STEPS=${STEPS:-20}
C1_PAIRS=${C1_PAIRS:-20}
POLICY=${POLICY:-dev}  # "dev" or a policy file; both sides use it
TG=${TG:-build/bin/truegreen}  # TG=/path/to/other/truegreen compares another build
SB=build/bin/server_bench
MODEL_DIR="$(pwd)/build/models/sd-tiny/sd15-legacy"
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
for tool in "${NGINX}" wrk "${TG}" "${SB}" curl python3; do
  if ! command -v "${tool}" >/dev/null 2>&1; then
    echo "server_vs_inprocess: ${tool} not found (Debian packages nginx-light, wrk; make build)" >&2
    exit 2
  fi
done
if [ "${POLICY}" != dev ] && [ ! -f "${POLICY}" ]; then
  echo "server_vs_inprocess: POLICY=${POLICY}: no such file (dev or a policy YAML)" >&2
  exit 2
fi
[ -d "${MODEL_DIR}" ] || { echo "server_vs_inprocess: ${MODEL_DIR} missing (make build)" >&2; exit 2; }
source benchmarks/nginx_lib.sh

NPORT=$(free_port)
start_nginx "${NPORT}" ${IO_THREADS}

# The pipeline's parts linked into a folder of our own, with `max_batch: 1`: the in-process side
# generates batch 1, so the server must not merge queued requests into larger UNet batches (its
# default for SD), or c16 would compare different work.
mkdir -p "${WORK}/models/sd15"
for part in "${MODEL_DIR}"/*; do ln -s "${part}" "${WORK}/models/sd15/"; done
printf 'max_batch: 1\n' > "${WORK}/models/sd15/config.yaml"
"${TG}" --policy "${POLICY}" serve --models "${WORK}/models" --port 0 --port-file "${WORK}/port" \
  --io-threads "${IO_THREADS}" --concurrency "${GEN_THREADS}" --queue-size 64 --access-log off --canary-interval-s 0 \
  2> "${WORK}/serve.log" &
SERVER_PID=$!
PIDS+=("${SERVER_PID}")
for _ in $(seq 1 600); do [ -s "${WORK}/port" ] && break; sleep 0.1; done
SPORT=$(cat "${WORK}/port" 2>/dev/null || true)
ready=0
for _ in $(seq 1 1200); do
  if [ -n "${SPORT}" ] && curl -sf "http://127.0.0.1:${SPORT}/readyz" >/dev/null; then ready=1; break; fi
  sleep 0.1
done
if [ "${ready}" != 1 ]; then
  echo "server_vs_inprocess: server not ready; its log:" >&2
  cat "${WORK}/serve.log" >&2
  exit 1
fi

echo "== GET /v2/health/ready vs nginx 'return 200' (wrk -t${IO_THREADS} -c64 -d${SECS}s," \
  "server --io-threads ${IO_THREADS}, nginx ${IO_THREADS} workers, ${ROUNDS} rounds, $(nproc) CPUs) =="
cpu_ticks() {  # user+sys clock ticks of the given processes (all their threads)
  local t=0 p
  for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/${p}/stat"))); done
  echo "${t}"
}
# wrk against URL; prints "<req/s> <requests> <CPU ticks of PIDS during the run>". A rate made of
# errors is no rate: any non-2xx answer or socket error fails the run.
wrk_rps() {
  local url=$1 t0 t1
  shift
  t0=$(cpu_ticks "$@")
  wrk -t"${IO_THREADS}" -c64 -d"${SECS}s" "${url}" > "${WORK}/wrk.txt"
  t1=$(cpu_ticks "$@")
  if grep -qE "Non-2xx|Socket errors" "${WORK}/wrk.txt"; then
    echo "server_vs_inprocess: errors against ${url}:" >&2
    cat "${WORK}/wrk.txt" >&2
    return 1
  fi
  echo "$(awk '/Requests\/sec/ {print $2}' "${WORK}/wrk.txt")" \
    "$(awk '/requests in/ {print $1}' "${WORK}/wrk.txt")" "$((t1 - t0))"
}
NGINX_PIDS=("${NGINX_PID}" $(pgrep -P "${NGINX_PID}"))  # master and workers
nginx_url="http://127.0.0.1:${NPORT}/"
server_url="http://127.0.0.1:${SPORT}/v2/health/ready"
: > "${WORK}/health"
for r in $(seq 1 "${ROUNDS}"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  if (( r % 2 == 1 )); then
    n=$(wrk_rps "${nginx_url}" "${NGINX_PIDS[@]}"); s=$(wrk_rps "${server_url}" "${SERVER_PID}")
  else
    s=$(wrk_rps "${server_url}" "${SERVER_PID}"); n=$(wrk_rps "${nginx_url}" "${NGINX_PIDS[@]}")
  fi
  echo "${r} ${load} ${n} ${s}" >> "${WORK}/health"
done
python3 - "${WORK}/health" "$(getconf CLK_TCK)" <<'PY'
import statistics, sys
hz = float(sys.argv[2])
ratios, ncpu, scpu = [], [], []
print(f"{'round':>5} {'load1':>6} {'nginx req/s':>12} {'server req/s':>13} {'ratio':>6} "
      f"{'nginx CPU/req':>14} {'server CPU/req':>15}")
for r, load, nr, nn, nt, sr, sn, st in (l.split() for l in open(sys.argv[1])):
    ratios.append(float(sr) / float(nr))
    ncpu.append(float(nt) / hz / float(nn) * 1e6)
    scpu.append(float(st) / hz / float(sn) * 1e6)
    print(f"{r:>5} {load:>6} {float(nr):>12.0f} {float(sr):>13.0f} {ratios[-1]:>6.3f} "
          f"{ncpu[-1]:>11.2f} us {scpu[-1]:>12.2f} us")
m = statistics.median(ratios)
print(f"health/ready: median ratio server/nginx {m:.3f} (target >= 0.8): {'MET' if m >= 0.8 else 'NOT MET'}")
print(f"median CPU per request (user+sys of the serving processes): nginx "
      f"{statistics.median(ncpu):.2f} us, server {statistics.median(scpu):.2f} us")
PY

# The floor's file: the server's own answer to the first c1 request, byte for byte.
mkdir -p "${WORK}/static"
python3 - "${SPORT}" "${SIZE}" "${STEPS}" > "${WORK}/static/image.json" <<'PY'
import json, sys, urllib.request
port, size, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/images/generations", method="POST",
                             data=json.dumps({"prompt": "floor", "size": size, "steps": steps,
                                              "response_format": "b64_json"}).encode(),
                             headers={"Content-Type": "application/json"})
sys.stdout.write(urllib.request.urlopen(req, timeout=600).read().decode())
PY

echo "== generation: server vs in-process, tiny SD 1.5 (sd15-legacy), ${SIZE}, ${STEPS} steps, ${ROUNDS} rounds, policy ${POLICY} =="
"${SB}" --url "http://127.0.0.1:${SPORT}" --model sd15 --model-dir "${MODEL_DIR}" --size "${SIZE}" \
  --steps "${STEPS}" --rounds "${ROUNDS}" --inproc-threads "${GEN_THREADS}" --policy "${POLICY}" \
  --c1-images "${C1_PAIRS}" --floor-url "http://127.0.0.1:${NPORT}/static/image.json"
