// The op canary end to end: `truegreen doctor --canary` runs the built-in one-op models in a child
// process (the hidden __canary-child subcommand of the same binary). Without a GPU the child
// attaches no GPU provider, so the models run on the CPU against the CPU: every op must run and
// match (the generated models are valid), and the verdict must still be NOT_RUN, never PASS. The
// child's test hook (TG_CANARY_FAULT) makes it crash, hang, fail or lie on chosen ops: each must
// come back as a verdict naming the op, the provider and the signal or difference, and the
// parent must survive and finish the other ops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "common/config.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

using ::testing::HasSubstr;

struct Doctor {
  testing::ProcessResult proc;
  common::Json json;
};

Doctor RunDoctor(const std::vector<std::string>& extra, const std::string& fault,
                 const std::string& policy = "dev") {
  std::vector<std::string> args = {"--json", "--policy", policy, "doctor", "--canary"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::map<std::string, std::string> env = {{"TRUEGREEN_LIB_PATH", testing::kUnset}};
  env["TG_CANARY_FAULT"] = fault.empty() ? testing::kUnset : fault;
  Doctor d;
  d.proc = testing::RunTruegreen(args, env);
  auto j = common::ParseJson(d.proc.out, "doctor stdout");
  EXPECT_TRUE(j.ok()) << d.proc.out << d.proc.err;
  if (j.ok()) d.json = *j;
  return d;
}

const common::Json* Case(const common::Json& canary, const std::string& name) {
  for (const auto& c : canary["cases"]) {
    if (c["name"] == name) return &c;
  }
  return nullptr;
}

TEST(Canary, EveryBuiltinOpRunsOnTheCpuButProvesNothingWithoutAGpu) {
  Doctor d = RunDoctor({"--canary-no-cache"}, "");
  ASSERT_TRUE(d.json.contains("canary")) << d.proc.out << d.proc.err;
  const common::Json& c = d.json["canary"];
  EXPECT_EQ(c["verdict"], "NOT_RUN") << c.dump(2);
  EXPECT_THAT(c["reason"].get<std::string>(), HasSubstr("no GPU provider attached"));
  EXPECT_TRUE(c["gpu_providers"].empty());
  EXPECT_GE(c["cases"].size(), 25u);
  for (const auto& k : c["cases"]) {
    EXPECT_EQ(k["status"], "ok") << k.dump();
    EXPECT_EQ(k["provider"], "CPUExecutionProvider") << k.dump();
  }
  for (const char* name : {"Resize(sizes)", "Resize(scales)", "Slice", "Einsum", "Tile", "Concat",
                           "Split", "Pad", "Cast(fp16)", "LayerNormalization"}) {
    EXPECT_NE(Case(c, name), nullptr) << name;
  }
  // Dev admission on a GPU-less node is DEGRADED (exit 0); the canary does not make it worse.
  EXPECT_EQ(d.proc.exit_code, 0) << d.proc.err;
}

TEST(Canary, CrashErrorAndWrongResultAreVerdictsAndTheRestStillRuns) {
  Doctor d = RunDoctor({"--canary-no-cache"}, "segv:Slice,error:Gather,wrong:Tile");
  const common::Json& c = d.json["canary"];
  EXPECT_EQ(c["verdict"], "FAIL") << c.dump(2);
  // The first failure in the set's order names op, provider and signal.
  EXPECT_THAT(c["reason"].get<std::string>(),
              HasSubstr("Slice on CPUExecutionProvider: crash (the child process died of "
                        "SIGSEGV)"));
  const common::Json* slice = Case(c, "Slice");
  ASSERT_NE(slice, nullptr);
  EXPECT_EQ((*slice)["status"], "crash");
  const common::Json* gather = Case(c, "Gather");
  ASSERT_NE(gather, nullptr);
  EXPECT_EQ((*gather)["status"], "error");
  EXPECT_THAT((*gather)["detail"].get<std::string>(), HasSubstr("injected error"));
  const common::Json* tile = Case(c, "Tile");
  ASSERT_NE(tile, nullptr);
  EXPECT_EQ((*tile)["status"], "mismatch");
  EXPECT_THAT((*tile)["detail"].get<std::string>(), HasSubstr("differ from the CPU result"));
  EXPECT_GE((*tile)["max_abs_diff"].get<double>(), 0.99);
  // After the crash a new child ran the ops that follow Slice.
  EXPECT_EQ(c["children"], 2);
  const common::Json* pad = Case(c, "Pad");
  ASSERT_NE(pad, nullptr);
  EXPECT_EQ((*pad)["status"], "ok");
}

TEST(Canary, AHangingChildIsKilledAndNamed) {
  Doctor d = RunDoctor({"--canary-no-cache", "--canary-timeout-ms", "5000"}, "hang:Conv");
  const common::Json& c = d.json["canary"];
  EXPECT_EQ(c["verdict"], "FAIL") << c.dump(2);
  const common::Json* conv = Case(c, "Conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ((*conv)["status"], "hang");
  EXPECT_THAT((*conv)["detail"].get<std::string>(), HasSubstr("no result within 5000 ms"));
  const common::Json* matmul = Case(c, "MatMul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ((*matmul)["status"], "ok");
}

TEST(Canary, VerdictIsCachedSoAWarmNodePaysOnce) {
  testing::TempDir dir;
  const std::string cache = dir / "cache";
  Doctor first = RunDoctor({"--canary-cache-dir", cache}, "wrong:Tile");
  const common::Json& a = first.json["canary"];
  EXPECT_EQ(a["verdict"], "FAIL");
  EXPECT_FALSE(a["from_cache"].get<bool>());
  EXPECT_GE(a["children"].get<int>(), 1);
  const std::string file = a["cache_file"].get<std::string>();
  EXPECT_THAT(file, HasSubstr(cache + "/canary-"));
  EXPECT_TRUE(std::filesystem::exists(file));

  Doctor second = RunDoctor({"--canary-cache-dir", cache}, "wrong:Tile");
  const common::Json& b = second.json["canary"];
  EXPECT_TRUE(b["from_cache"].get<bool>());
  EXPECT_EQ(b["children"], 0);
  EXPECT_EQ(b["verdict"], a["verdict"]);
  EXPECT_EQ(b["reason"], a["reason"]);

  // Another key (no fault): a miss. NOT_RUN proves nothing, so it is never cached.
  Doctor third = RunDoctor({"--canary-cache-dir", cache}, "");
  const common::Json& c = third.json["canary"];
  EXPECT_FALSE(c["from_cache"].get<bool>());
  EXPECT_EQ(c["verdict"], "NOT_RUN");
  EXPECT_FALSE(std::filesystem::exists(c["cache_file"].get<std::string>()));
}

TEST(Canary, ProductionWithoutAGpuCannotRunTheCanaryAndSaysWhy) {
  Doctor d = RunDoctor({"--canary-no-cache"}, "", "production");
  EXPECT_EQ(d.proc.exit_code, 3) << d.proc.err;
  const common::Json& c = d.json["canary"];
  EXPECT_EQ(c["verdict"], "NOT_RUN");
  EXPECT_THAT(c["reason"].get<std::string>(), HasSubstr("could not run"));
}

}  // namespace
}  // namespace tg
