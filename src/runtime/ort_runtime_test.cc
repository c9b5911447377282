// The process's ONNX Runtime object: one environment per process, whoever asks for it (the probe
// of ORT, the session factory, a second Open), and the "core cannot host GPU providers" decision
// taken from the constructor option, checked on the real CPU-built core of the same release.
#include "runtime/ort_runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "runtime/ort_probe.h"
#include "runtime/session.h"
#include "tests/support/test_util.h"

namespace tg::runtime {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(OrtRuntime, EveryUserSharesTheOneEnvironment) {
  const common::LibraryLoader loader = common::LibraryLoader::WithDefaults({});
  auto first = OrtRuntime::Open(loader);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(OrtRuntime::EnvironmentsCreated(), 1);
  EXPECT_FALSE((*first)->options().allow_unhostable_core);

  auto again = OrtRuntime::Open(common::LibraryLoader::WithDefaults({}));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *first);

  // The probe registers the provider libraries into the same runtime; a factory works in it too.
  probe::OrtInfo info;
  ProbeOrt(loader, *first, "", &info);
  EXPECT_TRUE(info.library.loaded) << info.library.error;
  auto factory = SessionFactory::Create(DevPolicy(), **first);
  ASSERT_TRUE(factory.ok()) << factory.status().ToString();
  EXPECT_EQ(factory->ort_version(), (*first)->ort_version());
  probe::Snapshot s = TakeSnapshot(loader, first);
  EXPECT_TRUE(s.onnxruntime.library.loaded) << s.onnxruntime.library.error;
  EXPECT_EQ(OrtRuntime::EnvironmentsCreated(), 1);

  // A different decision cannot be had from the same process: refused, not silently dropped.
  OrtRuntimeOptions allow;
  allow.allow_unhostable_core = true;
  auto other = OrtRuntime::Open(loader, allow);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), common::StatusCode::kInvalidArg);
  EXPECT_THAT(other.status().message(), HasSubstr("already created"));
  EXPECT_EQ(OrtRuntime::EnvironmentsCreated(), 1);
}

// Only ort_env.cc creates an ONNX Runtime environment: any other CreateEnv or Ort::Env would be a
// second owner (ORT would hand it the same environment and drop its logger).
TEST(OrtRuntime, OnlyOneSourceFileCreatesAnEnvironment) {
  const std::regex creates(
      R"(CreateEnv\w*\(|make_unique<Ort::Env>|new Ort::Env|Ort::Env\s*[\(\{]|Ort::Env\s+\w+\s*[\(\{])");
  std::vector<std::string> creators;
  for (const auto& e : fs::recursive_directory_iterator(tg::testing::SourceDir() + "/src")) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
    if (e.path().filename().string().find("_test.cc") != std::string::npos) continue;
    if (std::regex_search(tg::testing::ReadFile(e.path().string()), creates)) {
      creators.push_back(e.path().filename().string());
    }
  }
  EXPECT_THAT(creators, ::testing::ElementsAre("ort_env.cc"));
}

// The runtime is opened by the command that needs it and passed in: no library code below the
// commands (runtime/, sd/, policy/, probe/, common/) opens it on its own, so the startup chain and
// the snapshot use the caller's runtime and cannot open a second, differently configured one.
TEST(OrtRuntime, OnlyCommandsOpenTheRuntime) {
  const std::regex opens(R"(OrtRuntime::Open\s*\()");
  std::vector<std::string> openers;
  for (const char* dir : {"runtime", "sd", "policy", "probe", "common"}) {
    const fs::path root = fs::path(tg::testing::SourceDir()) / "src" / dir;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      const std::string name = e.path().filename().string();
      if (!e.is_regular_file() || name.find("_test.cc") != std::string::npos) continue;
      if (name == "ort_runtime.cc" || (!name.ends_with(".cc") && !name.ends_with(".h"))) continue;
      if (std::regex_search(tg::testing::ReadFile(e.path().string()), opens)) {
        openers.push_back(std::string(dir) + "/" + name);
      }
    }
  }
  EXPECT_THAT(openers, ::testing::IsEmpty());
}

// The option decides, in a fresh process each (the child re-executes this test binary), on the
// real CPU-built core: refused without it, allowed with it.
void OpenCpuCoreAndCheck(bool allow) {
  common::LibraryLoader loader({fs::path(tg::testing::CpuOrtCore()).parent_path().string()});
  OrtRuntimeOptions o;
  o.allow_unhostable_core = allow;
  auto rt = OrtRuntime::Open(loader, o);
  if (!rt.ok()) {
    std::fprintf(stderr, "open: %s\n", rt.status().ToString().c_str());
    _exit(10);
  }
  std::error_code ec;
  if (!fs::equivalent((*rt)->core_path(), tg::testing::CpuOrtCore(), ec)) {
    std::fprintf(stderr, "loaded %s, not the CPU core\n", (*rt)->core_path().c_str());
    _exit(11);
  }
  if ((*rt)->options().allow_unhostable_core != allow) _exit(12);
  const common::Status st = (*rt)->CheckCoreCanHost(
      "CUDAExecutionProvider", "/opt/ort/lib/libonnxruntime_providers_cuda.so");
  if (st.ok()) _exit(0);
  std::fprintf(stderr, "%s\n", st.ToString().c_str());
  _exit(st.code() == common::StatusCode::kUnavailable &&
                st.message().find("is a CPU build") != std::string::npos
            ? 1
            : 13);
}

TEST(OrtRuntimeDeathTest, TheConstructorOptionDecidesWhetherACpuCoreHostsGpuProviders) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  if (!fs::exists(tg::testing::CpuOrtCore())) {
    GTEST_SKIP() << tg::testing::CpuOrtCore() << " missing (scripts/setup.sh installs it)";
  }
  EXPECT_EXIT(OpenCpuCoreAndCheck(false), ::testing::ExitedWithCode(1), "is a CPU build");
  EXPECT_EXIT(OpenCpuCoreAndCheck(true), ::testing::ExitedWithCode(0), "");
}

TEST(OrtRuntime, TheGpuFlavorCoreHostsGpuProvidersWithoutTheOption) {
  auto rt = OrtRuntime::Open(common::LibraryLoader::WithDefaults({}));
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  ASSERT_FALSE((*rt)->options().allow_unhostable_core);
  // Setup's default core is the GPU build, so the check passes on what the core says it has.
  EXPECT_TRUE(
      (*rt)
          ->CheckCoreCanHost("CUDAExecutionProvider",
                             tg::testing::OrtDir() + "/lib/libonnxruntime_providers_cuda.so")
          .ok());
}

}  // namespace
}  // namespace tg::runtime
