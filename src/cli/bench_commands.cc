// `truegreen bench` (load generator over a sweep, SLOs as code) and `truegreen compare` (before /
// after statistics and regression gates). Results on stdout (text, markdown or --json), logs and
// the progress line on stderr. Exit codes: 0 pass, 2 usage (bad flag, malformed threshold, prompt
// set or run file), 3 target unreachable or a point where no request succeeded, 5 an SLO or a
// regression gate failed, 130 interrupted (SIGINT; every output was still written with what was
// measured so far).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <sys/utsname.h>

#include "bench/ab.h"
#include "bench/bench_file.h"
#include "bench/compare.h"
#include "bench/loadgen.h"
#include "bench/nvml_sampler.h"
#include "bench/report.h"
#include "bench/server_metrics.h"
#include "bench/slo.h"
#include "bench/workload.h"
#include "cli/command.h"
#include "cli/output.h"
#include "common/config.h"
#include "common/file_util.h"
#include "common/interrupt.h"
#include "common/json_limits.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/outcome.h"
#include "common/process.h"

#ifndef TG_VERSION
#define TG_VERSION "0.0.0"
#endif

namespace tg::cli {
namespace {

using bench::PointConfig;
using bench::RunResult;
using common::Json;
using common::Status;

struct BenchOptions {
  std::string url, api, model, prompts, bench_file;  // api: "" until resolved (openai)
  std::string concurrency = "1", batch = "1", size = "512x512", steps = "20";
  std::vector<std::string> schedulers;
  std::vector<std::string> slos;
  std::vector<std::string> ab, fail_on;
  std::string ab_out = "ab-report";
  double rate = 0, warmup_s = 5, window_s = 5, stability_pct = 10, timeout_s = 120;
  double metrics_interval_s = 1;
  int max_trials = 10, threads = 1;
  std::string out, csv, html;
  bool no_progress = false;
  bool nvml = true;
  std::string body_file;
  std::string body_json;  // the bench file's body (when no --body FILE is given)
};

struct CompareOptions {
  std::vector<std::string> files;
  std::vector<std::string> fail_on;
  std::string out, html;
};

// Output files: written atomically; an existing file is replaced only when it is one of ours
// (same leading marker), so a typo in --out never destroys someone else's file.
Status WriteOutput(const std::string& path, const std::string& data, const std::string& marker) {
  if (path.empty()) return Status::Ok();
  if (::access(path.c_str(), F_OK) == 0) {
    auto existing = common::ReadFileLimited(path, 1ULL << 30);
    if (!existing.ok() || existing->rfind(marker, 0) != 0) {
      return Status::InvalidArg(fmt::format(
          "{}: exists and is not a truegreen output (expected it to start with \"{}\"); refusing "
          "to overwrite it",
          path, marker));
    }
  }
  return common::WriteFileAtomic(path, data);
}

const char* kJsonMarker = "{\n  \"api\"";
const char* kCsvMarker = "Concurrency,Inferences/Second";
const char* kHtmlMarker =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>truegreen";

Json Environment() {
  Json env = {{"cpu_count", std::thread::hardware_concurrency()}};
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) == 0) env["hostname"] = host;
  struct utsname u {};
  if (::uname(&u) == 0) env["kernel"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
  return env;
}

std::string NowIso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

constexpr std::size_t kMaxSweepPoints = 1024;

common::Result<std::vector<PointConfig>> Sweep(const BenchOptions& o) {
  TG_ASSIGN_OR_RETURN(auto conc, bench::ParseIntList("--concurrency", o.concurrency));
  TG_ASSIGN_OR_RETURN(auto batch, bench::ParseIntList("--batch", o.batch));
  TG_ASSIGN_OR_RETURN(auto size, bench::ParseSizeList("--size", o.size));
  TG_ASSIGN_OR_RETURN(auto steps, bench::ParseIntList("--steps", o.steps));
  std::vector<std::string> scheds =
      o.schedulers.empty() ? std::vector<std::string>{""} : o.schedulers;
  std::set<std::string> seen;
  for (const std::string& sc : scheds) {
    if (!seen.insert(sc).second) {
      return common::Status::InvalidArg("--scheduler: '" + sc + "' is listed twice");
    }
  }
  // Each point runs for minutes: a sweep beyond kMaxSweepPoints is a typo, refused before the
  // list of points is built.
  const std::uint64_t points = static_cast<std::uint64_t>(scheds.size()) * size.size() *
                               steps.size() * batch.size() * conc.size();
  if (size.size() > kMaxSweepPoints || steps.size() > kMaxSweepPoints ||
      batch.size() > kMaxSweepPoints || conc.size() > kMaxSweepPoints ||
      scheds.size() > kMaxSweepPoints || points > kMaxSweepPoints) {
    return common::Status::InvalidArg(
        "the sweep has more than " + std::to_string(kMaxSweepPoints) +
        " points (--scheduler x --size x --steps x --batch x --concurrency); split it into runs");
  }
  std::vector<PointConfig> out;
  for (const auto& sc : scheds)
    for (const auto& sz : size)
      for (int st : steps)
        for (int b : batch)
          for (int c : conc) out.push_back({c, b, sz, st, sc, o.rate});
  return out;
}

void Progress(bool show, std::size_t point, std::size_t points, const std::string& label,
              int window, bool stable) {
  if (!show) return;
  int filled = static_cast<int>(20.0 * static_cast<double>(point) / static_cast<double>(points));
  std::fprintf(stderr, "\r[%s%s] point %zu/%zu %s: window %d%s   ",
               std::string(filled, '#').c_str(), std::string(20 - filled, '.').c_str(), point + 1,
               points, label.c_str(), window, stable ? " (stable)" : "");
  std::fflush(stderr);
}

common::Result<bench::PointResult> MeasurePoint(const BenchOptions& o, const bench::Target& target,
                                                const bench::PromptSet& prompts,
                                                const PointConfig& pc, bool progress,
                                                std::size_t index, std::size_t total,
                                                bool* interrupted,
                                                const common::LibraryLoader& loader) {
  bench::LoadOptions lo;
  lo.target = target;
  TG_ASSIGN_OR_RETURN(lo.requests, bench::BuildRequests(o.api, o.model, pc, prompts));
  if (!o.body_json.empty() && !lo.requests.empty()) {
    // A generic model's request (e.g. KServe v2 JSON tensors), the same for every request: one
    // copy is sent round-robin, not one per prompt.
    lo.requests.resize(1);
    lo.requests[0].body = o.body_json;
  }
  lo.connections = pc.concurrency;
  lo.threads = o.threads;
  lo.rate = o.rate;
  lo.warmup_s = o.warmup_s;
  lo.window_s = o.window_s;
  lo.max_trials = o.max_trials;
  lo.stability = o.stability_pct / 100.0;
  lo.timeout_s = o.timeout_s;
  lo.stop = common::SigintScope::Flag();
  lo.on_window = [&](int w, bool stable) {
    Progress(progress, index, total, pc.Label(), w, stable);
  };
  std::optional<bench::MetricsScraper> scraper;
  if (o.metrics_interval_s > 0) {
    scraper.emplace(target, o.metrics_interval_s);
    scraper->Start();
  }
  std::unique_ptr<bench::NvmlSampler> nvml;  // local GPU, when libnvidia-ml is present
  if (o.nvml && o.metrics_interval_s > 0) {
    if (auto n = bench::NvmlSampler::Open(loader); n.ok()) {
      nvml = std::move(*n);
      nvml->Start(o.metrics_interval_s);
    }
  }
  auto origin = std::chrono::steady_clock::now();
  TG_ASSIGN_OR_RETURN(bench::LoadResult lr, bench::RunLoad(lo));
  if (scraper) {
    scraper->Stop();
    lr.point.gpu =
        bench::AggregateGpu(scraper->Samples(), lr.measured_begin, lr.measured_end, origin);
  }
  if (nvml) {
    nvml->Stop();
    // The server's own figures win; local NVML fills in when the server exports no utilisation.
    bench::GpuSide local =
        bench::AggregateNvml(nvml->Samples(), lr.measured_begin, lr.measured_end, origin);
    bench::GpuSide& gpu = lr.point.gpu;
    if (!gpu.utilization && (local.utilization || gpu.source.empty())) {
      gpu.utilization = local.utilization;
      gpu.utilization_series = local.utilization_series;
      if (!gpu.memory_used_bytes) gpu.memory_used_bytes = local.memory_used_bytes;
      gpu.source += (gpu.source.empty() ? "" : " + ") + local.source;
    }
  }
  lr.point.config = pc;
  *interrupted = lr.interrupted;
  return std::move(lr.point);
}

// Writes the run's files and prints it. A run in which some point had no successful request
// (`none` not OK) leaves through the error path, the run beside the error object under --json.
// Returns the exit code, or -1 when the caller decides it.
int WriteRunOutputs(const BenchOptions& o, const GlobalOptions& g, const RunResult& run,
                    const Status& none) {
  Json j = bench::RunToJson(run);
  for (auto [path, data, marker] : {std::tuple{o.out, common::WriteJson(j, 2) + "\n", kJsonMarker},
                                    std::tuple{o.csv, bench::RunToCsv(run), kCsvMarker},
                                    std::tuple{o.html, bench::RunToHtml(run), kHtmlMarker}}) {
    Status s = WriteOutput(path, data, marker);
    if (!s.ok()) return ReportError(s);
  }
  if (!none.ok() && !run.interrupted && g.json) return ReportError(none, j);
  std::fputs(g.json ? (common::WriteJson(j, 2) + "\n").c_str() : bench::RunToText(run).c_str(),
             stdout);
  if (!none.ok() && !run.interrupted) return ReportError(none);
  return -1;
}

// Everything a sweep needs, parsed and validated before any server is touched.
struct Prepared {
  std::vector<bench::Threshold> thresholds;
  std::vector<std::string> slo_texts;
  std::vector<PointConfig> sweep;
  bench::PromptSet prompts;
  std::vector<bench::Gate> gates;
};

// The bench file (bench/bench_file.h) fills what the command line left unset; its SLOs come first.
common::Result<BenchOptions> WithBenchFile(BenchOptions o) {
  if (!o.bench_file.empty()) {
    TG_ASSIGN_OR_RETURN(bench::BenchFile f, bench::LoadBenchFile(o.bench_file));
    o.slos.insert(o.slos.begin(), f.slos.begin(), f.slos.end());
    if (o.api.empty() && f.api) o.api = *f.api;
    if (o.model.empty() && f.model) o.model = *f.model;
    if (o.body_file.empty() && f.body) o.body_json = *f.body;
  }
  if (!o.body_file.empty()) {
    // Sent verbatim: checked to be one JSON document (syntax, duplicate keys, depth) without
    // building it, so the memory a body costs is its text, not a document many times its size.
    TG_ASSIGN_OR_RETURN(o.body_json, common::ReadFileLimited(o.body_file, common::kMaxConfigBytes));
    TG_RETURN_IF_ERROR(
        common::ParseJson(o.body_json, o.body_file, common::JsonLimits{.build = false}).status());
  }
  if (o.api.empty()) o.api = "openai";
  return o;
}

common::Result<Prepared> Prepare(const BenchOptions& o) {
  Prepared p;
  p.slo_texts = o.slos;
  // A bench file's thresholds were checked where they were read, with their file and line.
  auto thresholds = bench::ParseThresholds(p.slo_texts);
  if (!thresholds.ok()) {
    return Status::InvalidArg(fmt::format("--slo: {}", thresholds.status().message()));
  }
  p.thresholds = std::move(*thresholds);
  TG_ASSIGN_OR_RETURN(p.gates, bench::ParseGates(o.fail_on));
  if (o.url.empty() == o.ab.empty()) {
    return Status::InvalidArg("bench: give exactly one of --url URL and --ab A.yaml B.yaml");
  }
  if (!o.url.empty()) TG_RETURN_IF_ERROR(bench::ParseUrl(o.url).status());
  TG_ASSIGN_OR_RETURN(p.sweep, Sweep(o));
  p.prompts = bench::BuiltinPromptSet();
  if (!o.prompts.empty()) {
    TG_ASSIGN_OR_RETURN(p.prompts, bench::LoadPromptSet(o.prompts));
  }
  if (o.api == "kserve" && o.model.empty())
    return Status::InvalidArg("--api kserve needs --model (or model: in the bench file)");
  return p;
}

// Runs the whole sweep against `url`; SIGINT stops it early with what was measured.
common::Result<RunResult> MeasureRun(const BenchOptions& o, const Prepared& p,
                                     const std::string& url, const common::LibraryLoader& loader) {
  TG_ASSIGN_OR_RETURN(bench::Target target, bench::ParseUrl(url));
  RunResult run;
  run.tool_version = TG_VERSION;
  run.url = url;
  run.api = o.api;
  run.model = o.model;
  run.prompt_set_path = p.prompts.path;
  run.prompt_set_sha256 = p.prompts.sha256;
  run.started_at = NowIso();
  run.environment = Environment();
  run.slos = p.slo_texts;
  if (auto caps = bench::HttpGet(target, "/v1/capabilities", 5); caps.ok() && caps->status == 200) {
    auto cj = common::ParseJson(caps->body, "/v1/capabilities");
    if (cj.ok()) run.server_capabilities = *cj;
  }
  // No bar under --log-format json: every stderr line must then be a JSON object.
  bool progress = !o.no_progress && ::isatty(STDERR_FILENO) != 0 &&
                  common::StderrFormat() != common::LogFormat::kJson;
  for (std::size_t i = 0; i < p.sweep.size() && !run.interrupted; ++i) {
    TG_ASSIGN_OR_RETURN(bench::PointResult point,
                        MeasurePoint(o, target, p.prompts, p.sweep[i], progress, i, p.sweep.size(),
                                     &run.interrupted, loader));
    bench::EvaluateSlos(p.thresholds, point);
    run.points.push_back(std::move(point));
  }
  if (progress) std::fputs("\n", stderr);
  return run;
}

// Green means proven: a point where not one request succeeded measured nothing about the server.
// UNAVAILABLE (exit 3) naming every such point and its errors; OK when each point had a success.
Status NothingSucceeded(const RunResult& run) {
  std::string msg;
  for (const auto& p : run.points) {
    if (p.ok != 0) continue;
    std::string errs;
    for (const auto& [k, v] : p.errors) errs += fmt::format(" {} {}", k, v);
    msg += fmt::format("{}{} at {}: no successful request (errors:{})", msg.empty() ? "" : "; ",
                       p.config.Label(), run.url, errs.empty() ? " none" : errs);
  }
  return msg.empty() ? Status::Ok() : Status::Unavailable(msg);
}

int RunAb(const BenchOptions& o, const GlobalOptions& g, const Prepared& p) {
  std::vector<bench::ServerSpec> specs;
  for (const auto& f : o.ab) {
    auto s = bench::LoadServerSpec(f, common::SelfExePath());
    if (!s.ok()) return ReportError(s.status());
    specs.push_back(std::move(*s));
  }
  std::error_code ec;
  std::filesystem::create_directories(o.ab_out, ec);
  if (ec)
    return ReportError(Status::InvalidArg(o.ab_out + ": cannot create directory: " + ec.message()));
  common::SigintScope sigint;  // the previous disposition is back when the runs end
  std::vector<RunResult> runs;
  for (const auto& spec : specs) {
    common::WriteStderrLine("info",
                            "truegreen bench: starting " + spec.name + " (" + spec.file + ")");
    auto server = bench::ServerProcess::Start(spec);
    if (!server.ok()) return ReportError(server.status());
    auto run = MeasureRun(o, p, (*server)->url(), g.Loader());
    (*server)->Stop();
    if (!run.ok()) return ReportError(run.status());
    std::string base = o.ab_out + "/" + spec.name;
    Status s = WriteOutput(base + ".json", common::WriteJson(bench::RunToJson(*run), 2) + "\n",
                           kJsonMarker);
    if (s.ok()) s = WriteOutput(base + ".html", bench::RunToHtml(*run), kHtmlMarker);
    if (!s.ok()) return ReportError(s);
    runs.push_back(std::move(*run));
    if (runs.back().interrupted) break;
  }
  std::vector<bench::RunComparison> cs;
  if (runs.size() == 2) {
    cs.push_back(bench::CompareRuns(runs[0], specs[0].name, runs[1], specs[1].name, p.gates));
  }
  std::string md = bench::ComparisonsToMarkdown(cs);
  Status s = WriteOutput(o.ab_out + "/compare.md", md, "## ");
  if (s.ok())
    s = WriteOutput(o.ab_out + "/compare.html", bench::ComparisonsToHtml(cs), kHtmlMarker);
  const Json cj = bench::ComparisonsToJson(cs);
  if (s.ok()) s = WriteOutput(o.ab_out + "/compare.json", common::WriteJson(cj, 2) + "\n", "[");
  if (!s.ok()) return ReportError(s);
  WarnIfUtf8Replaced(cj, o.ab_out + "/compare.json");
  // The per-run summaries are text: on stderr under --json only as JSON log lines.
  for (const auto& r : runs) {
    if (g.json) {
      std::string text = bench::RunToText(r);
      while (!text.empty() && text.back() == '\n') text.pop_back();
      common::WriteStderrLine("info", text);
    } else {
      std::fputs(bench::RunToText(r).c_str(), stdout);
    }
  }
  const bool complete = runs.size() == 2 && !runs.back().interrupted;
  Status none;
  for (const auto& r : runs) {
    Status n = NothingSucceeded(r);
    if (!n.ok()) none = none.ok() ? n : Status::Unavailable(none.message() + "; " + n.message());
  }
  if (complete && !none.ok() && g.json) {
    return ReportError(none, Json{{"comparisons", bench::ComparisonsToJson(cs)}});
  }
  if (g.json) WarnIfUtf8Replaced(cj, "standard output");
  std::fputs(g.json ? (common::WriteJson(cj, 2) + "\n").c_str() : md.c_str(), stdout);
  if (!complete) return common::ExitCodeFromOutcome(common::Outcome::kInterrupted);
  if (!none.ok()) return ReportError(none);
  bool failed = runs[0].SlosFailed() || runs[1].SlosFailed() || !cs[0].gate_failures.empty();
  return common::ExitCodeFromOutcome(failed ? common::Outcome::kPerformanceFailed
                                            : common::Outcome::kOk);
}

int RunBench(const BenchOptions& given, const GlobalOptions& g) {
  auto resolved = WithBenchFile(given);
  if (!resolved.ok()) return ReportError(resolved.status());
  const BenchOptions& o = *resolved;
  auto p = Prepare(o);
  if (!p.ok()) return ReportError(p.status());
  if (!o.ab.empty()) return RunAb(o, g, *p);
  RunResult run;
  {
    common::SigintScope sigint;
    auto r = MeasureRun(o, *p, o.url, g.Loader());
    if (!r.ok()) return ReportError(r.status());
    run = std::move(*r);
  }
  int rc = WriteRunOutputs(o, g, run, NothingSucceeded(run));
  if (rc >= 0) return rc;
  if (run.interrupted) return common::ExitCodeFromOutcome(common::Outcome::kInterrupted);
  return common::ExitCodeFromOutcome(run.SlosFailed() ? common::Outcome::kPerformanceFailed
                                                      : common::Outcome::kOk);
}

// A run file of the largest sweep is a few MB; this bounds the document built from one.
constexpr std::uint64_t kMaxRunFileBytes = 256ULL << 20;

int RunCompare(const CompareOptions& o, const GlobalOptions& g) {
  auto gates = bench::ParseGates(o.fail_on);
  if (!gates.ok()) return ReportError(gates.status());
  std::vector<RunResult> runs;
  for (const auto& f : o.files) {
    // Lists are capped while parsing: a file of 10^6 windows is refused before it is built.
    auto j = common::LoadJsonFile(
        f, kMaxRunFileBytes,
        common::JsonLimits{bench::kMaxRunListElements, "the limit per list in a bench run file"});
    if (!j.ok()) return ReportError(j.status());
    auto r = bench::RunFromJson(*j, f);
    if (!r.ok()) return ReportError(r.status());
    runs.push_back(std::move(*r));
  }
  std::vector<bench::RunComparison> cs;
  for (std::size_t i = 1; i < runs.size(); ++i) {
    cs.push_back(bench::CompareRuns(runs[0], o.files[0], runs[i], o.files[i], *gates));
  }
  Json j = bench::ComparisonsToJson(cs);
  Status s = WriteOutput(o.out, common::WriteJson(j, 2) + "\n", "[");
  if (s.ok()) s = WriteOutput(o.html, bench::ComparisonsToHtml(cs), kHtmlMarker);
  if (!s.ok()) return ReportError(s);
  if (!o.out.empty()) WarnIfUtf8Replaced(j, o.out);
  if (g.json) WarnIfUtf8Replaced(j, "standard output");
  std::fputs(
      g.json ? (common::WriteJson(j, 2) + "\n").c_str() : bench::ComparisonsToMarkdown(cs).c_str(),
      stdout);
  common::Outcome outcome = common::Outcome::kOk;
  for (const auto& c : cs) {
    if (!c.gate_failures.empty()) outcome = common::Outcome::kPerformanceFailed;
  }
  return common::ExitCodeFromOutcome(outcome);
}

void AddBenchFlags(CLI::App* c, BenchOptions& o) {
  c->add_option("--url", o.url, "Server base URL, http://HOST:PORT")->type_name("URL");
  c->add_option("--ab", o.ab, "A/B: two server files (YAML, docs/BENCH.md) instead of --url")
      ->expected(2)
      ->type_name("FILE FILE");
  c->add_option("--ab-out", o.ab_out, "A/B: directory for the runs and the comparison")
      ->type_name("DIR");
  c->add_option("--fail-on", o.fail_on, "A/B: regression gate, e.g. \"p95 +10%\" (repeatable)");
  c->add_option("--api", o.api,
                "openai | kserve | get (plain GET, generator self-test); default openai, unless "
                "the bench YAML names one")
      ->check(CLI::IsMember({"openai", "kserve", "get"}));
  c->add_option("--model", o.model, "Model name (required for kserve)");
  c->add_option("--concurrency", o.concurrency, "Connections per point, e.g. 1,8,16,32");
  c->add_option("--batch", o.batch, "Images per request (n), e.g. 1,2,4,8");
  c->add_option("--size", o.size, "Image sizes, e.g. 512x512,1024x1024");
  c->add_option("--steps", o.steps, "Denoising steps, e.g. 20,50");
  c->add_option("--scheduler", o.schedulers, "Schedulers to sweep (repeatable)");
  c->add_option("--rate", o.rate, "Open loop: total requests/s (0 = closed loop)")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--body", o.body_file,
                "JSON request body sent verbatim (generic KServe v2 models: JSON tensors)")
      ->type_name("FILE");
  c->add_option("--prompts", o.prompts, "Prompt set, JSONL {prompt, negative, seed}")
      ->type_name("FILE");
  c->add_option("--bench-file", o.bench_file,
                "YAML: slo: [\"p95<8s\", ...], and optionally api, model, body (what to "
                "benchmark; flags win); docs/BENCH.md")
      ->type_name("FILE");
  c->add_option("--slo", o.slos, "Threshold, e.g. p95<8s,images_per_min>40 (repeatable)");
  c->add_option("--warmup", o.warmup_s, "Warm-up seconds (excluded)")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--window", o.window_s, "Measurement window seconds")->check(CLI::PositiveNumber);
  c->add_option("--max-trials", o.max_trials, "Most windows per point")->check(CLI::Range(1, 1000));
  c->add_option("--stability", o.stability_pct, "Stability tolerance, percent")
      ->check(CLI::PositiveNumber);
  c->add_option("--timeout", o.timeout_s, "Per-request timeout seconds")
      ->check(CLI::PositiveNumber);
  c->add_option("--threads", o.threads,
                "Load-generator threads, each running one epoll loop over its share of the "
                "connections (as wrk -t)")
      ->check(CLI::Range(1, 256));
  c->add_option("--metrics-interval", o.metrics_interval_s,
                "Seconds between /metrics scrapes (0 = off)")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--out", o.out, "Write the JSON result here")->type_name("FILE");
  c->add_option("--csv", o.csv, "Write perf_analyzer-style CSV here")->type_name("FILE");
  c->add_option("--html", o.html, "Write the HTML report here")->type_name("FILE");
  c->add_flag("!--no-nvml", o.nvml, "Do not sample the local GPU through NVML");
  c->add_flag("--no-progress", o.no_progress, "No progress line even on a terminal");
}

}  // namespace

void RegisterBenchCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r) {
  auto bo = std::make_shared<BenchOptions>();
  CLI::App* bench = app.add_subcommand("bench", "Load-test a server (OpenAI images or KServe v2)");
  AddBenchFlags(bench, *bo);
  r.Add(bench, [bo, &g] { return RunBench(*bo, g); });

  auto co = std::make_shared<CompareOptions>();
  CLI::App* cmp = app.add_subcommand("compare", "Compare bench runs: ratios, tests, gates");
  cmp->add_option("runs", co->files, "Run files (baseline first)")
      ->required()
      ->expected(2, 64)
      ->type_name("FILE");
  cmp->add_option("--fail-on", co->fail_on, "Regression gate, e.g. \"p95 +10%\" (repeatable)");
  cmp->add_option("--out", co->out, "Write the JSON comparison here")->type_name("FILE");
  cmp->add_option("--html", co->html, "Write the HTML comparison here")->type_name("FILE");
  r.Add(cmp, [co, &g] { return RunCompare(*co, g); });
}

}  // namespace tg::cli
