// Property: random bytes, invalid UTF-8 among them, in the text fields that reach an output and
// that tests/hostile_audit_test.cc's property does not cover (a file name, a build argument, a
// manifest's labels, namespace and environment, --runtime-class, a user pattern's id, category
// and advice, logscan and audit k8s suppression reasons and rule ids, a --scheduler value, a bench
// run's file name) never end a command with exit 1 or a signal, and every output stays a valid
// document: stdout in the json, sarif and junit formats is valid UTF-8, JSON and SARIF parse, JUnit
// is XML with its root element, and so are the --sarif and --junit files.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/json_writer.h"
#include "tests/support/hostile_bounds.h"
#include "tests/support/hostile_fixtures.h"
#include "tests/support/measured_run.h"
#include "tests/support/test_util.h"

namespace tg::testing {
namespace {

// Runs whose output was checked (not refused as input): the property must see real documents.
int g_checked = 0;

std::string Describe(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Stdout of one run in `format` (text, json, sarif, junit), or a report file of that kind.
void ExpectValidDocument(const std::string& text, const std::string& format,
                         const std::string& what) {
  // Text output echoes names as the user wrote them; the documents are held to UTF-8.
  if (format == "text") return;
  EXPECT_TRUE(common::IsValidUtf8(text)) << what;
  if (format == "json" || format == "sarif") {
    common::Json j;
    ASSERT_NO_THROW(j = common::Json::parse(text)) << what << "\n" << text.substr(0, 2000);
    if (format == "sarif") EXPECT_EQ(j.value("version", ""), "2.1.0") << what;
  } else if (format == "junit") {
    EXPECT_EQ(text.rfind("<?xml", 0), 0u) << what;
    EXPECT_NE(text.find("</testsuites>"), std::string::npos) << what;
  }
}

// Runs `base` in every output format, with --sarif and --junit files, and checks each result.
void CheckEveryFormat(const std::vector<std::string>& base, const TempDir& dir) {
  for (const std::string format : {"text", "json", "sarif", "junit"}) {
    std::vector<std::string> args = base;
    args.insert(args.end(),
                {"--format", format, "--sarif", dir / "r.sarif", "--junit", dir / "r.xml"});
    const std::string what = Describe(args);
    std::remove((dir / "r.sarif").c_str());
    std::remove((dir / "r.xml").c_str());
    MeasuredOutcome r = RunMeasured(args, TimeLimitS(20));
    ASSERT_FALSE(r.timed_out) << what;
    EXPECT_NE(r.exit_code, 1) << what << "\n" << r.err.substr(0, 2000);
    EXPECT_LT(r.exit_code, 128) << what;
    if (r.exit_code == 2) continue;  // refused as input: nothing else was written
    ++g_checked;
    ExpectValidDocument(r.out, format, what);
    ExpectValidDocument(ReadFile(dir / "r.sarif"), "sarif", what + " (--sarif file)");
    ExpectValidDocument(ReadFile(dir / "r.xml"), "junit", what + " (--junit file)");
  }
}

// --json: one parseable document (the result or the error object), valid UTF-8.
void CheckJson(const std::vector<std::string>& base) {
  std::vector<std::string> args = {"--json"};
  args.insert(args.end(), base.begin(), base.end());
  MeasuredOutcome r = RunMeasured(args, TimeLimitS(20));
  const std::string what = Describe(args);
  ASSERT_FALSE(r.timed_out) << what;
  EXPECT_NE(r.exit_code, 1) << what << "\n" << r.err.substr(0, 2000);
  EXPECT_LT(r.exit_code, 128) << what;
  ExpectValidDocument(r.out, "json", what);
}

void AuditCases(const TempDir& dir, const std::string& a, const std::string& b,
                const std::string& c) {
  const std::string dockerfile = dir / ("Dockerfile" + a);
  WriteFile(dockerfile, "ARG BASE\nFROM $BASE\nLABEL note=\"" + b + "\"\nUSER " + c + "\n");
  CheckEveryFormat({"audit", "dockerfile", dockerfile, "--build-arg", "BASE=debian" + a}, dir);
  const std::string pod = dir / ("pod" + b + ".yaml");
  WriteFile(pod, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: \"n" + a +
                     "\"\n  labels: {app: \"" + b +
                     "\"}\nspec:\n  containers:\n    - name: c\n"
                     "      image: img:1\n      env: [{name: A, value: \"" +
                     c + "\"}]\n");
  const std::string supp = dir / "supp.yaml";
  WriteFile(supp, "suppressions:\n  - rule: \"k8s." + a + "\"\n    reason: \"" + b +
                      "\"\n  - rule: k8s.image-digest\n    reason: \"" + c + "\"\n");
  CheckEveryFormat({"audit", "k8s", pod, "--runtime-class", "rc" + c, "--suppressions", supp}, dir);
  CheckJson({"audit", "k8s", pod, "--suppressions", supp});
}

void LogscanCases(const TempDir& dir, const std::string& a, const std::string& b,
                  const std::string& c) {
  const std::string log = dir / ("run" + a + ".log");
  WriteFile(log, "INFO " + b + " Falling back to CPUExecutionProvider " + c + "\nuser " + a + "\n");
  const std::string patterns = dir / "patterns.yaml";
  WriteFile(patterns, "patterns:\n  - id: \"user." + a + "\"\n    regex: 'user'\n    category: \"" +
                          b + "\"\n    advice: \"" + c + "\"\n");
  const std::string supp = dir / "supp_log.yaml";
  WriteFile(supp, "suppressions:\n  - rule: \"" + b + "\"\n    reason: \"" + c + "\"\n");
  CheckEveryFormat({"logscan", log, "--patterns", patterns, "--suppressions", supp}, dir);
  CheckJson({"logscan", log, "--patterns", patterns});
}

TEST(HostileProperty, InvalidUtf8InEveryOtherTextFieldKeepsEveryOutputValid) {
  std::mt19937 rng(4242);
  for (int round = 0; round < 3; ++round) {
    TempDir dir;
    const std::string a = RandomFieldText(&rng), b = RandomFieldText(&rng),
                      c = RandomFieldText(&rng);
    AuditCases(dir, a, b, c);
    LogscanCases(dir, a, b, c);
    const std::string sched = dir / "scheduler_config.json";
    WriteFile(sched, R"({"_class_name": "PNDMScheduler", "num_train_timesteps": 1000})");
    CheckJson({"schedule", "--config", sched, "--scheduler", a});
    const std::string run = dir / ("run" + b + ".json");
    WriteFile(run, BenchRunFile());
    CheckJson({"compare", run, run});
    MeasuredOutcome r = RunMeasured({"compare", run, run, "--out", dir / "cmp.json"}, 20);
    EXPECT_NE(r.exit_code, 1) << r.err;
    ExpectValidDocument(ReadFile(dir / "cmp.json"), "json", "compare --out");
  }
  // 3 rounds x 3 commands x 4 formats: most reach their report, not a refusal.
  EXPECT_GE(g_checked, 24);
}

}  // namespace
}  // namespace tg::testing
