#!/usr/bin/env bash
# make bench: every benchmark of the release build, with the targets and figures in
# docs/PERFORMANCE.md. The Google Benchmark binaries first, then the side-by-side scripts:
#   benchmarks/loadgen_vs_wrk.sh       truegreen bench's generator vs wrk on nginx
#   benchmarks/server_vs_inprocess.sh  truegreen serve vs nginx under wrk, and vs in-process
#                                 generation (runs build/bin/server_bench)
#   benchmarks/attention_fusion.sh     generate's peak RSS and latency with and without the attention
#                                 rewrite, 512x512 to 2048x2048, batch 1 and 4
#   benchmarks/memory_sweep.sh         the memory model's estimates against measured peaks, and
#                                 serve under a 2 GiB budget at the large sizes
# BENCH_ONLY=speed runs just the two scripts (about 3 minutes: the lead's one command for
# re-measuring the speed targets on a quiet machine).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "${BENCH_ONLY:-}" != speed ]; then
  for b in build/bin/*_bench; do
    [ "${b}" = build/bin/server_bench ] && continue  # needs a server: run by its script below
    echo "== ${b} =="
    "${b}" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
  done
  bash scripts/logscan_bench.sh
  bash benchmarks/attention_fusion.sh
  bash benchmarks/memory_sweep.sh
fi
if command -v wrk >/dev/null 2>&1 && { command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; }; then
  echo "== machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) =="
  bash benchmarks/loadgen_vs_wrk.sh 16 5 5 1
  bash benchmarks/server_vs_inprocess.sh
  echo "== machine after: load average $(cut -d' ' -f1-3 /proc/loadavg) =="
else
  echo "== speed scripts skipped: Debian packages nginx-light and wrk not installed (scripts/setup.sh) =="
fi
