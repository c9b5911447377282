#!/usr/bin/env bash
# logscan throughput against `grep -ciE` with the same full pattern set, side by side on the same
# generated 60 MB log (docs/PERFORMANCE.md records the figures). Run by `make bench`.
#   bash scripts/logscan_bench.sh [BINARY]   (default build/bin/truegreen)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN="${1:-build/bin/truegreen}"
WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT

# A realistic request log: ~60 MB of INFO lines with a handful of real findings spread through it.
/usr/bin/python3 - "${WORK}/big.log" <<'PY'
import random, sys
random.seed(7)
lines = [
    "2026-11-30T12:00:{:02d}.{:06d}Z INFO  server request id={} route=/v2/models/unet/infer status=200 latency_ms={:.2f} batch={}",
    "2026-11-30T12:00:{:02d}.{:06d}Z DEBUG scheduler step={} t={} sigma={:.4f} guidance=7.5 seed={} ok",
    "2026-11-30T12:00:{:02d}.{:06d}Z INFO  metrics gpu_util={} mem_used_mib={} temp_c={} power_w={}",
]
findings = [
    "Failed to initialize NVML: Unknown Error",
    "[W:onnxruntime:, session_state.cc:1280 VerifyEachNodeIsAssignedToAnEp] Some nodes were not assigned to the preferred execution providers which may or may not have an negative impact on performance.",
    "[TRT] [W] TensorRT was linked against cuDNN 9.1.0 but loaded cuDNN 8.9.7",
]
out = open(sys.argv[1], "w")
size = 0
n = 0
while size < 60 * 1000 * 1000:
    n += 1
    if n % 200000 == 0:
        line = findings[(n // 200000) % len(findings)]
    else:
        t = lines[n % 3]
        line = t.format(n % 60, n % 1000000, n, random.random() * 100, n % 8) if n % 3 == 0 else \
            t.format(n % 60, n % 1000000, n % 50, n % 1000, random.random(), n) if n % 3 == 1 else \
            t.format(n % 60, n % 1000000, n % 100, n % 80000, 40 + n % 40, 100 + n % 300)
    out.write(line + "\n")
    size += len(line) + 1
PY
BYTES=$(stat -c %s "${WORK}/big.log")

# The full built-in pattern set as one grep -E alternation (the regexes are written in the common
# subset of RE2 and GNU ERE).
grep -o 'R"(.*)"' src/policy/logscan.cc | sed -e 's/^R"(//' -e 's/)"$//' > "${WORK}/patterns.txt"
NPAT=$(wc -l < "${WORK}/patterns.txt")

# Output goes to a file, never /dev/null: GNU grep notices /dev/null and stops at the first
# matching line, which would time a third of the log.
once() {  # "wall user+sys" seconds of one run of "$@"
  local TIMEFORMAT='%R %U %S'
  { time "$@" > "${WORK}/out" 2>&1 || true; } 2>&1 | awk '{ print $1, $2 + $3 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
RUNS="${LOGSCAN_BENCH_RUNS:-7}"
cat "${WORK}/big.log" > /dev/null  # warm the page cache
: > "${WORK}/grep.t"
: > "${WORK}/tg.t"
for _ in $(seq "${RUNS}"); do  # side by side, alternating, so both see the same machine load
  once grep -ciE -f "${WORK}/patterns.txt" "${WORK}/big.log" >> "${WORK}/grep.t"
  once "${BIN}" logscan "${WORK}/big.log" >> "${WORK}/tg.t"
done
G_WALL=$(cut -d' ' -f1 "${WORK}/grep.t" | median)
G_CPU=$(cut -d' ' -f2 "${WORK}/grep.t" | median)
T_WALL=$(cut -d' ' -f1 "${WORK}/tg.t" | median)
T_CPU=$(cut -d' ' -f2 "${WORK}/tg.t" | median)
grep -ciE -f "${WORK}/patterns.txt" "${WORK}/big.log" > "${WORK}/grep.count" || true
awk -v bytes="${BYTES}" -v n="${NPAT}" -v gw="${G_WALL}" -v gc="${G_CPU}" -v tw="${T_WALL}" \
    -v tc="${T_CPU}" -v runs="${RUNS}" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" \
    -v cores="$(nproc)" 'BEGIN {
  printf "logscan bench: %d bytes, %d patterns, medians of %d alternating runs\n", bytes, n, runs
  printf "  load average %s on %d cores (after the runs)\n", load, cores
  printf "                          wall s   MB/s    cpu s   MB/s\n"
  printf "  grep -ciE -f patterns   %6.3f %6.1f   %6.3f %6.1f\n", gw, bytes / 1e6 / gw, gc,
         bytes / 1e6 / (gc > 0 ? gc : 0.001)
  printf "  truegreen logscan       %6.3f %6.1f   %6.3f %6.1f\n", tw, bytes / 1e6 / tw, tc,
         bytes / 1e6 / (tc > 0 ? tc : 0.001)
  printf "  ratio logscan/grep      wall %.2f, cpu %.2f (goal >= 1.0)\n", gw / tw,
         (tc > 0 ? gc / tc : 0)
}'
echo "  grep matching lines: $(cat "${WORK}/grep.count")"
"${BIN}" logscan "${WORK}/big.log" | sed -n 1p
