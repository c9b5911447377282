#!/usr/bin/env bash
# truegreen bench's generator against Debian's wrk, side by side in one run.
#
# 1. Rate: nginx answering `return 200` on 127.0.0.1 (private config, one worker, stopped at exit);
#    ROUNDS rounds, each running wrk and `truegreen bench --api get` with the same connections,
#    threads and duration, the order alternating between rounds so drift in the machine's load
#    hits both. Per round: both request rates, the ratio, and each tool's CPU per request
#    (user+sys of the whole process from /usr/bin/time over its requests; truegreen also reports
#    its own figure over the measured window). Verdict on the median ratio (target >= 1.0).
# 2. Latency at a fixed rate, wrk2's method: wrk2 is not packaged in Debian, so the reference is
#    computed independently: benchmarks/wrk2_reference.py serves 200s and stalls the whole server once
#    for STALL s inside the measured window. With requests intended uniformly at the fixed rate,
#    wrk2's method (latency from the intended send time) gives an exact expectation: the requests
#    intended during the stall (a fraction f = STALL/WINDOW) wait for its end, so above the
#    (1-f) quantile P(p) = STALL * (p - (1 - f)) / f, and the mean is STALL^2 / (2 WINDOW) plus
#    the base latency. truegreen's open-loop P90/P95/P99/P99.9 and mean are compared with that
#    expectation (target: within 5 %). The same run with the script's own Python client (wrk2's
#    schedule and late-send rule) is printed as a cross-check; its own per-request overhead
#    (~1-2 ms in Python) shows in its low percentiles and in how long the backlog takes to drain.
#
# Usage: benchmarks/loadgen_vs_wrk.sh [connections=16] [seconds=5] [rounds=3] [threads=1]
# Needs Debian's nginx-light and wrk (scripts/setup.sh) and a release build (make build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CONNS="${1:-16}"
SECS="${2:-5}"
ROUNDS="${3:-3}"
THREADS="${4:-1}"
TG=build/bin/truegreen
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
for tool in "${NGINX}" wrk "${TG}" /usr/bin/time python3 curl; do
  if ! command -v "${tool}" >/dev/null 2>&1; then
    echo "loadgen_vs_wrk: ${tool} not found (Debian nginx-light, wrk, time; make build)" >&2
    exit 2
  fi
done
source benchmarks/nginx_lib.sh
wait_port() {
  for _ in $(seq 1 100); do
    curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0
    sleep 0.05
  done
  echo "loadgen_vs_wrk: nothing listening on port $1" >&2
  exit 1
}
PORT=$(free_port)
start_nginx "${PORT}" 1
wait_port "${PORT}"
URL="http://127.0.0.1:${PORT}"

run_wrk() {  # -> "<req/s> <requests> <cpu_s>"
  /usr/bin/time -f "%U %S" -o "${WORK}/cpu" wrk -t"${THREADS}" -c"${CONNS}" -d"${SECS}s" "${URL}/" \
    > "${WORK}/wrk.txt"
  local rps n
  rps=$(awk '/Requests\/sec/ {print $2}' "${WORK}/wrk.txt")
  n=$(awk '/requests in/ {print $1}' "${WORK}/wrk.txt")
  echo "${rps} ${n} $(awk '{print $1 + $2}' "${WORK}/cpu")"
}
run_tg() {  # -> "<req/s> <requests> <cpu_s> <own cpu us/request>"
  # No warm-up, one window of SECS: the same span as wrk's run.
  /usr/bin/time -f "%U %S" -o "${WORK}/cpu" "${TG}" bench --url "${URL}" --api get \
    --concurrency "${CONNS}" --threads "${THREADS}" --warmup 0 --window "${SECS}" --max-trials 1 \
    --metrics-interval 0 --no-progress --json > "${WORK}/tg.json"
  python3 - "${WORK}/tg.json" "$(awk '{print $1 + $2}' "${WORK}/cpu")" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
n = p["ok"] + sum(p["errors"].values())
print(p["throughput_rps"], n, sys.argv[2], p.get("client_cpu_us_per_request", 0))
PY
}

echo "== generator rate: truegreen bench vs wrk on nginx 'return 200' (connections=${CONNS}" \
  "threads=${THREADS} seconds=${SECS} rounds=${ROUNDS}, $(nproc) CPUs) =="
: > "${WORK}/rounds"
for r in $(seq 1 "${ROUNDS}"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  if (( r % 2 == 1 )); then w=$(run_wrk); t=$(run_tg); else t=$(run_tg); w=$(run_wrk); fi
  echo "${r} ${load} ${w} ${t}" >> "${WORK}/rounds"
done
python3 - "${WORK}/rounds" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
ratios, wcpu, tcpu, town = [], [], [], []
print(f"{'round':>5} {'load1':>6} {'wrk req/s':>11} {'tg req/s':>11} {'ratio':>6} "
      f"{'wrk CPU/req':>12} {'tg CPU/req':>11} {'tg own CPU/req':>15}")
for r, load, wr, wn, wc, tr, tn, tc, to in rows:
    wr, wn, wc, tr, tn, tc, to = map(float, (wr, wn, wc, tr, tn, tc, to))
    ratios.append(tr / wr)
    wcpu.append(wc / wn * 1e6)
    tcpu.append(tc / tn * 1e6)
    town.append(to)
    print(f"{r:>5} {load:>6} {wr:>11.0f} {tr:>11.0f} {tr / wr:>6.3f} {wcpu[-1]:>9.2f} us "
          f"{tcpu[-1]:>8.2f} us {to:>12.2f} us")
m = statistics.median(ratios)
print(f"median ratio truegreen/wrk: {m:.3f} (target >= 1.0): {'MET' if m >= 1.0 else 'NOT MET'}")
print(f"median CPU per request: wrk {statistics.median(wcpu):.2f} us, truegreen "
      f"{statistics.median(tcpu):.2f} us (user+sys of the whole process / its requests); "
      f"truegreen's own figure over its measured window {statistics.median(town):.2f} us")
PY

# --- latency at a fixed rate: wrk2's method ---
RATE=200 LAT_CONNS=4 WARM=0.5 WINDOW=6 AFTER=2.5 STALL=1
RPORT=$(free_port)
python3 benchmarks/wrk2_reference.py server "${RPORT}" &
PIDS+=($!)
wait_port "${RPORT}"
RURL="http://127.0.0.1:${RPORT}"
echo "== latency at a fixed rate (wrk2's method): ${RATE} req/s, ${LAT_CONNS} connections," \
  "window ${WINDOW} s, one ${STALL} s server stall inside it =="
curl -s -o /dev/null "${RURL}/arm?after=${AFTER}&stall=${STALL}"
"${TG}" bench --url "${RURL}" --api get --concurrency "${LAT_CONNS}" --rate "${RATE}" \
  --warmup "${WARM}" --window "${WINDOW}" --max-trials 1 --metrics-interval 0 --no-progress \
  --json > "${WORK}/open.json"
curl -s -o /dev/null "${RURL}/arm?after=${AFTER}&stall=${STALL}"
python3 benchmarks/wrk2_reference.py client "${RURL}/" "${RATE}" "${LAT_CONNS}" "${WARM}" "${WINDOW}" \
  > "${WORK}/py.json"
python3 - "${WORK}/open.json" "${WORK}/py.json" "${STALL}" "${WINDOW}" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
tg = p["latency_summary"]
py = json.load(open(sys.argv[2]))
stall, window = float(sys.argv[3]), float(sys.argv[4])
f = stall / window
base = tg["p50_us"]  # requests the stall did not touch
def expect(q):
    return base + stall * 1e6 * max(0.0, (q - (1 - f)) / f)
rows = [("P90", tg["p90_us"], py["p90"], expect(0.90)),
        ("P95", tg["p95_us"], py["p95"], expect(0.95)),
        ("P99", tg["p99_us"], py["p99"], expect(0.99)),
        ("P99.9", tg["p99_9_us"], py["p99.9"], expect(0.999)),
        ("mean", tg["mean_us"], py["mean"], base + stall * stall / (2 * window) * 1e6)]
print(f"{'':>6} {'truegreen ms':>13} {'wrk2 expectation ms':>20} {'deviation':>10} "
      f"{'python wrk2 client ms':>22}")
worst = 0.0
for name, t, q, e in rows:
    dev = t / e - 1
    worst = max(worst, abs(dev))
    print(f"{name:>6} {t / 1e3:>13.1f} {e / 1e3:>20.1f} {dev * 100:>9.1f}% {q / 1e3:>22.1f}")
print(f"P50: truegreen {tg['p50_us'] / 1e3:.3f} ms, python client {py['p50'] / 1e3:.3f} ms (its own "
      f"overhead); samples: truegreen {p['ok']}, python {py['count']}; achieved "
      f"{p['throughput_rps']:.1f} req/s")
print(f"largest deviation from wrk2's method: {worst * 100:.1f} % (target within 5 %): "
      f"{'MET' if worst <= 0.05 else 'NOT MET'}")
PY
