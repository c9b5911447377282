#include "bench/result.h"

#include <fmt/format.h>

#include <cmath>

#include "common/json_writer.h"

namespace tg::bench {
namespace {

using common::Json;
using common::Status;

Json OptionalToJson(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

std::optional<double> OptionalFromJson(const Json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<double>();
}

Json PointToJson(const PointResult& p) {
  Json errors = Json::object();
  for (const auto& [k, v] : p.errors) errors[k] = v;
  Json windows = Json::array();
  for (const auto& w : p.windows) {
    windows.push_back({{"throughput", w.throughput}, {"latency_mean_us", w.latency_us}});
  }
  Json series = Json::array();
  for (const auto& [t, u] : p.gpu.utilization_series) series.push_back({t, u});
  return {
      {"label", p.config.Label()},
      {"concurrency", p.config.concurrency},
      {"batch", p.config.batch},
      {"size", p.config.size},
      {"steps", p.config.steps},
      {"scheduler", p.config.scheduler},
      {"rate", p.config.rate},
      {"mode", p.open_loop ? "open_loop" : "closed_loop"},
      {"ok", p.ok},
      {"errors", errors},
      {"error_rate", p.ErrorRate()},
      {"measured_s", p.measured_s},
      {"client_cpu_us_per_request", p.client_cpu_us_per_request},
      {"throughput_rps", p.Throughput()},
      {"images_per_min", p.ImagesPerMin()},
      {"latency_summary", PercentilesToJson(Summarize(p.latency))},
      {"service_summary", PercentilesToJson(Summarize(p.service))},
      {"latency", p.latency.ToJson()},
      {"service", p.service.ToJson()},
      {"windows", windows},
      {"stable", p.stable},
      {"trials", p.trials},
      {"stability", p.stable ? "stable" : "unstable"},
      {"gpu",
       {{"source", p.gpu.source},
        {"utilization", OptionalToJson(p.gpu.utilization)},
        {"memory_used_bytes", OptionalToJson(p.gpu.memory_used_bytes)},
        {"pcie_tx_bytes_per_s", OptionalToJson(p.gpu.pcie_tx_bytes_per_s)},
        {"pcie_rx_bytes_per_s", OptionalToJson(p.gpu.pcie_rx_bytes_per_s)},
        {"queue_us_per_request", OptionalToJson(p.gpu.queue_us_per_req)},
        {"compute_us_per_request", OptionalToJson(p.gpu.compute_us_per_req)},
        {"gates_ok", p.gpu.gates_ok ? Json(*p.gpu.gates_ok) : Json(nullptr)},
        {"utilization_series", series}}},
      {"slo_failures", p.slo_failures},
      {"slo_pass", p.slo_failures.empty()},
  };
}

// nlohmann's get<int>() wraps 2^40 and get<std::uint64_t>() truncates 2.5: a count or a sweep
// value must be a JSON integer in its range, found as written otherwise.
Status CheckInteger(const Json& v, const std::string& field, std::uint64_t lo, std::uint64_t hi) {
  // A parsed positive integer is number_unsigned, one built from an int number_integer.
  const bool in_range =
      v.is_number_unsigned() ? v.get<std::uint64_t>() >= lo && v.get<std::uint64_t>() <= hi
      : v.is_number_integer()
          ? v.get<std::int64_t>() >= 0 && static_cast<std::uint64_t>(v.get<std::int64_t>()) >= lo &&
                static_cast<std::uint64_t>(v.get<std::int64_t>()) <= hi
          : false;
  if (in_range) return Status::Ok();
  return Status::InvalidArg(fmt::format("{}: found {}; required an integer in {}..{}", field,
                                        common::WriteJson(v, -1, common::JsonNotice::kNone), lo,
                                        hi));
}

Status CheckFiniteNonNegative(const Json& v, const std::string& field) {
  if (v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0) return Status::Ok();
  return Status::InvalidArg(fmt::format("{}: found {}; required a finite number >= 0", field,
                                        common::WriteJson(v, -1, common::JsonNotice::kNone)));
}

// The fields of a point that name the sweep and count what happened, checked before reading.
Status CheckPointNumbers(const Json& j, const std::string& where) {
  constexpr std::uint64_t kCountMax = std::uint64_t{1} << 53;  // exact in a double
  for (const char* key : {"concurrency", "batch", "steps"}) {
    if (j.contains(key)) TG_RETURN_IF_ERROR(CheckInteger(j[key], where + "." + key, 1, 100000));
  }
  if (j.contains("ok")) TG_RETURN_IF_ERROR(CheckInteger(j["ok"], where + ".ok", 0, kCountMax));
  if (j.contains("errors") && j["errors"].is_object()) {
    for (const auto& [k, v] : j["errors"].items()) {
      TG_RETURN_IF_ERROR(CheckInteger(v, where + ".errors." + k, 0, kCountMax));
    }
  }
  if (j.contains("trials")) {
    TG_RETURN_IF_ERROR(CheckInteger(j["trials"], where + ".trials", 0, kMaxWindowsPerPoint));
  }
  for (const char* key : {"rate", "measured_s", "client_cpu_us_per_request"}) {
    if (j.contains(key)) TG_RETURN_IF_ERROR(CheckFiniteNonNegative(j[key], where + "." + key));
  }
  return Status::Ok();
}

common::Result<PointResult> PointFromJson(const Json& j, const std::string& where) {
  PointResult p;
  if (!j.is_object()) return Status::InvalidArg(where + ": required an object (one sweep point)");
  TG_RETURN_IF_ERROR(CheckPointNumbers(j, where));
  try {
    p.config.concurrency = j.at("concurrency").get<int>();
    p.config.batch = j.at("batch").get<int>();
    p.config.size = j.at("size").get<std::string>();
    p.config.steps = j.at("steps").get<int>();
    p.config.scheduler = j.value("scheduler", "");
    p.config.rate = j.value("rate", 0.0);
    p.open_loop = j.value("mode", "") == "open_loop";
    p.ok = j.at("ok").get<std::uint64_t>();
    for (const auto& [k, v] : j.at("errors").items()) p.errors[k] = v.get<std::uint64_t>();
    p.measured_s = j.at("measured_s").get<double>();
    p.client_cpu_us_per_request = j.value("client_cpu_us_per_request", 0.0);
    const Json windows = j.value("windows", Json::array());
    if (windows.size() > kMaxWindowsPerPoint) {
      return Status::InvalidArg(
          fmt::format("{}.windows: {} windows; a point has at most {} (bench --max-trials 1..1000)",
                      where, windows.size(), kMaxWindowsPerPoint));
    }
    for (const auto& w : windows) {
      p.windows.push_back(
          {w.at("throughput").get<double>(), w.at("latency_mean_us").get<double>()});
    }
    p.stable = j.value("stable", false);
    p.trials = j.value("trials", 0);
    const Json& g = j.value("gpu", Json::object());
    p.gpu.source = g.value("source", "");
    p.gpu.utilization = OptionalFromJson(g, "utilization");
    p.gpu.memory_used_bytes = OptionalFromJson(g, "memory_used_bytes");
    p.gpu.pcie_tx_bytes_per_s = OptionalFromJson(g, "pcie_tx_bytes_per_s");
    p.gpu.pcie_rx_bytes_per_s = OptionalFromJson(g, "pcie_rx_bytes_per_s");
    p.gpu.queue_us_per_req = OptionalFromJson(g, "queue_us_per_request");
    p.gpu.compute_us_per_req = OptionalFromJson(g, "compute_us_per_request");
    if (g.contains("gates_ok") && g["gates_ok"].is_boolean())
      p.gpu.gates_ok = g["gates_ok"].get<bool>();
    for (const auto& s : g.value("utilization_series", Json::array())) {
      p.gpu.utilization_series.emplace_back(s.at(0).get<double>(), s.at(1).get<double>());
    }
    p.slo_failures = j.value("slo_failures", std::vector<std::string>{});
  } catch (const Json::exception& e) {
    return Status::InvalidArg(fmt::format("{}: {}", where, e.what()));
  }
  TG_ASSIGN_OR_RETURN(p.latency,
                      Histogram::FromJson(j.value("latency", Json()), where + ".latency"));
  TG_ASSIGN_OR_RETURN(p.service,
                      Histogram::FromJson(j.value("service", Json()), where + ".service"));
  return p;
}

}  // namespace

std::string PointConfig::Label() const {
  std::string s = fmt::format("c{} b{} {} s{}", concurrency, batch, size, steps);
  if (!scheduler.empty()) s += " " + scheduler;
  if (rate > 0) s += fmt::format(" r{:g}/s", rate);
  return s;
}

std::uint64_t PointResult::ErrorCount() const {
  std::uint64_t n = 0;
  for (const auto& [k, v] : errors) n += v;
  return n;
}

double PointResult::Throughput() const {
  return measured_s > 0 ? static_cast<double>(ok) / measured_s : 0;
}

double PointResult::ImagesPerMin() const { return Throughput() * config.batch * 60.0; }

double PointResult::ErrorRate() const {
  std::uint64_t all = ok + ErrorCount();
  return all == 0 ? 0 : static_cast<double>(ErrorCount()) / static_cast<double>(all);
}

bool RunResult::SlosFailed() const {
  for (const auto& p : points) {
    if (!p.slo_failures.empty()) return true;
  }
  return false;
}

Json RunToJson(const RunResult& r) {
  Json points = Json::array();
  for (const auto& p : r.points) points.push_back(PointToJson(p));
  return {{"format", "truegreen-bench/1"},
          {"tool_version", r.tool_version},
          {"url", r.url},
          {"api", r.api},
          {"model", r.model},
          {"prompt_set", {{"path", r.prompt_set_path}, {"sha256", r.prompt_set_sha256}}},
          {"started_at", r.started_at},
          {"interrupted", r.interrupted},
          {"environment", r.environment},
          {"server_capabilities", r.server_capabilities},
          {"slos", r.slos},
          {"slo_pass", !r.SlosFailed()},
          {"points", points}};
}

common::Result<RunResult> RunFromJson(const Json& j, const std::string& path) {
  if (!j.is_object() || j.value("format", "") != "truegreen-bench/1") {
    return Status::InvalidArg(path +
                              ": format: expected \"truegreen-bench/1\" (a file written by "
                              "truegreen bench --out)");
  }
  RunResult r;
  r.tool_version = j.value("tool_version", "");
  r.url = j.value("url", "");
  r.api = j.value("api", "");
  r.model = j.value("model", "");
  if (j.contains("prompt_set") && j["prompt_set"].is_object()) {
    r.prompt_set_path = j["prompt_set"].value("path", "");
    r.prompt_set_sha256 = j["prompt_set"].value("sha256", "");
  }
  r.started_at = j.value("started_at", "");
  r.interrupted = j.value("interrupted", false);
  r.environment = j.value("environment", Json());
  r.server_capabilities = j.value("server_capabilities", Json());
  if (!j.contains("points") || !j["points"].is_array()) {
    return Status::InvalidArg(path + ": points: required array");
  }
  if (j["points"].size() > kMaxRunPoints) {
    return Status::InvalidArg(fmt::format("{}: points: {} points; a run has at most {}", path,
                                          j["points"].size(), kMaxRunPoints));
  }
  for (std::size_t i = 0; i < j["points"].size(); ++i) {
    TG_ASSIGN_OR_RETURN(PointResult p,
                        PointFromJson(j["points"][i], fmt::format("{}: points[{}]", path, i)));
    r.points.push_back(std::move(p));
  }
  return r;
}

}  // namespace tg::bench
