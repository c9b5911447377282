#include "bench/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "policy/snapshot_diff.h"
#include "tests/support/test_util.h"

namespace tg::bench {
namespace {

using common::Json;

// n latencies (µs) of a log-normal around `median_us`, from our own uniform draw (Box-Muller over
// mt19937_64's raw output), so the samples do not depend on the library's distributions.
Histogram LogNormal(double median_us, double sigma, int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 0.5) / 9007199254740992.0; };
  Histogram h;
  for (int i = 0; i < n; ++i) {
    double z = std::sqrt(-2 * std::log(uniform())) * std::cos(2 * M_PI * uniform());
    h.Record(static_cast<std::int64_t>(median_us * std::exp(sigma * z)));
  }
  return h;
}

// What a server's GET /v1/capabilities holds, with `driver` and `provider` as its capabilities
// and `t` setting every time, sample and duration in it.
Json Capabilities(const std::string& driver, const std::string& provider, double t) {
  Json canary = {{"ran", true}, {"ok", true}, {"message", ""}, {"at_unix", 1.7e9 + t}};
  canary["models"]["sd"] = {{"p50_ms", 100 + t}, {"samples_ms", {99 + t, 101 + t}}};
  Json c = Json::object();
  c["snapshot"]["taken_at"] = "2026-01-0" + std::to_string(static_cast<int>(t) % 9 + 1);
  c["snapshot"]["nvml"]["driver_version"] = driver;
  c["startup"]["steps"] =
      Json::array({{{"step", "factory"}, {"outcome", "ok"}, {"ms", 12 + t}, {"detail", ""}}});
  c["startup"]["total_ms"] = 40 + t;
  c["startup"]["canary"] = {{"verdict", "pass"}, {"wall_ms", 3 + t}, {"from_cache", t > 1}};
  c["models"]["sd"]["placement"]["providers"] = Json::array({provider});
  c["models"]["sd"]["attention"]["verdict"] = "fused";
  c["models"]["sd"]["create_ms"] = 7 + t;
  c["canary"] = canary;
  c["background_canary"] = canary;
  c["gpu"]["devices"] = Json::array({{{"uuid", "GPU-1"},
                                      {"memory_total_bytes", 80},
                                      {"memory_used_bytes", 3 + t},
                                      {"utilization", t / 10},
                                      {"power_watts", 70 + t}}});
  return c;
}

RunResult MakeRun(const Json& caps, std::uint64_t seed, int n = 400) {
  RunResult r;
  r.server_capabilities = caps;
  PointResult p;
  p.latency = LogNormal(50000, 0.2, n, seed);
  p.ok = static_cast<std::uint64_t>(n);
  p.measured_s = 10;
  r.points.push_back(std::move(p));
  return r;
}

TEST(CompareTest, RunsThatDifferOnlyInTimingHaveNoCapabilityDifferences) {
  RunResult a = MakeRun(Capabilities("550.54", "CUDAExecutionProvider", 1), 1);
  RunResult b = MakeRun(Capabilities("550.54", "CUDAExecutionProvider", 7), 2);
  RunComparison c = CompareRuns(a, "A", b, "B", {});
  ASSERT_TRUE(c.capability_diff.is_object());
  EXPECT_TRUE(c.capability_diff["equal"].get<bool>()) << c.capability_diff.dump(1);
  EXPECT_NE(ComparisonsToMarkdown({c}).find("no capability differences"), std::string::npos);
  EXPECT_NE(ComparisonsToHtml({c}).find("no capability differences"), std::string::npos);
  // The same two documents without the view differ in every timing.
  EXPECT_GT(policy::DiffJson(a.server_capabilities, b.server_capabilities).size(), 10u);
}

// The rows of the HTML capability table, read by Python's HTML parser (the DOM, not a substring).
std::vector<std::vector<std::string>> HtmlTableRows(const std::string& html, const char* id) {
  testing::TempDir d;
  testing::WriteFile(d / "c.html", html);
  const char* script =
      "import sys, json, html.parser\n"
      "class P(html.parser.HTMLParser):\n"
      "  def __init__(s, id):\n"
      "    super().__init__(); s.id = id; s.depth = 0; s.rows = []; s.cell = None\n"
      "  def handle_starttag(s, t, a):\n"
      "    if t == 'table' and dict(a).get('id') == s.id: s.depth = 1\n"
      "    elif s.depth and t == 'tr': s.rows.append([])\n"
      "    elif s.depth and t == 'td': s.cell = ''\n"
      "  def handle_endtag(s, t):\n"
      "    if t == 'table': s.depth = 0\n"
      "    if t == 'td' and s.cell is not None: s.rows[-1].append(s.cell); s.cell = None\n"
      "  def handle_data(s, d):\n"
      "    if s.cell is not None: s.cell += d\n"
      "p = P(sys.argv[2]); p.feed(open(sys.argv[1]).read())\n"
      "print(json.dumps([r for r in p.rows if r]))\n";
  testing::ProcessResult r =
      testing::RunProcess({testing::SystemPython(), "-c", script, d / "c.html", id});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto j = Json::parse(r.out, nullptr, false);
  if (!j.is_array()) return {};
  return j.get<std::vector<std::vector<std::string>>>();
}

TEST(CompareTest, ADriverChangeIsOneRowInHtmlAndMarkdown) {
  RunResult a = MakeRun(Capabilities("550.54", "CUDAExecutionProvider", 1), 1);
  RunResult b = MakeRun(Capabilities("560.28", "CUDAExecutionProvider", 5), 2);
  RunComparison c = CompareRuns(a, "A", b, "B", {});
  auto rows = HtmlTableRows(ComparisonsToHtml({c}), "capability-diff");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"changed", "snapshot.nvml.driver_version",
                                               "\"550.54\"", "\"560.28\""}));
  const std::string md = ComparisonsToMarkdown({c});
  EXPECT_NE(md.find("| changed | snapshot.nvml.driver_version | \"550.54\" | \"560.28\" |"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("no capability differences"), std::string::npos);
}

TEST(CompareTest, AProviderChangeIsOneRow) {
  RunResult a = MakeRun(Capabilities("550.54", "CUDAExecutionProvider", 1), 1);
  RunResult b = MakeRun(Capabilities("550.54", "TensorrtExecutionProvider", 2), 2);
  RunComparison c = CompareRuns(a, "A", b, "B", {});
  auto rows = HtmlTableRows(ComparisonsToHtml({c}), "capability-diff");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][1], "models.sd.placement.providers[0]");
  EXPECT_NE(ComparisonsToMarkdown({c}).find("| changed | models.sd.placement.providers[0] |"),
            std::string::npos);
}

TEST(CompareTest, OverlapIsHighForOneDistributionAndNearZeroForDisjointOnes) {
  // 16 samples a side (the demo's A/B): every pair of draws from one distribution overlaps well;
  // in 3-digit buckets they would share almost none.
  double sum = 0;
  for (std::uint64_t s = 0; s < 20; ++s) {
    Histogram a = LogNormal(50000, 0.2, 16, 100 + s), b = LogNormal(50000, 0.2, 16, 200 + s);
    double o = OverlapCoefficient(a, b);
    EXPECT_GT(o, 0.4) << "seed " << s;
    EXPECT_LT(KsDistance(a, b), 0.6) << "seed " << s;
    sum += o;
  }
  EXPECT_GT(sum / 20, 0.7);
  Histogram big_a = LogNormal(50000, 0.2, 2000, 1), big_b = LogNormal(50000, 0.2, 2000, 2);
  EXPECT_GT(OverlapCoefficient(big_a, big_b), 0.9);
  EXPECT_LT(KsDistance(big_a, big_b), 0.06);
  // Disjoint: every B latency above every A latency.
  for (int n : {16, 400}) {
    Histogram a = LogNormal(20000, 0.1, n, 3), b = LogNormal(80000, 0.1, n, 4);
    ASSERT_LT(a.max(), b.min());
    EXPECT_LT(OverlapCoefficient(a, b), 0.05) << n;
    EXPECT_DOUBLE_EQ(KsDistance(a, b), 1.0) << n;
  }
  EXPECT_EQ(OverlapBins(16, 400), 4);
  EXPECT_EQ(OverlapBins(1u << 20, 1u << 20), 64);
}

TEST(CompareTest, NoGatesSaysNoneGivenNeverPass) {
  RunResult a = MakeRun(Json(), 1), b = MakeRun(Json(), 2);
  RunComparison none = CompareRuns(a, "A", b, "B", {});
  EXPECT_NE(ComparisonsToMarkdown({none}).find("Regression gates: none given"), std::string::npos);
  const std::string html = ComparisonsToHtml({none});
  EXPECT_NE(html.find("Regression gates: none given"), std::string::npos);
  EXPECT_EQ(html.find("Regression gates: pass"), std::string::npos);
  EXPECT_EQ(ComparisonsToJson({none})[0]["gates"], "none given");
  auto gate = ParseGate("p95 +50%");
  ASSERT_TRUE(gate.ok());
  RunComparison given = CompareRuns(a, "A", b, "B", {gate.value()});
  EXPECT_NE(ComparisonsToHtml({given}).find("Regression gates: pass"), std::string::npos);
  EXPECT_EQ(ComparisonsToJson({given})[0]["gates"], "pass");
}

TEST(CompareTest, TooFewSamplesGiveNoVerdict) {
  EXPECT_EQ(MinSamplesForInterval(0.5), 8u);
  const std::uint64_t need = MinSamplesForInterval(0.95);
  EXPECT_EQ(need, 110u);
  // The P95 interval's ranks fit inside a sample of `need`, not one smaller.
  RunResult a = MakeRun(Json(), 1, 16), b = MakeRun(Json(), 2, 16);
  RunComparison c = CompareRuns(a, "A", b, "B", {});
  EXPECT_EQ(c.points[0].verdict, "too few samples (n = 16/16)");
  EXPECT_NE(ComparisonsToMarkdown({c}).find("| too few samples (n = 16/16) |"), std::string::npos);
  RunResult enough_a = MakeRun(Json(), 1, static_cast<int>(need));
  RunResult short_b = MakeRun(Json(), 2, static_cast<int>(need) - 1);
  EXPECT_EQ(CompareRuns(enough_a, "A", short_b, "B", {}).points[0].verdict,
            "too few samples (n = 110/109)");
  RunResult enough_b = MakeRun(Json(), 2, static_cast<int>(need));
  EXPECT_EQ(CompareRuns(enough_a, "A", enough_b, "B", {}).points[0].verdict, "~");
}

// A run file's sweep values and counts are integers in range: nlohmann would wrap 2^40 into an
// int and cut 10.5 to 10.
TEST(CompareTest, RunFilesWithImpossibleNumbersAreRefused) {
  RunResult r = MakeRun(Json(), 1, 20);
  const Json good = RunToJson(r);
  ASSERT_TRUE(RunFromJson(good, "a.json").ok()) << RunFromJson(good, "a.json").status().message();
  struct Bad {
    const char* field;
    Json value;
    const char* message;
  };
  for (const Bad& b : {
           Bad{"concurrency", Json(std::uint64_t{1} << 40),
               "a.json: points[0].concurrency: found 1099511627776; required an integer in "
               "1..100000"},
           Bad{"concurrency", Json(0), "points[0].concurrency: found 0"},
           Bad{"batch", Json(-1), "points[0].batch: found -1"},
           Bad{"steps", Json(2.5), "points[0].steps: found 2.5"},
           Bad{"ok", Json(10.5), "points[0].ok: found 10.5; required an integer in 0.."},
           Bad{"ok", Json("10"), "points[0].ok: found \"10\""},
           Bad{"measured_s", Json(-1.0), "points[0].measured_s: found -1"},
           Bad{"trials", Json(1001), "points[0].trials: found 1001"},
       }) {
    Json j = good;
    j["points"][0][b.field] = b.value;
    auto back = RunFromJson(j, "a.json");
    ASSERT_FALSE(back.ok()) << b.field;
    EXPECT_EQ(back.status().code(), common::StatusCode::kInvalidArg);
    EXPECT_NE(back.status().message().find(b.message), std::string::npos)
        << back.status().message();
  }
  Json errors = good;
  errors["points"][0]["errors"]["timeout"] = 0.5;
  EXPECT_NE(RunFromJson(errors, "a.json").status().message().find("errors.timeout: found 0.5"),
            std::string::npos);
}

TEST(CompareTest, BenchDocListsEveryExclusion) {
  const std::string doc = testing::ReadFile(testing::SourceDir() + "/docs/BENCH.md");
  std::size_t rows = 0;
  for (const auto& x : CapabilityDiffExclusions()) {
    const std::string row =
        "| `" + x.name + "` | " + (x.section ? "top level" : "anywhere") + " | " + x.why + " |";
    EXPECT_NE(doc.find(row), std::string::npos) << row;
    ++rows;
  }
  EXPECT_NE(doc.find("fewer than " + std::to_string(MinSamplesForInterval(0.95)) + " samples"),
            std::string::npos);
  // No row for an exclusion the code does not have.
  std::size_t at = doc.find("| left out | where | what it is |"), doc_rows = 0;
  ASSERT_NE(at, std::string::npos);
  at = doc.find("|---|---|---|", at);
  for (at = doc.find("\n", at); doc.compare(at, 6, "\n  | `") == 0; at = doc.find("\n", at + 1)) {
    ++doc_rows;
  }
  EXPECT_EQ(doc_rows, rows);
}

}  // namespace
}  // namespace tg::bench
