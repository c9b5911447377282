#!/usr/bin/env bash
# Runs every Google Benchmark binary of the release build (see docs/PERFORMANCE.md for targets).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
for b in build/bin/*_bench; do
  echo "== ${b} =="
  "${b}" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
done
bash scripts/logscan_bench.sh
# truegreen bench's generator against wrk on nginx `return 200` (needs nginx-light and wrk).
if command -v wrk >/dev/null 2>&1 && { command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; }; then
  echo "== bench/loadgen_vs_wrk.sh =="
  bash bench/loadgen_vs_wrk.sh 16 5
else
  echo "== bench/loadgen_vs_wrk.sh skipped: Debian packages nginx-light and wrk not installed =="
fi
