// `truegreen serve`: flags (each with a TRUEGREEN_* environment variable) → server::ServeConfig,
// model repository, then server::RunServer. Exit codes as every command: 2 bad flag or model
// repository, 3 no GPU path, 4 drift, 5 canary too slow, 0 after a SIGTERM drain.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "audit/report/byte_size.h"
#include "cli/command.h"
#include "cli/integrity_canary.h"
#include "cli/option_checks.h"
#include "cli/output.h"
#include "common/status.h"
#include "server/serve_config.h"
#include "server/server.h"

namespace tg::cli {
namespace {

struct ServeFlags {
  server::ServeConfig c;
  std::string token_file;
  double p50 = 0.0, p95 = 0.0;
  double min_gpu_util = 0.0;         // 0 = not gated
  std::vector<std::string> aliases;  // --model-alias ALIAS=MODEL
  std::string memory_budget;         // --memory-budget SIZE ("" = read it)
  const CLI::App* cmd = nullptr;     // serve's options, to name a variable that gave a value
};

// --model-alias values into the alias map; each target must be an image model of `models`.
common::Status ParseAliases(const std::vector<std::string>& values,
                            const std::vector<server::ModelSpec>& models,
                            std::map<std::string, std::string>* out) {
  for (const std::string& v : values) {
    const auto eq = v.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
      return common::Status::InvalidArg("--model-alias '" + v.substr(0, 64) +
                                        "': ALIAS=MODEL is required (e.g. dall-e-3=sd15)");
    }
    const std::string alias = v.substr(0, eq), target = v.substr(eq + 1);
    bool found = false;
    for (const auto& m : models) {
      found = found || (m.name == target && m.kind == server::ModelKind::kStableDiffusion);
    }
    if (!found) {
      return common::Status::InvalidArg("--model-alias " + v.substr(0, 128) + ": '" +
                                        target.substr(0, 64) +
                                        "' is not an image model of the repository");
    }
    if (!out->emplace(alias, target).second) {
      return common::Status::InvalidArg("--model-alias: '" + alias.substr(0, 64) +
                                        "' is given twice");
    }
  }
  return common::Status::Ok();
}

int RunServe(const GlobalOptions& g, ServeFlags& f) {
  server::ServeConfig c = f.c;
  c.policy = g.policy;
  // The global --policy has no env var of its own; TRUEGREEN_POLICY fills it when not given.
  if (const char* p = std::getenv("TRUEGREEN_POLICY"); p && *p && g.policy == "production") {
    c.policy = p;
  }
  // The op canary's child runs under the same policy as the server.
  GlobalOptions child = g;
  child.policy = c.policy;
  c.op_canary = StartupCanaryOptions(child);
  // Every error leaves through the one error path, its code deciding the exit code.
  // A value from a TRUEGREEN_* variable is named as the variable, which is what the user wrote.
  auto fail = [&f](const common::Status& s, const common::Json& context = common::Json()) {
    const std::string note =
        f.cmd == nullptr ? "" : EnvironmentNote(*f.cmd, s.message(), ProcessArgs());
    return ReportError(note.empty() ? s : common::Status(s.code(), s.message() + note), context);
  };
  if (f.p50 > 0) c.canary.p50_ms = f.p50;
  if (f.p95 > 0) c.canary.p95_ms = f.p95;
  if (f.min_gpu_util != 0.0) c.canary.min_gpu_utilization = f.min_gpu_util;
  if (!f.memory_budget.empty()) {
    auto b = audit::ParseByteSizeOrError(f.memory_budget);
    if (!b.ok()) return fail(b.status().WithPrefix("--memory-budget"));
    c.memory_budget = static_cast<std::int64_t>(*b);
  }
  if (!f.token_file.empty()) {
    auto t = server::ReadTokenFile(f.token_file);
    if (!t.ok()) return fail(t.status());
    c.token = *t;
  } else if (const char* t = std::getenv("TRUEGREEN_TOKEN"); t && *t) {
    c.token = t;
  }
  if (common::Status s = server::ValidateServeConfig(c); !s.ok()) return fail(s);
  auto models = server::LoadModelRepository(c.models_dir);
  if (!models.ok()) return fail(models.status());
  if (common::Status s = ParseAliases(f.aliases, *models, &c.model_aliases); !s.ok()) {
    return fail(s);
  }
  const server::ServeResult r = server::RunServer(c, *models, g.Loader());
  // A failed gate or bind leaves through the one error path, the summary beside the error object
  // under --json; a drain, or a canary that completed too slowly (a result), prints the summary.
  if (!r.status.ok() && !r.performance_failed) return fail(r.status, r.summary);
  if (g.json) PrintJson(r.summary);
  return r.exit_code;
}

}  // namespace

void RegisterServeCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r) {
  auto f = std::make_shared<ServeFlags>();
  server::ServeConfig& c = f->c;
  server::Limits& l = c.limits;
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "HTTP inference server (OpenAI images, KServe v2) that turns ready only after admission, "
      "placement proof, warm-up and a timed canary (docs/SERVER.md)");
  auto opt = [&](const std::string& name, auto& var, const std::string& env, const char* help) {
    return cmd->add_option(name, var, help)->envname(env)->capture_default_str();
  };
  opt("--models", c.models_dir, "TRUEGREEN_MODELS", "Model repository folder (a pod mounts it)")
      ->type_name("DIR");
  opt("--matrix", c.matrix, "TRUEGREEN_MATRIX", "Version matrix (default: the --policy matrix)")
      ->type_name("FILE");
  opt("--host", c.host, "TRUEGREEN_HOST", "Address to bind (0.0.0.0 in a pod)");
  opt("--port", c.port, "TRUEGREEN_PORT", "TCP port (0 = ephemeral, logged)");
  opt("--port-file", c.port_file, "TRUEGREEN_PORT_FILE", "Write the bound port to FILE")
      ->type_name("FILE");
  cmd->add_option("--exit-on-fail", c.exit_on_fail,
                  "Exit 3/4/5 when a start-up gate fails (false: stay up answering 503)")
      ->envname("TRUEGREEN_EXIT_ON_FAIL")
      ->capture_default_str();
  opt("--token-file", f->token_file, "TRUEGREEN_TOKEN_FILE",
      "Bearer token file (or TRUEGREEN_TOKEN); health endpoints stay open")
      ->type_name("FILE");
  opt("--io-threads", c.io_threads, "TRUEGREEN_IO_THREADS", "HTTP I/O threads");
  opt("--access-log", c.access_log, "TRUEGREEN_ACCESS_LOG", "JSON-lines access log: - | off | FILE")
      ->type_name("FILE|-|off");
  opt("--max-body-bytes", l.max_body_bytes, "TRUEGREEN_MAX_BODY_BYTES", "413 above");
  opt("--queue-size", l.queue_size, "TRUEGREEN_QUEUE_SIZE", "Queued requests per model lane (429)");
  opt("--deadline-ms", l.deadline_ms, "TRUEGREEN_DEADLINE_MS", "Per-request deadline (504)");
  opt("--concurrency", l.concurrency, "TRUEGREEN_CONCURRENCY", "Executions at once per model lane");
  opt("--max-connections", l.max_connections, "TRUEGREEN_MAX_CONNECTIONS", "Open connection cap");
  opt("--header-timeout-ms", l.header_timeout_ms, "TRUEGREEN_HEADER_TIMEOUT_MS",
      "Time allowed for a request header");
  opt("--body-timeout-ms", l.body_timeout_ms, "TRUEGREEN_BODY_TIMEOUT_MS",
      "Time allowed for a request body");
  opt("--idle-timeout-ms", l.idle_timeout_ms, "TRUEGREEN_IDLE_TIMEOUT_MS", "Keep-alive idle limit");
  opt("--max-n", l.max_n, "TRUEGREEN_MAX_N", "Images per OpenAI request (1..10)");
  opt("--image-store-bytes", c.image_store_bytes, "TRUEGREEN_IMAGE_STORE_BYTES",
      "Memory for response_format \"url\" images (oldest dropped first)");
  opt("--image-ttl-s", c.image_ttl_s, "TRUEGREEN_IMAGE_TTL_S",
      "Lifetime of a response_format \"url\" image");
  cmd->add_option("--model-alias", f->aliases,
                  "ALIAS=MODEL: an OpenAI model name answered by a served image model "
                  "(e.g. dall-e-3=sd15); repeatable")
      ->envname("TRUEGREEN_MODEL_ALIAS")
      ->delimiter(',')
      ->type_name("ALIAS=MODEL");
  opt("--max-steps", l.max_steps, "TRUEGREEN_MAX_STEPS", "Denoising steps per request");
  opt("--large-pixels", l.large_pixels, "TRUEGREEN_LARGE_PIXELS",
      "SD jobs above width*height*steps/50*n use the large lane");
  opt("--memory-budget", f->memory_budget, "TRUEGREEN_MEMORY_BUDGET",
      "Memory the replica may use (default: the cgroup limit, else MemAvailable, or free GPU "
      "memory, less a reserve); requests that cannot fit are refused, batches split")
      ->type_name("SIZE");
  opt("--canary-steps", c.canary.steps, "TRUEGREEN_CANARY_STEPS", "Steps per canary image");
  opt("--canary-size", c.canary.size, "TRUEGREEN_CANARY_SIZE", "Canary image side (0 = 256)");
  opt("--canary-p50-ms", f->p50, "TRUEGREEN_CANARY_P50_MS", "Canary P50 ceiling (0 = not gated)");
  opt("--canary-p95-ms", f->p95, "TRUEGREEN_CANARY_P95_MS", "Canary P95 ceiling (0 = not gated)");
  opt("--canary-min-gpu-utilization", f->min_gpu_util, "TRUEGREEN_CANARY_MIN_GPU_UTILIZATION",
      "GPU-utilisation floor (0..1] during the canary, through NVML (0 = not gated)");
  opt("--gpu-sample-interval-ms", c.gpu_sample_interval_ms, "TRUEGREEN_GPU_SAMPLE_INTERVAL_MS",
      "NVML metrics and GPU liveness period");
  opt("--canary-interval-s", c.canary.interval_s, "TRUEGREEN_CANARY_INTERVAL_S",
      "Background canary period (0 = off)");
  opt("--canary-drift-tolerance", c.canary.drift_tolerance, "TRUEGREEN_CANARY_DRIFT_TOLERANCE",
      "Background P50 above this x start-up P50 flips /readyz");
  opt("--fault-file", c.fault_file, "TRUEGREEN_FAULT_FILE",
      "Test hook: 'canary-fail' or 'canary-slow' in FILE fails the background canary")
      ->type_name("FILE");
  f->cmd = cmd;
  r.Add(cmd, [&g, f] { return RunServe(g, *f); });
}

}  // namespace tg::cli
