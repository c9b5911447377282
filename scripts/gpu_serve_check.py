#!/usr/bin/env python3
"""Part of the GPU kit (scripts/gpu_check.sh): `truegreen serve` on one SD pipeline.

Starts `TG [--lib-path ORT] --policy POLICY serve` over PIPELINE on an ephemeral loopback port,
waits until /readyz answers 200 or the server exits (at most --wait-s seconds), reads
/v1/capabilities, stops the server, and prints one JSON object for the kit's summary:
  {"serve": {"ready": bool, "exit_code": int|null, "pid_namespace": "pid:[...]",
             "canary": {...the capabilities' canary, whose "gpu" holds the GPU-use proof...},
             "stderr_tail": "..."}}
Exit 0 when the server became ready, 1 when it did not, 2 on a usage error.

Usage: gpu_serve_check.py TG ORT_DIR|- POLICY PIPELINE_DIR [--wait-s 600]
Run it under `unshare --pid --fork` to see the server in its own PID namespace, as in a pod.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except OSError:
        return 0, ""


def main(argv):
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    tg, ort, policy, pipeline = argv[1:5]
    wait_s = float(argv[argv.index("--wait-s") + 1]) if "--wait-s" in argv else 600.0
    with tempfile.TemporaryDirectory() as work:
        os.makedirs(os.path.join(work, "models"))
        os.symlink(os.path.abspath(pipeline), os.path.join(work, "models", "sd"))
        port_file = os.path.join(work, "port")
        cmd = [tg] + (["--lib-path", ort] if ort != "-" else []) + [
            "--policy", policy, "serve", "--models", os.path.join(work, "models"),
            "--port", "0", "--port-file", port_file, "--access-log", "off"]
        err_path = os.path.join(work, "stderr")
        with open(err_path, "wb") as err:
            server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        ready, port, deadline = False, None, time.time() + wait_s
        while time.time() < deadline and server.poll() is None:
            if port is None and os.path.exists(port_file):
                text = open(port_file).read()
                port = int(text) if text.endswith("\n") else None
            if port is not None and get(port, "/readyz")[0] == 200:
                ready = True
                break
            time.sleep(0.2)
        canary = None
        if port is not None and server.poll() is None:
            status, body = get(port, "/v1/capabilities")
            if status == 200:
                canary = json.loads(body).get("canary")
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            exit_code = None  # stopped by us
        else:
            exit_code = server.returncode
        try:
            ns = os.readlink("/proc/self/ns/pid")
        except OSError as e:
            ns = f"unreadable: {e}"
        tail = open(err_path, errors="replace").read()[-3000:]
    print(json.dumps({"serve": {"ready": ready, "exit_code": exit_code, "pid_namespace": ns,
                                "canary": canary, "stderr_tail": tail}}))
    return 0 if ready else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
