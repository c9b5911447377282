#include "bench/report.h"

#include <fmt/format.h>

#include "bench/svg.h"
#include "common/json_writer.h"

namespace tg::bench {
namespace {

std::string Opt(const std::optional<double>& v, const char* f = "{:.0f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : "";
}

std::string CsvCell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void Flatten(const common::Json& j, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>& out) {
  if (out.size() >= 2000) return;  // a report table, not a dump
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) Flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) Flatten(j[i], fmt::format("{}[{}]", prefix, i), out);
  } else {
    out.emplace_back(prefix, j.is_string() ? j.get<std::string>()
                                           : common::WriteJson(j, -1, common::JsonNotice::kNone));
  }
}

std::string PointsTable(const RunResult& r) {
  std::string h =
      "<table id=\"points\"><tr><th>point</th><th>mode</th><th>req/s</th><th>images/min</th>"
      "<th>P50 ms</th><th>P90 ms</th><th>P95 ms</th><th>P99 ms</th><th>P99.9 ms</th><th>max ms</th>"
      "<th>mean ms</th><th>errors</th><th>GPU util</th><th>stability</th><th>SLO</th></tr>\n";
  for (const auto& p : r.points) {
    Percentiles s = Summarize(p.latency);
    std::string errs;
    for (const auto& [k, v] : p.errors) errs += fmt::format("{} {}; ", k, v);
    std::string slo = p.slo_failures.empty() ? "<span class=\"pass\">pass</span>" : "";
    for (const auto& f : p.slo_failures)
      slo += "<span class=\"fail\">" + HtmlEscape(f) + "</span><br>";
    h += fmt::format(
        "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.3f}</td><td>{:.2f}</td><td>{:.3f}</td>"
        "<td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td>"
        "<td class=\"l\">{}</td><td>{}</td><td>{} ({} windows)</td><td class=\"l\">{}</td></tr>\n",
        HtmlEscape(p.config.Label()), p.open_loop ? "open loop" : "closed loop", p.Throughput(),
        p.ImagesPerMin(), s.p50 / 1e3, s.p90 / 1e3, s.p95 / 1e3, s.p99 / 1e3, s.p999 / 1e3,
        s.max / 1e3, s.mean / 1e3, HtmlEscape(errs.empty() ? "0" : errs),
        p.gpu.utilization ? fmt::format("{:.2f}", *p.gpu.utilization) : "not measured",
        p.stable ? "stable" : "unstable", p.trials, slo);
  }
  return h + "</table>\n";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> FlattenJson(const common::Json& j) {
  std::vector<std::pair<std::string, std::string>> out;
  Flatten(j, "", out);
  return out;
}

std::string RunToCsv(const RunResult& r) {
  std::string out =
      "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
      "Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,"
      "p90 latency,p95 latency,p99 latency,Avg latency,Batch,Size,Steps,Scheduler,Mode,"
      "Images/Min,Errors,Stable,Trials,GPU Util,SLO\n";
  for (const auto& p : r.points) {
    Percentiles s = Summarize(p.latency);
    double service = p.service.Mean();
    std::optional<double> network;
    if (p.gpu.queue_us_per_req && p.gpu.compute_us_per_req && p.service.count() > 0) {
      network = std::max(0.0, service - *p.gpu.queue_us_per_req - *p.gpu.compute_us_per_req);
    }
    std::string slo = p.slo_failures.empty() ? "pass" : "FAIL: ";
    for (const auto& f : p.slo_failures) slo += f + "; ";
    out += fmt::format(
        "{},{:.4f},,{},{},,{},,,{},{},{},{},{:.0f},{},{},{},{},{},{:.3f},{},{},{},{},{}\n",
        p.config.concurrency, p.Throughput() * p.config.batch, Opt(network),
        Opt(p.gpu.queue_us_per_req), Opt(p.gpu.compute_us_per_req), s.p50, s.p90, s.p95, s.p99,
        s.mean, p.config.batch, p.config.size, p.config.steps, CsvCell(p.config.scheduler),
        p.open_loop ? "open" : "closed", p.ImagesPerMin(), p.ErrorCount(), p.stable ? "yes" : "no",
        p.trials, Opt(p.gpu.utilization, "{:.3f}"), CsvCell(slo));
  }
  return out;
}

std::string RunToText(const RunResult& r) {
  std::string out = fmt::format("truegreen bench  {}  api={}  prompt set sha256={}{}\n", r.url,
                                r.api, r.prompt_set_sha256, r.interrupted ? "  (INTERRUPTED)" : "");
  out +=
      fmt::format("{:<28} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7} {:>8}  {}\n", "point", "req/s",
                  "img/min", "P50 ms", "P95 ms", "P99 ms", "max ms", "errors", "gpu", "verdict");
  for (const auto& p : r.points) {
    Percentiles s = Summarize(p.latency);
    std::string verdict =
        std::string(p.stable ? "stable" : "UNSTABLE") + fmt::format(" after {} windows", p.trials);
    verdict += p.slo_failures.empty() ? "; SLO pass" : "; SLO FAIL";
    out += fmt::format(
        "{:<28} {:>9.3f} {:>10.2f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>7} {:>8}  {}\n",
        p.config.Label() + (p.open_loop ? " open" : ""), p.Throughput(), p.ImagesPerMin(),
        s.p50 / 1e3, s.p95 / 1e3, s.p99 / 1e3, s.max / 1e3, p.ErrorCount(),
        Opt(p.gpu.utilization, "{:.2f}").empty() ? "-" : Opt(p.gpu.utilization, "{:.2f}"), verdict);
    for (const auto& f : p.slo_failures) out += "    SLO failed: " + f + "\n";
    if (p.client_cpu_us_per_request > 0) {
      out += fmt::format("    generator CPU: {:.2f} us per request (user+sys, measured windows)\n",
                         p.client_cpu_us_per_request);
    }
  }
  return out;
}

namespace {

std::string Str(const common::Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

}  // namespace

// The server's /v1/capabilities as a person reads it: the verdict and its causes, then one row
// per admission check (result, what was found and required, the cause). The full JSON stays in
// the --json result.
std::string CapabilitiesHtml(const common::Json& caps) {
  if (caps.is_null()) {
    return "<p>Not available (GET /v1/capabilities failed or was not served).</p>\n";
  }
  std::string h =
      "<p id=\"capabilities-verdict\">Verdict: <b>" + HtmlEscape(Str(caps, "verdict")) + "</b>";
  if (caps.contains("policy")) h += ", policy " + HtmlEscape(Str(caps, "policy"));
  if (caps.value("degraded", false)) h += " <span class=\"fail\">DEGRADED</span>";
  h += "</p>\n";
  const common::Json adm = caps.value("admission", common::Json::object());
  if (adm.contains("causes") && adm["causes"].is_array() && !adm["causes"].empty()) {
    std::vector<std::string> causes;
    for (const auto& c : adm["causes"])
      causes.push_back(c.is_string() ? c.get<std::string>()
                                     : common::WriteJson(c, -1, common::JsonNotice::kNone));
    h += "<p>Causes: " + HtmlEscape(fmt::format("{}", fmt::join(causes, ", "))) + "</p>\n";
  }
  if (!adm.contains("checks") || !adm["checks"].is_array()) {
    return h + "<p>No admission checks in the snapshot.</p>\n";
  }
  h += "<table id=\"capabilities\"><tr><th>check</th><th>result</th><th>found</th>"
       "<th>required</th><th>cause</th></tr>";
  for (const auto& c : adm["checks"]) {
    const std::string result = Str(c, "result");
    h += "<tr><td class=\"l\">" +
         HtmlEscape(Str(c, "title").empty() ? Str(c, "id") : Str(c, "title")) +
         "</td><td class=\"" + std::string(result == "PASS" ? "pass" : "fail") + "\">" +
         HtmlEscape(result) + "</td><td class=\"l\">" + HtmlEscape(Str(c, "found")) +
         "</td><td class=\"l\">" + HtmlEscape(Str(c, "required")) + "</td><td class=\"l\">" +
         HtmlEscape(Str(c, "cause")) + "</td></tr>";
  }
  return h + "</table>\n";
}

std::string RunToHtml(const RunResult& r) {
  std::string h = HtmlHead("truegreen bench report");
  h += fmt::format(
      "<p>Target <code>{}</code> (api {}{}), started {}, prompt set <code>{}</code> "
      "sha256 <code>{}</code>.</p>\n",
      HtmlEscape(r.url), HtmlEscape(r.api), r.model.empty() ? "" : ", model " + HtmlEscape(r.model),
      HtmlEscape(r.started_at),
      HtmlEscape(r.prompt_set_path.empty() ? "built-in" : r.prompt_set_path),
      HtmlEscape(r.prompt_set_sha256));
  if (r.interrupted) h += "<p class=\"fail\">Interrupted: partial results.</p>\n";
  // No thresholds means nothing was judged: say so, never "pass".
  if (r.slos.empty()) {
    h += "<p id=\"slos\">No SLOs given (--slo or a bench file): latency and errors were not "
         "judged.</p>\n";
  } else {
    h += "<p id=\"slos\">SLOs: " + HtmlEscape(fmt::format("{}", fmt::join(r.slos, ", "))) +
         " &mdash; " +
         (r.SlosFailed() ? "<span class=\"fail\">FAILED</span>"
                         : "<span class=\"pass\">pass</span>") +
         "</p>\n";
  }
  h += PointsTable(r);
  PlotSpec lat{"Latency percentiles per point", "point", "ms", false, {}, false};
  PlotSpec thr{"Throughput per point", "point", "requests/s", false, {}, false};
  Series p50{"P50", {}}, p95{"P95", {}}, p99{"P99", {}}, tput{"req/s", {}};
  std::vector<Series> cdfs, util;
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto& p = r.points[i];
    auto x = static_cast<double>(i);
    lat.x_ticks.push_back(fmt::format("c{}", p.config.concurrency));
    p50.xy.emplace_back(x, p.latency.ValueAtPercentile(50) / 1e3);
    p95.xy.emplace_back(x, p.latency.ValueAtPercentile(95) / 1e3);
    p99.xy.emplace_back(x, p.latency.ValueAtPercentile(99) / 1e3);
    tput.xy.emplace_back(x, p.Throughput());
    cdfs.push_back(CdfSeries(p.config.Label(), p.latency));
    if (!p.gpu.utilization_series.empty())
      util.push_back({p.config.Label(), p.gpu.utilization_series});
  }
  thr.x_ticks = lat.x_ticks;
  h += "<h2>Latency and throughput</h2>\n" + LinePlot(lat, {p50, p95, p99}) + "\n" +
       LinePlot(thr, {tput}) + "\n";
  h += "<h2>Latency CDF</h2>\n" +
       LinePlot({"Latency CDF", "latency (ms, log)", "fraction", true, {}, true}, cdfs) + "\n";
  h += "<h2>GPU utilisation over time</h2>\n" +
       LinePlot({"GPU utilisation (server /metrics)",
                 "seconds since start",
                 "utilisation",
                 false,
                 {},
                 false},
                util) +
       "\n";
  h += "<h2>Server capability snapshot</h2>\n" + CapabilitiesHtml(r.server_capabilities);
  return h + HtmlTail();
}

}  // namespace tg::bench
