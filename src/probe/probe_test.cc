// In-process tests of the library-free parts of the probe (device nodes, environment, host).
// Library probing is tested through the binary (tests/integrity_probe_cli_test.cc): loaded
// libraries stay in a process, so each behaviour needs its own process.
#include "probe/probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "probe/host_internal.h"
#include "tests/fakegpu/fake_root.h"

namespace tg::probe {
namespace {

TEST(DeviceNodes, FakeRootIsSeen) {
  testing::FakeRoot root(testing::FakeRootOptions{.gpu_count = 2});
  DeviceNodes d;
  internal::ProbeDeviceNodes(root.path(), &d);
  EXPECT_EQ(d.root, root.path());
  EXPECT_TRUE(d.nvidiactl.present);
  EXPECT_EQ(d.nvidiactl.type, "file");
  EXPECT_EQ(d.nvidiactl.path, "/dev/nvidiactl");
  EXPECT_TRUE(d.nvidia_uvm.present);
  ASSERT_EQ(d.gpus.size(), 2u);
  EXPECT_EQ(d.gpus[1].path, "/dev/nvidia1");
  EXPECT_TRUE(d.proc_driver_version.present);
  EXPECT_EQ(d.kernel_module_version, "580.65.06");
}

TEST(DeviceNodes, MissingNodesSayWhy) {
  testing::FakeRoot root(
      testing::FakeRootOptions{.gpu_count = 0, .nvidia_uvm = false, .proc_version = false});
  DeviceNodes d;
  internal::ProbeDeviceNodes(root.path(), &d);
  EXPECT_TRUE(d.nvidiactl.present);
  EXPECT_FALSE(d.nvidia_uvm.present);
  EXPECT_EQ(d.nvidia_uvm.error, "No such file or directory");
  EXPECT_TRUE(d.gpus.empty());
  EXPECT_FALSE(d.proc_driver_version.present);
  EXPECT_FALSE(d.kernel_module_version.has_value());
}

TEST(DeviceNodes, ProprietaryModuleVersionLineParses) {
  testing::TempDir root;
  testing::WriteFile(root / "proc/driver/nvidia/version",
                     "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 "
                     "01:15:15 UTC 2023\n");
  DeviceNodes d;
  internal::ProbeDeviceNodes(root.path(), &d);
  EXPECT_EQ(d.kernel_module_version, "535.104.05");
  EXPECT_FALSE(d.nvidiactl.present);
}

TEST(Env, RecordsSetAndUnsetVariables) {
  std::vector<EnvVar> env;
  internal::ProbeEnv({{"NVIDIA_VISIBLE_DEVICES", "void"}, {"UNRELATED", "x"}}, &env);
  ASSERT_EQ(env.size(), std::size(kProbedEnvVars));
  EXPECT_EQ(env[0].name, "NVIDIA_VISIBLE_DEVICES");
  EXPECT_EQ(env[0].value, "void");
  EXPECT_FALSE(env[1].value.has_value());
}

TEST(Host, KernelAndCpuAreRead) {
  HostInfo h;
  internal::ProbeHost("/", {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}}, &h);
  EXPECT_FALSE(h.kernel.empty());
  EXPECT_GT(h.cpu_count, 0);
  EXPECT_TRUE(h.container);
  EXPECT_NE(std::find(h.container_hints.begin(), h.container_hints.end(),
                      "KUBERNETES_SERVICE_HOST set (Kubernetes pod)"),
            h.container_hints.end());
}

// The cgroup version as the mount table says it, a different source from the probe's stat of
// the hierarchy: cgroup2 mounted at /sys/fs/cgroup is v2, a v1 memory controller mount is v1.
std::string CgroupVersionFromMounts() {
  std::ifstream mounts("/proc/self/mounts");
  std::string device, point, type, rest;
  bool v1_memory = false;
  while (mounts >> device >> point >> type && std::getline(mounts, rest)) {
    if (point == "/sys/fs/cgroup" && type == "cgroup2") return "v2";
    if (point == "/sys/fs/cgroup/memory" && type == "cgroup") v1_memory = true;
  }
  return v1_memory ? "v1" : "unknown";
}

TEST(Host, CgroupVersionAgreesWithTheMountTable) {
  HostInfo h;
  internal::ProbeHost("/", {}, &h);
  EXPECT_EQ(h.cgroup_version, CgroupVersionFromMounts());
  if (h.cgroup_version == "unknown") {
    EXPECT_FALSE(h.cgroup_memory_limit.has_value());  // no hierarchy, so no limit was read
  }
}

TEST(ErrorNames, KnownAndUnknownCodes) {
  EXPECT_EQ(CudaErrorName(34), "CUDA_ERROR_STUB_LIBRARY");
  EXPECT_EQ(CudaErrorName(804), "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE");
  EXPECT_EQ(NvmlErrorName(18), "NVML_ERROR_LIB_RM_VERSION_MISMATCH");
  EXPECT_EQ(CudaRuntimeErrorName(35), "cudaErrorInsufficientDriver");
  EXPECT_EQ(CudaErrorName(12345), "UNKNOWN_12345");
}

}  // namespace
}  // namespace tg::probe
