#include "bench/compare.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "bench/svg.h"
#include "common/json_writer.h"
#include "policy/snapshot_diff.h"

namespace tg::bench {
namespace {

using common::Json;

double Ratio(double b, double a) { return a > 0 ? b / a : 0; }

Interval ThroughputInterval(const PointResult& a, const PointResult& b) {
  auto minmax = [](const PointResult& p) {
    double lo = 1e300, hi = 0;
    // The windows the point's result was merged from (the last up to 3).
    std::size_t n = std::min<std::size_t>(3, p.windows.size());
    for (std::size_t i = p.windows.size() - n; i < p.windows.size(); ++i) {
      lo = std::min(lo, p.windows[i].throughput);
      hi = std::max(hi, p.windows[i].throughput);
    }
    if (n == 0) lo = hi = p.Throughput();
    return std::make_pair(lo, hi);
  };
  auto [alo, ahi] = minmax(a);
  auto [blo, bhi] = minmax(b);
  if (alo <= 0 || ahi <= 0) return {};
  return {blo / ahi, bhi / alo};
}

std::optional<double> GateChange(const PointComparison& pc, const std::string& metric) {
  auto va = MetricValue(*pc.a, metric), vb = MetricValue(*pc.b, metric);
  if (!va || !vb || *va <= 0) return std::nullopt;
  return *vb / *va - 1;
}

void CheckGates(const std::vector<Gate>& gates, RunComparison& rc) {
  for (const auto& pc : rc.points) {
    if (!pc.matched) continue;
    for (const auto& g : gates) {
      auto change = GateChange(pc, g.metric);
      if (!change) {
        rc.gate_failures.push_back(
            fmt::format("{}: {}: not measured in both runs", pc.label, g.text));
        continue;
      }
      bool fail = g.max_change >= 0 ? *change > g.max_change : *change < g.max_change;
      if (fail) {
        rc.gate_failures.push_back(
            fmt::format("{}: {}: changed {:+.1f}%", pc.label, g.text, *change * 100));
      }
    }
  }
}

std::string Ci(const Interval& i) { return fmt::format("[{:.3f}, {:.3f}]", i.lo, i.hi); }

std::string Verdict(const PointComparison& pc) {
  const std::uint64_t na = pc.a->latency.count(), nb = pc.b->latency.count();
  if (std::min(na, nb) < MinSamplesForInterval(0.95)) {
    return fmt::format("too few samples (n = {}/{})", na, nb);
  }
  // z < 0: A's latencies rank lower than B's, so B is slower.
  return pc.mw.p_value >= 0.05 ? "~" : (pc.mw.z < 0 ? "slower" : "faster");
}

// Removes the members excluded wherever they appear, at every depth.
void StripExcluded(Json* j) {
  if (j->is_object()) {
    for (const auto& x : CapabilityDiffExclusions()) {
      if (!x.section) j->erase(x.name);
    }
  }
  if (j->is_object() || j->is_array()) {
    for (auto& e : *j) StripExcluded(&e);
  }
}

// One capability difference as table cells: change, path, A's value, B's value.
std::array<std::string, 4> DiffCells(const Json& d) {
  auto value = [&](const char* side) {
    return d.contains(side) ? common::WriteJson(d[side], -1, common::JsonNotice::kNone)
                            : std::string();
  };
  return {d.value("kind", std::string()), d.value("path", std::string()), value("before"),
          value("after")};
}

const Json& Differences(const RunComparison& c) {
  static const Json kNone = Json::array();
  if (!c.capability_diff.is_object()) return kNone;
  auto it = c.capability_diff.find("differences");
  return it != c.capability_diff.end() && it->is_array() ? *it : kNone;
}

std::string MarkdownCell(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += '\\';
    out += ch == '\n' ? ' ' : ch;
  }
  return out;
}

std::string CapabilityDiffMarkdown(const RunComparison& c) {
  if (c.capability_diff.is_null()) {
    return "Capability diff: not available (a run has no server snapshot)\n";
  }
  const Json& diffs = Differences(c);
  if (diffs.empty()) return "Capability diff: no capability differences\n";
  std::string md = fmt::format(
      "Capability diff ({} -> {}):\n\n| change | path | {} | {} |\n"
      "|---|---|---|---|\n",
      MarkdownCell(c.a_name), MarkdownCell(c.b_name), MarkdownCell(c.a_name),
      MarkdownCell(c.b_name));
  for (const auto& d : diffs) {
    auto cells = DiffCells(d);
    md += "|";
    for (const auto& cell : cells) md += " " + MarkdownCell(cell) + " |";
    md += "\n";
  }
  return md;
}

std::string CapabilityDiffHtml(const RunComparison& c) {
  std::string h = "<h3>Capability diff</h3>\n";
  if (c.capability_diff.is_null()) {
    return h + "<p id=\"capability-diff\">not available (a run has no server snapshot)</p>\n";
  }
  const Json& diffs = Differences(c);
  if (diffs.empty()) return h + "<p id=\"capability-diff\">no capability differences</p>\n";
  h += "<table id=\"capability-diff\"><tr><th>change</th><th>path</th><th>" + HtmlEscape(c.a_name) +
       "</th><th>" + HtmlEscape(c.b_name) + "</th></tr>\n";
  for (const auto& d : diffs) {
    h += "<tr>";
    for (const auto& cell : DiffCells(d)) h += "<td class=\"l\">" + HtmlEscape(cell) + "</td>";
    h += "</tr>\n";
  }
  return h + "</table>\n";
}

std::string GatesLine(const RunComparison& c) {
  if (!c.gates_given) return "Regression gates: none given";
  return c.gate_failures.empty() ? "Regression gates: pass" : "Regression gates FAILED";
}

}  // namespace

const std::vector<CapabilityExclusion>& CapabilityDiffExclusions() {
  static const std::vector<CapabilityExclusion> kList = {
      {"canary", true, "the timed canary's latency samples, percentiles and when it ran"},
      {"background_canary", true, "the same, for the latest background canary"},
      {"taken_at", false, "when the snapshot was taken"},
      {"at_unix", false, "when a canary ran"},
      {"ms", false, "a startup step's duration"},
      {"total_ms", false, "the startup chain's duration"},
      {"wall_ms", false, "the op canary's duration"},
      {"create_ms", false, "a session's creation time"},
      {"samples_ms", false, "latency samples"},
      {"p50_ms", false, "a latency percentile"},
      {"p95_ms", false, "a latency percentile"},
      {"from_cache", false, "whether this start found the op canary's verdict cached"},
      {"children", false, "how many child processes the op canary started this time"},
      {"utilization", false, "a live NVML reading"},
      {"memory_used_bytes", false, "a live NVML reading"},
      {"pcie_tx_bytes_per_second", false, "a live NVML reading"},
      {"pcie_rx_bytes_per_second", false, "a live NVML reading"},
      {"power_watts", false, "a live NVML reading"},
  };
  return kList;
}

Json CapabilityView(const Json& capabilities) {
  Json view = capabilities;
  if (view.is_object()) {
    for (const auto& x : CapabilityDiffExclusions()) {
      if (x.section) view.erase(x.name);
    }
  }
  StripExcluded(&view);
  return view;
}

RunComparison CompareRuns(const RunResult& a, const std::string& a_name, const RunResult& b,
                          const std::string& b_name, const std::vector<Gate>& gates) {
  RunComparison rc;
  rc.a_name = a_name;
  rc.b_name = b_name;
  rc.prompt_sets_differ = a.prompt_set_sha256 != b.prompt_set_sha256;
  for (const auto& pa : a.points) {
    PointComparison pc;
    pc.label = pa.config.Label();
    pc.a = &pa;
    auto it = std::find_if(b.points.begin(), b.points.end(),
                           [&](const PointResult& pb) { return pb.config.Label() == pc.label; });
    if (it != b.points.end()) {
      const PointResult& pb = *it;
      pc.b = &pb;
      pc.matched = true;
      pc.throughput_ratio = Ratio(pb.Throughput(), pa.Throughput());
      pc.throughput_ci = ThroughputInterval(pa, pb);
      pc.p50_ratio = Ratio(pb.latency.ValueAtPercentile(50), pa.latency.ValueAtPercentile(50));
      pc.p95_ratio = Ratio(pb.latency.ValueAtPercentile(95), pa.latency.ValueAtPercentile(95));
      pc.p50_ci = QuantileRatioInterval(pa.latency, pb.latency, 0.50);
      pc.p95_ci = QuantileRatioInterval(pa.latency, pb.latency, 0.95);
      pc.mw = MannWhitneyU(pa.latency, pb.latency);
      pc.ks = KsDistance(pa.latency, pb.latency);
      pc.overlap = OverlapCoefficient(pa.latency, pb.latency);
      pc.verdict = Verdict(pc);
    }
    rc.points.push_back(std::move(pc));
  }
  if (!a.server_capabilities.is_null() && !b.server_capabilities.is_null()) {
    // The views are alive while the entries (which point into them) become JSON.
    const Json va = CapabilityView(a.server_capabilities);
    const Json vb = CapabilityView(b.server_capabilities);
    rc.capability_diff = policy::DiffToJson(policy::DiffJson(va, vb));
  }
  rc.gates_given = !gates.empty();
  CheckGates(gates, rc);
  return rc;
}

std::string ComparisonsToMarkdown(const std::vector<RunComparison>& cs) {
  std::string md;
  for (const auto& c : cs) {
    md += fmt::format("## {} -> {}\n\n", c.a_name, c.b_name);
    if (c.prompt_sets_differ) md += "**Warning: the runs used different prompt sets.**\n\n";
    md +=
        "| point | throughput B/A [95% CI] | P50 B/A [95% CI] | P95 B/A [95% CI] | "
        "Mann-Whitney p | KS | overlap | verdict |\n|---|---|---|---|---|---|---|---|\n";
    for (const auto& p : c.points) {
      if (!p.matched) {
        md += fmt::format("| {} | only in {} | | | | | | |\n", p.label, c.a_name);
        continue;
      }
      md += fmt::format(
          "| {} | {:.3f} {} | {:.3f} {} | {:.3f} {} | {:.3g} | {:.3f} | {:.3f} | {} |\n", p.label,
          p.throughput_ratio, Ci(p.throughput_ci), p.p50_ratio, Ci(p.p50_ci), p.p95_ratio,
          Ci(p.p95_ci), p.mw.p_value, p.ks, p.overlap, p.verdict);
    }
    md += "\n" + CapabilityDiffMarkdown(c);
    if (c.gate_failures.empty()) {
      md += "\n" + GatesLine(c) + "\n";
    } else {
      md += "\n**Regression gates FAILED:**\n";
      for (const auto& f : c.gate_failures) md += "- " + f + "\n";
    }
    md += "\n";
  }
  return md;
}

Json ComparisonsToJson(const std::vector<RunComparison>& cs) {
  Json out = Json::array();
  for (const auto& c : cs) {
    Json pts = Json::array();
    for (const auto& p : c.points) {
      Json j = {{"label", p.label}, {"matched", p.matched}};
      if (p.matched) {
        j.update({{"throughput_ratio", p.throughput_ratio},
                  {"throughput_ci95", {p.throughput_ci.lo, p.throughput_ci.hi}},
                  {"p50_ratio", p.p50_ratio},
                  {"p50_ci95", {p.p50_ci.lo, p.p50_ci.hi}},
                  {"p95_ratio", p.p95_ratio},
                  {"p95_ci95", {p.p95_ci.lo, p.p95_ci.hi}},
                  {"mann_whitney_u", p.mw.u},
                  {"mann_whitney_p", p.mw.p_value},
                  {"ks_distance", p.ks},
                  {"overlap", p.overlap},
                  {"verdict", p.verdict}});
      }
      pts.push_back(std::move(j));
    }
    out.push_back({{"baseline", c.a_name},
                   {"candidate", c.b_name},
                   {"prompt_sets_differ", c.prompt_sets_differ},
                   {"points", pts},
                   {"capability_diff", c.capability_diff},
                   {"gates", !c.gates_given            ? "none given"
                             : c.gate_failures.empty() ? "pass"
                                                       : "failed"},
                   {"gate_failures", c.gate_failures},
                   {"gates_pass", c.gate_failures.empty()}});
  }
  return out;
}

std::string ComparisonsToHtml(const std::vector<RunComparison>& cs) {
  std::string h = HtmlHead("truegreen compare");
  for (const auto& c : cs) {
    h += "<h2>" + HtmlEscape(c.a_name) + " &rarr; " + HtmlEscape(c.b_name) + "</h2>\n";
    h += fmt::format("<p class=\"{}\">{}</p>\n",
                     c.gate_failures.empty() ? (c.gates_given ? "pass" : "l") : "fail",
                     GatesLine(c));
    if (!c.gate_failures.empty()) h += "<ul>";
    for (const auto& f : c.gate_failures) h += "<li class=\"fail\">" + HtmlEscape(f) + "</li>";
    if (!c.gate_failures.empty()) h += "</ul>\n";
    h += "<table><tr><th>point</th><th>throughput B/A</th><th>P50 B/A</th><th>P95 B/A</th>"
         "<th>Mann-Whitney p</th><th>KS</th><th>overlap</th><th>verdict</th></tr>\n";
    for (const auto& p : c.points) {
      if (!p.matched) continue;
      h += fmt::format(
          "<tr><td class=\"l\">{}</td><td>{:.3f} {}</td><td>{:.3f} {}</td>"
          "<td>{:.3f} {}</td><td>{:.3g}</td><td>{:.3f}</td><td>{:.3f}</td><td>{}</td></tr>\n",
          HtmlEscape(p.label), p.throughput_ratio, Ci(p.throughput_ci), p.p50_ratio, Ci(p.p50_ci),
          p.p95_ratio, Ci(p.p95_ci), p.mw.p_value, p.ks, p.overlap, p.verdict);
    }
    h += "</table>\n";
    for (const auto& p : c.points) {
      if (!p.matched) continue;
      h += LinePlot({"Latency CDF " + p.label, "latency (ms, log)", "fraction", true, {}, true},
                    {CdfSeries(c.a_name, p.a->latency), CdfSeries(c.b_name, p.b->latency)}) +
           "\n";
    }
    h += CapabilityDiffHtml(c);
  }
  return h + HtmlTail();
}

}  // namespace tg::bench
