// Internal pieces of policy::Admit, shared by admission.cc and admission_ort.cc (policy/ only; not
// a public API). The Evaluator turns one snapshot + matrix into the ordered list of checks; each
// Check* method adds its PASS/WARN/FAIL lines. Not thread-safe (one Evaluator per Admit call).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/admission.h"
#include "policy/matrix.h"
#include "probe/snapshot.h"

namespace tg::policy::internal {

using probe::LibInfo;
using probe::Snapshot;

// The loader error means "file not found" (not a failing dependency or a bad file).
bool IsNotFoundError(const std::string& e);
std::optional<Version> LibVersion(const LibInfo& l);
// "libcudart.so.13 13.0 (/usr/local/cuda/lib64/libcudart.so.13)".
std::string DescribeLoaded(const LibInfo& l);
std::string DescribeMissing(const LibInfo& l);
// The soname's major ("libcudart.so.13" -> 13).
std::optional<int> SonameMajor(const std::string& soname);

class Evaluator {
 public:
  Evaluator(const Snapshot& s, const Matrix& m) : s_(s), m_(m) {}

  AdmissionReport Run();

 private:
  void Add(CheckResult r, FailureKind k, std::string id, std::string title, std::string found,
           std::string required, std::string cause) {
    report_.checks.push_back({std::move(id), std::move(title), r, k, std::move(found),
                              std::move(required), std::move(cause)});
  }
  void Pass(std::string id, std::string title, std::string found, std::string required = "") {
    Add(CheckResult::kPass, FailureKind::kNone, std::move(id), std::move(title), std::move(found),
        std::move(required), "");
  }
  void Warn(std::string id, std::string title, std::string found, std::string required,
            std::string cause) {
    Add(CheckResult::kWarn, FailureKind::kNone, std::move(id), std::move(title), std::move(found),
        std::move(required), std::move(cause));
  }
  void Drift(std::string id, std::string title, std::string found, std::string required,
             std::string cause) {
    Add(CheckResult::kFail, FailureKind::kDrift, std::move(id), std::move(title), std::move(found),
        std::move(required), std::move(cause));
  }
  // An integrity failure. A development matrix (require_gpu: false) downgrades it to WARN unless
  // `hard` (ONNX Runtime itself missing: then nothing can run, CPU included).
  void Integrity(std::string id, std::string title, std::string found, std::string required,
                 std::string cause, bool hard = false) {
    bool downgrade = !m_.require_gpu && !hard;
    Add(downgrade ? CheckResult::kWarn : CheckResult::kFail, FailureKind::kIntegrity, std::move(id),
        std::move(title), std::move(found), std::move(required),
        downgrade ? "dev policy, CPU allowed: " + cause : std::move(cause));
  }

  void CheckEnvironment();
  void CheckDeviceNodes();
  void CheckDriver();
  void CheckDriverLibrary();
  void CheckNvml();
  void CheckCuInit();
  void CheckDriverVersions();
  void CheckCudaLibraries();
  void CheckCudaVersions();
  void CheckCudnnPairing();
  void CheckTensorRt();
  void CheckOrt();
  void CheckOrtCore();
  void CheckOrtProviders();
  void CheckCoreFlavor();
  void CheckProviderCudaMajors();
  void CheckDevices();
  struct DeviceFact {
    int index;
    std::string name;
    std::optional<std::string> cc;
    std::optional<std::uint64_t> mem;
  };
  std::vector<DeviceFact> DeviceFacts() const;
  void CheckDeviceCount();
  void CheckComputeCapability(const std::vector<DeviceFact>& devs);
  void CheckDeviceMemory(const std::vector<DeviceFact>& devs);
  void CheckMig();
  void Finish();

  int RuntimeCudaMajor() const;
  std::optional<Version> DriverVersion() const;
  std::optional<Version> DriverCudaVersion() const;
  bool CudaInitOk() const { return s_.cuda_driver.init && s_.cuda_driver.init->code == 0; }

  const Snapshot& s_;
  const Matrix& m_;
  AdmissionReport report_;
};

}  // namespace tg::policy::internal
