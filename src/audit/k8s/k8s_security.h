// Pod security and GPU-isolation rules of `truegreen audit k8s` (ids stable, docs/AUDIT_CONFIG.md):
//   k8s.privileged            securityContext.privileged: true (error)
//   k8s.privilege-escalation  allowPrivilegeEscalation: true (error); not set to false (warning)
//   k8s.capabilities          capabilities.add holds SYS_ADMIN, NET_ADMIN, SYS_PTRACE, SYS_MODULE,
//                             SYS_RAWIO, DAC_READ_SEARCH, BPF, PERFMON, NET_RAW or ALL (error)
//   k8s.host-path             a hostPath volume (error)
//   k8s.host-namespaces       hostNetwork, hostPID or hostIPC: true (error)
//   k8s.run-as-non-root       runAsUser 0 (error); neither runAsNonRoot: true nor a non-zero
//                             runAsUser at pod or container level (warning)
//   k8s.runtime-class         the cluster's GPU runtime class (--runtime-class) is not the pod's
//                             runtimeClassName on a pod that requests GPUs (error)
//   k8s.readonly-cache        an engine/cache path (TensorRT engine cache, CUDA JIT cache, HF
//                             cache) on a container with readOnlyRootFilesystem and no volume
//                             mounted over it (error: the cache write fails at run time)
// Thread safety: pure functions. No failure mode: missing fields are simply not findings.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "audit/report/finding.h"

namespace tg::audit {

struct PodContainerView {
  YAML::Node node;
  std::string name, path;  // path: "spec.containers[0]"
  bool gpu = false;        // requests nvidia.com/gpu or a MIG slice in limits
};

struct PodFinding {
  const char* rule = "";
  Severity severity = Severity::kError;
  int line = 0;
  std::string container;  // "" for pod-level findings
  std::string field, message, fix;
};

struct PodSecurityOptions {
  std::string runtime_class;  // the RuntimeClass GPU pods must use; "" = the cluster uses none
};

// The rules above over one pod spec (`spec`, at `spec_path` in its object) and its containers.
std::vector<PodFinding> PodSecurityFindings(const YAML::Node& spec, const std::string& spec_path,
                                            const std::vector<PodContainerView>& containers,
                                            const PodSecurityOptions& options);

}  // namespace tg::audit
