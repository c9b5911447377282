#!/usr/bin/env bash
# Peak RSS and latency of `truegreen generate` with the attention rewrite (session.fuse_attention,
# the default) and without it (--no-fuse-attention), on a bundled small pipeline (docs/PERFORMANCE.md).
# Usage: benchmarks/attention_fusion.sh [PIPELINE] [SIZES] [BATCHES]
#   PIPELINE  build/models/sd-tiny/<name> (default sd15-optimum)
#   SIZES     default "512x512 768x768 1024x1024 1536x1024 2048x2048"
#   BATCHES   default "1 4"
# A run the unfused graph cannot fit (its score tensors alone, 2 x batch x heads x T^2 floats with
# guidance, over half of MemAvailable) is skipped and says so rather than taking the machine down.
# Prints one line per run: size batch mode peak_rss_MB wall_s exit, then the 512x512 ratio.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PIPE="build/models/sd-tiny/${1:-sd15-optimum}"
SIZES="${2:-512x512 768x768 1024x1024 1536x1024 2048x2048}"
BATCHES="${3:-1 4}"
TG=build/bin/truegreen
HEADS=8  # the UNet's heads (tools/gen_sd.py keeps the published head count)
OUT="$(mktemp -d)"
trap 'rm -rf "${OUT}"' EXIT
export TRUEGREEN_CACHE_DIR="${OUT}/cache"
echo "== attention rewrite: ${PIPE}, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) =="
# Fill the rewrite cache first, so the timed fused runs measure generation, not the check.
"${TG}" --policy dev generate --model "${PIPE}" --prompt "a cat" --steps 1 --size 256x256 \
  -o "${OUT}/warm.png" --no-progress >/dev/null 2>&1
run() {  # size batch mode
  local size="$1" batch="$2" mode="$3" w h t need avail flag=()
  w="${size%x*}"; h="${size#*x}"; t=$(( (w / 8) * (h / 8) ))
  if [ "${mode}" = unfused ]; then
    flag=(--no-fuse-attention)
    need=$(( 2 * batch * HEADS * t * t * 4 / 1048576 ))
    avail=$(( $(awk '/MemAvailable/ {print $2}' /proc/meminfo) / 1024 ))
    if [ "${need}" -gt $(( avail / 2 )) ]; then
      printf '%s\t%s\t%s\tskipped: scores alone need %s MB, %s MB available\n' \
        "${size}" "${batch}" "${mode}" "${need}" "${avail}"
      return
    fi
  fi
  local rc=0
  /usr/bin/time -v -o "${OUT}/time.txt" timeout 1800 "${TG}" --policy dev generate \
    --model "${PIPE}" --prompt "a cat" --steps 2 --size "${size}" --batch "${batch}" \
    -o "${OUT}/img.png" --no-progress "${flag[@]}" >/dev/null 2>"${OUT}/err.txt" || rc=$?
  local rss wall
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "${OUT}/time.txt")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0;
    for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.2f", s}' "${OUT}/time.txt")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "${size}" "${batch}" "${mode}" "${rss}" "${wall}" "${rc}"
  echo "${wall}" > "${OUT}/${size}-${batch}-${mode}.wall"
}
printf 'size\tbatch\tmode\tpeak_rss_MB\twall_s\texit\n'
for size in ${SIZES}; do
  for batch in ${BATCHES}; do
    run "${size}" "${batch}" fused
    run "${size}" "${batch}" unfused
  done
done
if [ -f "${OUT}/512x512-1-fused.wall" ] && [ -f "${OUT}/512x512-1-unfused.wall" ]; then
  awk -v f="$(cat "${OUT}/512x512-1-fused.wall")" -v u="$(cat "${OUT}/512x512-1-unfused.wall")" \
    'BEGIN { r = f / u; printf "512x512 batch 1: fused/unfused wall %.2f (target <= 1.10): %s\n",
      r, r <= 1.10 ? "met" : "NOT met" }'
fi
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg) =="
