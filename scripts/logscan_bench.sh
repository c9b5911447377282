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

best() {  # best of 3 wall-clock seconds of "$@" (output discarded)
  local b=0
  for _ in 1 2 3; do
    local s e
    s=$(date +%s%N); "$@" > /dev/null 2>&1 || true; e=$(date +%s%N)
    if [ "$b" -eq 0 ] || [ $((e - s)) -lt "$b" ]; then b=$((e - s)); fi
  done
  echo "$b"
}
cat "${WORK}/big.log" > /dev/null  # warm the page cache
T_GREP=$(best grep -ciE -f "${WORK}/patterns.txt" "${WORK}/big.log")
T_TG=$(best "${BIN}" logscan "${WORK}/big.log")
awk -v bytes="${BYTES}" -v n="${NPAT}" -v g="${T_GREP}" -v t="${T_TG}" 'BEGIN {
  printf "logscan bench: %d bytes, %d patterns\n", bytes, n
  printf "  grep -ciE -f patterns   %6.3f s  %7.1f MB/s\n", g / 1e9, bytes / 1e6 / (g / 1e9)
  printf "  truegreen logscan       %6.3f s  %7.1f MB/s\n", t / 1e9, bytes / 1e6 / (t / 1e9)
  printf "  ratio logscan/grep      %6.2f (goal >= 0.50)\n", g / t
}'
"${BIN}" logscan "${WORK}/big.log" | tail -1
