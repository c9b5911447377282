// Test helpers for the fake GPU stack (header-only; tests only).
//
// FakeRoot builds a directory that looks like the root of a GPU node for the probe's device checks
// (`truegreen probe --root DIR`): /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidiaN as plain files and
// /proc/driver/nvidia/version. FakeLibDir builds a library directory holding symlinks to a chosen
// subset of the fake libraries in FakeGpuDir() (e.g. everything but libcuda.so.1 = "driver not
// mounted"), to pass as --lib-path. Both live in a TempDir removed on destruction.
// Not thread-safe; use from the test thread.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace tg::testing {

// Every library file the fake stack provides (names as found in FakeGpuDir()).
inline std::vector<std::string> FakeGpuLibraries() {
  return {"libonnxruntime.so",  // GPU-flavor core wrapping the real one (fake_ort_core.c)
          "libnvidia-ml.so.1",
          "libcuda.so.1",
          "libcudart.so.13",
          "libcublas.so.13",
          "libcublasLt.so.13",
          "libcurand.so.10",
          "libnccl.so.2",
          "libcudnn.so.9",
          "libcudnn_ops.so.9",
          "libcudnn_cnn.so.9",
          "libcudnn_adv.so.9",
          "libcudnn_graph.so.9",
          "libcudnn_heuristic.so.9",
          "libcudnn_engines_precompiled.so.9",
          "libcudnn_engines_runtime_compiled.so.9",
          "libnvinfer.so.10",
          "libnvonnxparser.so.10",
          "libonnxruntime_providers_cuda.so",
          "libonnxruntime_providers_tensorrt.so"};
}

struct FakeRootOptions {
  int gpu_count = 1;         // /dev/nvidia0 .. /dev/nvidia{N-1}
  bool nvidiactl = true;     // /dev/nvidiactl
  bool nvidia_uvm = true;    // /dev/nvidia-uvm
  bool proc_version = true;  // /proc/driver/nvidia/version
  std::string driver_version = "580.65.06";
};

class FakeRoot {
 public:
  explicit FakeRoot(const FakeRootOptions& o = {}) {
    WriteFile(dir_ / "dev/.keep", "");
    if (o.nvidiactl) WriteFile(dir_ / "dev/nvidiactl", "");
    if (o.nvidia_uvm) WriteFile(dir_ / "dev/nvidia-uvm", "");
    for (int i = 0; i < o.gpu_count; ++i) WriteFile(dir_ / ("dev/nvidia" + std::to_string(i)), "");
    if (o.proc_version) {
      WriteFile(dir_ / "proc/driver/nvidia/version",
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  " + o.driver_version +
                    "  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Jul  8 00:00:00 UTC 2025\n"
                    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)\n");
    }
  }
  const std::string& path() const { return dir_.path(); }

 private:
  TempDir dir_;
};

class FakeLibDir {
 public:
  // Symlinks every fake library except those named in `exclude` (file names, e.g.
  // "libcuda.so.1") into a fresh directory.
  explicit FakeLibDir(const std::set<std::string>& exclude = {}) {
    for (const auto& name : FakeGpuLibraries()) {
      if (exclude.count(name) != 0) continue;
      std::error_code ec;
      std::filesystem::create_symlink(FakeGpuDir() + "/" + name, dir_ / name, ec);
    }
  }
  const std::string& path() const { return dir_.path(); }

 private:
  TempDir dir_;
};

}  // namespace tg::testing
