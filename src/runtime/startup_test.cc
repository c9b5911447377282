// The startup chain on this node's real ONNX Runtime (CPU), timed by an injected clock: every
// step's time and the total come from StartupOptions::clock, so the test asserts exact figures
// instead of sleeping, and the chain's verdict is the one verdict value (policy/verdict.h).
#include "runtime/startup.h"

#include <gtest/gtest.h>

#include <chrono>

#include "common/clock.h"
#include "runtime/runtime_policy.h"

namespace tg::runtime {
namespace {

// A fake clock that moves 1 ms each time it is read, so every step takes a whole number of ms.
class TickingClock : public common::FakeClock {
 public:
  TimePoint Now() const override {
    TimePoint t = FakeClock::Now();
    const_cast<TickingClock*>(this)->Advance(std::chrono::milliseconds(1));
    return t;
  }
};

TEST(StartupChainTest, StepsAreTimedByTheInjectedClock) {
  TickingClock clock;
  StartupOptions so;
  so.clock = &clock;
  StartupReport report;
  const common::LibraryLoader loader = common::LibraryLoader::WithDefaults({});
  auto chain = StartupChain::Start(DevPolicy(), loader, OrtRuntime::Open(loader), so, &report);
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  ASSERT_GE(report.steps.size(), 3u);
  EXPECT_EQ(report.steps[0].name, "snapshot");
  EXPECT_EQ(report.steps[1].name, "admit");
  EXPECT_EQ(report.steps[2].name, "factory");
  double sum = 0;
  for (const StartupStep& s : report.steps) {
    // Each step reads the clock at its start and once when it is recorded: exactly 1 ms.
    EXPECT_DOUBLE_EQ(s.ms, 1.0) << s.name;
    sum += s.ms;
  }
  // The total spans the steps plus the reads between them, all on the same clock.
  EXPECT_GE(report.total_ms, sum);
  EXPECT_LT(report.total_ms, 20.0);

  // Finish: canary skipped (no GPU provider on this node), warm-up skipped (no runs asked).
  ASSERT_TRUE(chain->Finish({}, so, &report).ok());
  EXPECT_EQ(report.steps.back().name, "warmup");
  EXPECT_EQ(report.steps.back().outcome, policy::StepOutcome::kSkipped);
  EXPECT_EQ(report.steps[report.steps.size() - 2].outcome, policy::StepOutcome::kSkipped);

  // dev on a GPU-less node: DEGRADED, exit 0, never ACCELERATED.
  auto v = report.Verdict();
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->verdict, policy::Verdict::kDegraded);
  EXPECT_EQ(v->exit_code, 0);
  EXPECT_EQ(report.ToJson()["verdict"]["verdict"], "DEGRADED (dev policy: CPU allowed)");
}

// A detail that announces a list ("...:") is followed by its items on the same text line.
TEST(StartupReportTest, EveryFormattedLineIsComplete) {
  StartupReport r;
  r.steps.push_back({"admit", policy::StepOutcome::kOk, common::StatusCode::kOk, 1,
                     "integrity findings, proven at attach:\n  - [ort.pair] a CPU core\n"
                     "  - [cuda.driver] no driver"});
  r.steps.push_back({"factory", policy::StepOutcome::kRefused, common::StatusCode::kUnavailable, 2,
                     "production policy requires A -> B; 2 provider(s) cannot be attached:\n"
                     "  - A: missing\n  - B: missing\nThe CPU provider is never a fallback."});
  r.steps.push_back(
      {"canary", policy::StepOutcome::kSkipped, common::StatusCode::kOk, 0, "nothing listed:"});
  r.steps.push_back({"warmup", policy::StepOutcome::kSkipped, common::StatusCode::kOk, 0,
                     "-5 runs (a leading minus stays)"});
  const std::string text = r.Format();
  std::size_t lines = 0;
  for (std::size_t pos = 0; pos < text.size(); pos = text.find('\n', pos) + 1, ++lines) {
    const std::string line = text.substr(pos, text.find('\n', pos) - pos);
    EXPECT_NE(line.back(), ':') << line;
  }
  EXPECT_EQ(lines, 4u) << text;
  EXPECT_NE(text.find("integrity findings, proven at attach: [ort.pair] a CPU core; [cuda.driver] "
                      "no driver\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cannot be attached: A: missing; B: missing; The CPU provider is never a "
                      "fallback.\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  nothing listed\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  -5 runs (a leading minus stays)\n"), std::string::npos) << text;
}

TEST(StartupChainTest, ProductionRefusesThisNodeWithTheVerdictsExitCode) {
  common::FakeClock clock;  // never advances: every time is exactly 0
  StartupOptions so;
  so.clock = &clock;
  StartupReport report;
  const common::LibraryLoader loader = common::LibraryLoader::WithDefaults({});
  auto chain =
      StartupChain::Start(ProductionPolicy(), loader, OrtRuntime::Open(loader), so, &report);
  ASSERT_FALSE(chain.ok());
  for (const StartupStep& s : report.steps) EXPECT_EQ(s.ms, 0.0) << s.name;
  EXPECT_EQ(report.total_ms, 0.0);
  ASSERT_FALSE(report.steps.empty());
  EXPECT_EQ(report.steps.back().outcome, policy::StepOutcome::kRefused);
  auto v = report.Verdict();
  ASSERT_TRUE(v.has_value());
  EXPECT_FALSE(v->accelerated());
  // The chain's error and the verdict agree on the exit code (no GPU path: 3).
  EXPECT_EQ(v->exit_code, common::ExitCodeFromStatus(chain.status()));
  EXPECT_EQ(v->exit_code, common::kExitIntegrity);
}

// The chain uses the runtime it is given and opens none itself: given why the caller could not
// open one, the factory step refuses with exactly that error (dev keeps its code), and the
// snapshot and admission before it still ran.
TEST(StartupChainTest, TheFactoryStepRefusesWithTheCallersRuntimeError) {
  StartupOptions so;
  common::FakeClock clock;
  so.clock = &clock;
  StartupReport report;
  const common::Result<OrtRuntime*> none(common::Status::NotFound("libonnxruntime.so.1: no core"));
  auto chain =
      StartupChain::Start(DevPolicy(), common::LibraryLoader::WithDefaults({}), none, so, &report);
  ASSERT_FALSE(chain.ok());
  EXPECT_EQ(chain.status().code(), common::StatusCode::kNotFound);
  EXPECT_EQ(chain.status().message(), "libonnxruntime.so.1: no core");
  ASSERT_EQ(report.steps.size(), 3u);
  EXPECT_EQ(report.steps[0].outcome, policy::StepOutcome::kOk);
  EXPECT_EQ(report.steps[1].outcome, policy::StepOutcome::kOk);
  EXPECT_EQ(report.steps[2].name, "factory");
  EXPECT_EQ(report.steps[2].outcome, policy::StepOutcome::kRefused);
  EXPECT_EQ(report.steps[2].detail, "libonnxruntime.so.1: no core");
}

}  // namespace
}  // namespace tg::runtime
