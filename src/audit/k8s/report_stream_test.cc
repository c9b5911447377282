// The streamed writers (WriteSarif, WriteJunit, WriteFindingsText, and the k8s report through
// common::WriteJsonStreamed) write exactly what the whole-document renderings write, on varied
// findings: every optional field set or empty, suppressed, expired-suppression notes, absolute and
// relative paths, XML and JSON special characters, and invalid UTF-8 in every text field.
#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "audit/k8s/k8s_audit.h"
#include "audit/report/finding_cap.h"
#include "audit/report/report_format.h"
#include "common/json_stream.h"
#include "common/json_writer.h"

namespace tg::audit {
namespace {

std::string Text(std::mt19937* rng) {
  static const char* const kPieces[] = {
      "a",  "<&>\"'", "\xff", "\xc3\xa9", "\xe2\x82",         " ",
      "\\", "\n",     "\t",   "path/x",   "\xf0\x9f\x98\x80", "]]>"};
  std::string s;
  for (int n = static_cast<int>((*rng)() % 6); n > 0; --n) s += kPieces[(*rng)() % 12];
  return s;
}

std::vector<Finding> Varied(int n, unsigned seed) {
  std::mt19937 rng(seed);
  static const char* const kRules[] = {"k8s.image-digest", "image.build-tools", "dockerfile.sudo",
                                       "ort.cpu_fallback"};
  std::vector<Finding> v;
  for (int i = 0; i < n; ++i) {
    Finding f;
    f.rule = kRules[rng() % 4];
    f.severity = static_cast<Severity>(rng() % 3);
    if (rng() % 3) f.path = (rng() % 2 ? "/abs/" : "rel/") + Text(&rng);
    f.layer = rng() % 2 ? static_cast<int>(rng() % 5) : -1;
    f.line = rng() % 2 ? static_cast<std::int64_t>(rng() % 900) : 0;
    f.bytes = rng() % 2 ? rng() % 5000000 : 0;
    f.message = "m" + Text(&rng);
    if (rng() % 2) f.fix = Text(&rng);
    f.suppressed = rng() % 4 == 0;
    if (f.suppressed || rng() % 4 == 0) f.suppression = "r" + Text(&rng);
    v.push_back(std::move(f));
  }
  return v;
}

std::string NoTimestamp(std::string s) {
  return std::regex_replace(s, std::regex("timestamp=\"[^\"]*\""), "timestamp=\"T\"");
}

TEST(ReportStream, SarifIsTheWholeDocument) {
  for (unsigned seed = 1; seed <= 30; ++seed) {
    const std::vector<Finding> v = Varied(static_cast<int>(seed % 9), seed);
    FindingCap cap(3);
    if (seed % 2) cap.CountDropped("k8s.resources", Severity::kError);
    std::string streamed;
    WriteSarif(common::StringSink(&streamed), ViewOf(v), "audit k8s", "1.2.3", &cap);
    EXPECT_EQ(streamed, common::WriteJson(ToSarif(v, "audit k8s", "1.2.3", &cap), 2) + "\n")
        << "seed " << seed;
    EXPECT_TRUE(common::IsValidUtf8(streamed));
  }
}

TEST(ReportStream, JunitIsTheWholeDocument) {
  for (unsigned seed = 1; seed <= 30; ++seed) {
    const std::vector<Finding> v = Varied(static_cast<int>(seed % 9), seed);
    for (Severity fail_on : {Severity::kInfo, Severity::kWarning, Severity::kError}) {
      std::string streamed;
      WriteJunit(common::StringSink(&streamed), ViewOf(v), "audit \xff<x>", fail_on);
      EXPECT_EQ(NoTimestamp(streamed), NoTimestamp(ToJunit(v, "audit \xff<x>", fail_on)))
          << "seed " << seed;
    }
  }
}

TEST(ReportStream, TextIsTheWholeRendering) {
  const std::vector<Finding> v = Varied(12, 7);
  std::string streamed;
  WriteFindingsText(common::StringSink(&streamed), ViewOf(v));
  EXPECT_EQ(streamed, RenderFindingsText(v));
  EXPECT_FALSE(streamed.empty());
}

TEST(ReportStream, K8sJsonIsTheWholeDocument) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    K8sAuditReport rep;
    rep.documents = 3;
    rep.workloads = 2;
    rep.audited.push_back({"m\xff.yaml", 1, "Pod/p", "spec", "inference-server", "why"});
    rep.skipped = {"m.yaml#2 Service/s"};
    std::mt19937 rng(seed);
    for (const Finding& f : Varied(static_cast<int>(seed % 7), seed)) {
      K8sFinding kf;
      kf.finding = f;
      kf.document = static_cast<int>(rng() % 4);
      kf.object = "Pod/" + Text(&rng);
      if (rng() % 2) kf.container = Text(&rng);
      kf.field = "spec.containers[0]" + Text(&rng);
      rep.findings.push_back(kf);
    }
    common::Json head = K8sReportHeadToJson(rep);
    head["verdict"] = "fail";
    common::Json whole = K8sReportToJson(rep);
    whole["verdict"] = "fail";
    std::string streamed;
    common::WriteJsonStreamed(
        common::StringSink(&streamed), head, {"findings"}, rep.findings.size(),
        [&](std::size_t i) { return K8sFindingToJson(rep.findings[i]); }, 2);
    EXPECT_EQ(streamed, common::WriteJson(whole, 2)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace tg::audit
