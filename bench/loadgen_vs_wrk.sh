#!/usr/bin/env bash
# truegreen bench's generator against Debian's wrk, side by side in one run, on a trivial endpoint:
# nginx answering `return 200` on 127.0.0.1 (started here with a private config, stopped at exit).
# Prints both request rates with the same connections and threads, the ratio, truegreen's own CPU
# per request, and truegreen's open-loop latency at a fixed rate (wrk2's method; wrk2 itself is
# not packaged in Debian). Usage: bench/loadgen_vs_wrk.sh [connections] [seconds]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CONNS="${1:-16}"
SECS="${2:-5}"
TG=build/bin/truegreen
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
for tool in "${NGINX}" wrk "${TG}"; do
  if ! command -v "${tool}" >/dev/null 2>&1; then
    echo "loadgen_vs_wrk: ${tool} not found (Debian packages nginx-light and wrk; make build)" >&2
    exit 2
  fi
done
WORK="$(mktemp -d)"
PORT=18$((RANDOM % 900 + 100))
cat > "${WORK}/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid ${WORK}/nginx.pid;
error_log ${WORK}/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${WORK};
  server { listen 127.0.0.1:${PORT}; location / { return 200; } }
}
CONF
"${NGINX}" -c "${WORK}/nginx.conf" -p "${WORK}" &
NGINX_PID=$!
trap 'kill ${NGINX_PID} 2>/dev/null || true; wait ${NGINX_PID} 2>/dev/null || true; rm -rf "${WORK}"' EXIT
sleep 0.5
URL="http://127.0.0.1:${PORT}"

wrk_rps=$(wrk -t1 -c"${CONNS}" -d"${SECS}s" "${URL}/" | awk '/Requests\/sec/ {print $2}')
/usr/bin/time -f "%U %S" -o "${WORK}/cpu" "${TG}" bench --url "${URL}" --api get --concurrency "${CONNS}" \
  --threads 1 --warmup 0.5 --window "${SECS}" --max-trials 1 --metrics-interval 0 --no-progress \
  --json > "${WORK}/tg.json"
read -r tg_rps tg_n < <(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"][0]; print(p["throughput_rps"], p["ok"])' "${WORK}/tg.json")
read -r cpu_user cpu_sys < "${WORK}/cpu"
echo "connections=${CONNS} threads=1 seconds=${SECS}"
echo "wrk:             ${wrk_rps} requests/s"
echo "truegreen bench: ${tg_rps} requests/s"
python3 - "$wrk_rps" "$tg_rps" "$cpu_user" "$cpu_sys" "$tg_n" <<'PY'
import sys
wrk, tg, u, s, n = map(float, sys.argv[1:])
print(f"ratio truegreen/wrk: {tg / wrk:.3f} (target >= 1.0)")
print(f"truegreen CPU per request: {(u + s) / max(n, 1) * 1e6:.2f} us (user+sys over the whole run, "
      "warm-up included, divided by the measured requests: an upper bound)")
PY
# Fixed rate, open loop (latency from the intended send time).
RATE=$(python3 -c "print(int(float('${wrk_rps}') * 0.5))")
"${TG}" bench --url "${URL}" --api get --concurrency "${CONNS}" --rate "${RATE}" --warmup 0.5 \
  --window "${SECS}" --max-trials 1 --metrics-interval 0 --no-progress | tail -n +2
