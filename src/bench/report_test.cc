#include "bench/report.h"

#include <gtest/gtest.h>

#include "bench/svg.h"

namespace tg::bench {
namespace {

TEST(BenchReportTest, ASinglePointIsDrawn) {
  PlotSpec spec{"Throughput per point", "point", "requests/s", false, {"c1"}, false};
  const std::string svg = LinePlot(spec, {Series{"req/s", {{0.0, 12.5}}}});
  EXPECT_EQ(svg.find("no data"), std::string::npos) << svg;
  // One marker, inside the plot area (the lone x is centred, not on the frame).
  const auto at = svg.find("<circle class=\"point\"");
  ASSERT_NE(at, std::string::npos) << svg;
  EXPECT_EQ(svg.find("<circle", at + 1), std::string::npos);
  const double cx = std::stod(svg.substr(svg.find("cx=\"", at) + 4));
  EXPECT_GT(cx, 100.0) << svg;
}

TEST(BenchReportTest, NoSlosIsSaidAndNeverCalledAPass) {
  RunResult r;
  const std::string html = RunToHtml(r);
  EXPECT_NE(html.find("No SLOs given"), std::string::npos);
  EXPECT_EQ(html.find("SLOs: none"), std::string::npos);
  r.slos = {"p95<1s"};
  EXPECT_NE(RunToHtml(r).find("SLOs: p95&lt;1s"), std::string::npos);
}

TEST(BenchReportTest, CapabilitiesShowTheVerdictAndOneRowPerCheck) {
  const common::Json caps = common::Json::parse(R"({
    "verdict": "NOT ACCELERATED", "policy": "production", "degraded": false,
    "snapshot": {"deep": {"keys": [1, 2, 3]}},
    "admission": {"causes": ["driver.library"], "checks": [
      {"id": "env.visible_devices", "title": "NVIDIA_VISIBLE_DEVICES", "result": "PASS",
       "found": "unset", "required": "", "cause": ""},
      {"id": "driver.library", "title": "libcuda", "result": "FAIL",
       "found": "libcuda.so.1 not found", "required": "present", "cause": "driver not mounted"}]}})");
  const std::string h = CapabilitiesHtml(caps);
  EXPECT_NE(h.find("Verdict: <b>NOT ACCELERATED</b>"), std::string::npos) << h;
  EXPECT_NE(h.find("Causes: driver.library"), std::string::npos) << h;
  EXPECT_NE(h.find("<td class=\"fail\">FAIL</td>"), std::string::npos) << h;
  EXPECT_NE(h.find("driver not mounted"), std::string::npos) << h;
  std::size_t rows = 0;
  for (std::size_t at = 0; (at = h.find("<tr>", at)) != std::string::npos; ++at) ++rows;
  EXPECT_EQ(rows, 3u);  // header + two checks, not the flattened snapshot
  EXPECT_EQ(h.find("deep.keys"), std::string::npos);
  EXPECT_NE(CapabilitiesHtml(nullptr).find("Not available"), std::string::npos);
}

}  // namespace
}  // namespace tg::bench
