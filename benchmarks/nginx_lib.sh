# Shared by the speed scripts in benchmarks/ (sourced, not run): a private work folder, cleanup of the
# processes they start, a free loopback port, and Debian's nginx answering `return 200` on it.
# The caller sets `set -euo pipefail` and NGINX (the nginx binary).

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "${p}" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "${p}" 2>/dev/null || true; done
  rm -rf "${WORK}"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_nginx PORT WORKERS: nginx with a private config under WORK, access log off, `return 200`
# for every path but /static/, which serves the files of WORK/static/ (server_vs_inprocess.sh puts
# a copy of a generation's response there); its pid goes to PIDS (stopped at exit) and NGINX_PID.
start_nginx() {
  local port="$1" workers="$2"
  cat > "${WORK}/nginx.conf" <<CONF
worker_processes ${workers};
daemon off;
pid ${WORK}/nginx.pid;
error_log ${WORK}/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${WORK};
  server {
    listen 127.0.0.1:${port};
    location / { return 200; }
    location /static/ { root ${WORK}; }
  }
}
CONF
  "${NGINX}" -c "${WORK}/nginx.conf" -p "${WORK}" &
  NGINX_PID=$!
  PIDS+=("${NGINX_PID}")
}
