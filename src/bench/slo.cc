#include "bench/slo.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "common/strings.h"

namespace tg::bench {
namespace {

using common::Status;

const std::set<std::string>& LatencyMetrics() {
  static const std::set<std::string> k = {"p50", "p90", "p95", "p99", "p99.9", "max", "mean"};
  return k;
}
const std::set<std::string>& OtherMetrics() {
  static const std::set<std::string> k = {"throughput", "images_per_min", "gpu_util", "errors"};
  return k;
}

// Ranges of a threshold's value: a day of latency (bench --timeout is at most an hour), and a
// billion of anything counted per second or minute.
constexpr double kMaxLatencyThresholdUs = 86400e6;
constexpr double kMaxRateThreshold = 1e9;
// The largest regression a gate may allow, in percent.
constexpr double kMaxGatePercent = 1000;

// common::Trim as an owned string (the parsers below keep the pieces).

const char* kMetricList =
    "p50|p90|p95|p99|p99.9|max|mean|throughput|images_per_min|gpu_util|errors";

// Parses "<number><unit>" into a value in the metric's canonical unit.
common::Result<double> ParseValue(const std::string& expr, const std::string& metric,
                                  const std::string& rest) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
  if (ec != std::errc() || ptr == rest.data() || v < 0 || !std::isfinite(v)) {
    return Status::InvalidArg(
        fmt::format("threshold \"{}\": expected a finite non-negative number after "
                    "the operator, found \"{}\" (NaN and infinity are refused)",
                    expr, rest));
  }
  std::string unit(common::Trim(std::string(ptr, rest.data() + rest.size())));
  if (LatencyMetrics().count(metric) != 0) {
    const double us = unit == "us" ? v : unit == "ms" ? v * 1e3 : unit == "s" ? v * 1e6 : -1;
    if (us < 0) {
      return Status::InvalidArg(
          fmt::format("threshold \"{}\": latency needs a unit us|ms|s, found \"{}\"", expr, unit));
    }
    if (us > kMaxLatencyThresholdUs) {
      return Status::InvalidArg(
          fmt::format("threshold \"{}\": latency {} is outside the range 0..86400 s", expr, rest));
    }
    return us;
  }
  if (v > kMaxRateThreshold) {
    return Status::InvalidArg(
        fmt::format("threshold \"{}\": {} {} is outside the range 0..1e9", expr, metric, rest));
  }
  if (metric == "gpu_util" || metric == "errors") {
    if (unit == "%")
      v /= 100.0;
    else if (!unit.empty()) {
      return Status::InvalidArg(fmt::format(
          "threshold \"{}\": {} is a fraction (0.6) or a percentage (60%), found unit \"{}\"", expr,
          metric, unit));
    }
    if (v > 1.0) {
      return Status::InvalidArg(fmt::format(
          "threshold \"{}\": {} must be within 0..1 (or 0..100%), found {}", expr, metric, v));
    }
    return v;
  }
  if (!unit.empty()) {
    return Status::InvalidArg(
        fmt::format("threshold \"{}\": {} takes no unit, found \"{}\"", expr, metric, unit));
  }
  return v;
}

}  // namespace

common::Result<Threshold> ParseThreshold(const std::string& text) {
  std::string expr(common::Trim(text));
  std::size_t op_pos = expr.find_first_of("<>");
  if (op_pos == std::string::npos) {
    return Status::InvalidArg(fmt::format(
        "threshold \"{}\": expected <metric><op><value> with op one of < <= > >=", expr));
  }
  Threshold t;
  t.text = expr;
  t.metric = common::Trim(expr.substr(0, op_pos));
  if (LatencyMetrics().count(t.metric) == 0 && OtherMetrics().count(t.metric) == 0) {
    return Status::InvalidArg(fmt::format("threshold \"{}\": unknown metric \"{}\", expected {}",
                                          expr, t.metric, kMetricList));
  }
  std::size_t value_pos = op_pos + 1;
  t.op = expr.substr(op_pos, 1);
  if (value_pos < expr.size() && expr[value_pos] == '=') {
    t.op += "=";
    ++value_pos;
  }
  TG_ASSIGN_OR_RETURN(
      t.value, ParseValue(expr, t.metric, std::string(common::Trim(expr.substr(value_pos)))));
  return t;
}

common::Result<std::vector<Threshold>> ParseThresholds(const std::vector<std::string>& texts) {
  std::vector<Threshold> out;
  std::set<std::string> seen;
  for (const auto& text : texts) {
    for (const std::string& part : common::Split(text, ',', common::SplitMode::kKeepEmpty)) {
      if (common::Trim(part).empty()) {
        return Status::InvalidArg(fmt::format("threshold list \"{}\": empty entry", text));
      }
      TG_ASSIGN_OR_RETURN(Threshold t, ParseThreshold(part));
      // Two bounds on one metric in one direction: one of them is dead or they contradict.
      if (!seen.insert(t.metric + t.op.substr(0, 1)).second) {
        return Status::InvalidArg(fmt::format(
            "threshold \"{}\": {} {} is given twice (one bound per metric and direction)", t.text,
            t.metric, t.op.substr(0, 1)));
      }
      out.push_back(std::move(t));
    }
  }
  return out;
}

std::optional<double> MetricValue(const PointResult& p, const std::string& metric) {
  if (LatencyMetrics().count(metric) != 0) {
    if (p.latency.count() == 0) return std::nullopt;
    if (metric == "max") return static_cast<double>(p.latency.max());
    if (metric == "mean") return p.latency.Mean();
    double pct = std::stod(metric.substr(1));
    return static_cast<double>(p.latency.ValueAtPercentile(pct));
  }
  if (metric == "throughput") return p.Throughput();
  if (metric == "images_per_min") return p.ImagesPerMin();
  if (metric == "errors") {
    if (p.ok + p.ErrorCount() == 0) return std::nullopt;
    return p.ErrorRate();
  }
  if (metric == "gpu_util") return p.gpu.utilization;
  return std::nullopt;
}

void EvaluateSlos(const std::vector<Threshold>& thresholds, PointResult& p) {
  p.slo_failures.clear();
  for (const auto& t : thresholds) {
    std::optional<double> v = MetricValue(p, t.metric);
    if (!v) {
      p.slo_failures.push_back(t.text + ": not measured");
      continue;
    }
    bool pass = t.op == "<"    ? *v < t.value
                : t.op == "<=" ? *v <= t.value
                : t.op == ">"  ? *v > t.value
                               : *v >= t.value;
    if (!pass) p.slo_failures.push_back(fmt::format("{}: measured {:.6g}", t.text, *v));
  }
}

common::Result<Gate> ParseGate(const std::string& text) {
  std::string expr(common::Trim(text));
  std::size_t sign = expr.find_first_of("+-");
  auto bad = [&](const std::string& why) {
    return Status::InvalidArg(fmt::format(
        "--fail-on \"{}\": {}; expected <metric> +N% or -N%, e.g. \"p95 +10%\"", expr, why));
  };
  if (sign == std::string::npos) return bad("no +N% or -N% change");
  Gate g;
  g.text = expr;
  g.metric = common::Trim(expr.substr(0, sign));
  if (LatencyMetrics().count(g.metric) == 0 && OtherMetrics().count(g.metric) == 0) {
    return bad(fmt::format("unknown metric \"{}\"", g.metric));
  }
  std::string num(common::Trim(expr.substr(sign + 1)));
  if (num.empty() || num.back() != '%') return bad("the change must end with %");
  num.pop_back();
  double v = 0;
  auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (ec != std::errc() || ptr != num.data() + num.size() || v < 0 || !std::isfinite(v)) {
    return bad(fmt::format("\"{}\" is not a finite non-negative number", num));
  }
  if (v > kMaxGatePercent) return bad(fmt::format("{}% is outside the range 0..1000%", num));
  g.max_change = (expr[sign] == '+' ? 1 : -1) * v / 100.0;
  return g;
}

common::Result<std::vector<Gate>> ParseGates(const std::vector<std::string>& texts) {
  std::vector<Gate> out;
  std::set<std::string> seen;
  for (const auto& t : texts) {
    TG_ASSIGN_OR_RETURN(Gate g, ParseGate(t));
    if (!seen.insert(g.metric + (g.max_change < 0 ? "-" : "+")).second) {
      return Status::InvalidArg(fmt::format(
          "--fail-on \"{}\": a gate on {} in this direction is given twice", g.text, g.metric));
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace tg::bench
