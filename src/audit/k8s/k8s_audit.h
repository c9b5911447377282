// `truegreen audit k8s`: GPU hygiene rules over Kubernetes manifests (multi-document YAML) and
// kustomize bases.
//
// Workloads read: the built-in kinds and the well-known custom resources of k8s_workloads.h, and
// List items. Each pod template gets a role (inference-server, batch, system) that chooses its
// rules. An object of another kind that holds pod specs is a k8s.not-audited error (its pods were
// not read, so it cannot pass); objects without pods (Service, ConfigMap, ...) are listed as
// skipped. Rules (stable ids; docs/AUDIT_CONFIG.md):
//   k8s.gpu-request          a GPU container (NVIDIA_* env, CUDA/TensorRT/truegreen image or
//                            arguments) has no nvidia.com/gpu or
//                            nvidia.com/mig-* in resources.limits, asks for fewer devices than the
//                            matrix, or contradicts the matrix's MIG expectation. A container
//                            with NVIDIA_VISIBLE_DEVICES=void opts out, unless it is a truegreen
//                            container running a GPU command (only bench, compare, k8s, audit,
//                            diff, logscan, help, tokenize and schedule run without a GPU)
//   k8s.visible-devices-all  NVIDIA_VISIBLE_DEVICES=all on a container without a GPU limit (it
//                            sees every GPU of the node behind the device plugin's back; "void"
//                            means no GPU injection and is not reported)
//   k8s.probes               a long-running GPU container lacks startup/readiness/liveness probes;
//                            truegreen containers must probe httpGet /readyz (startup, readiness)
//                            and /healthz (liveness)
//   k8s.node-affinity        (with a matrix) a nodeSelectorTerm admits nodes whose GPU Feature
//                            Discovery labels violate the matrix (driver, CUDA, compute
//                            capability, memory)
//   k8s.resources            requests.cpu, requests.memory or limits.memory missing
//   k8s.image-digest         image not pinned by @sha256 digest
//   k8s.secret-env           an env value that is a literal secret (by name or value shape)
//   k8s.cuda-stubs           LD_LIBRARY_PATH holds CUDA's stubs folder
//   k8s.not-audited          an object of an unknown kind holds pod specs (error)
//   and the pod security rules of k8s_security.h (privileged, capabilities, host namespaces and
//   paths, root, runtime class, read-only cache paths).
// Kustomize directories are built by kustomize.h first; every input is bounded by k8s_yaml.h.
// A system component (role system) is not held to gpu-request, visible-devices-all, probes and
// node-affinity; its privileged/host rules are reported as info; digest and resources still hold.
//
// Failure behaviour: Status INVALID_ARG/NOT_FOUND (exit 2) for unreadable files, malformed YAML
// (file:line:col), a document that is not a mapping or has no `kind`, a bad kustomization.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "audit/k8s/k8s_yaml.h"
#include "audit/report/finding.h"
#include "audit/report/finding_cap.h"
#include "common/config.h"
#include "common/status.h"
#include "policy/matrix.h"

namespace tg::audit {

// What the matrix asks of a node, in terms of GPU Feature Discovery labels.
struct GpuNodeRequirements {
  std::optional<int> driver_major_min;              // nvidia.com/cuda.driver-version.major >= this
  std::optional<int> driver_branch;                 // ... and == this
  std::string driver_text;                          // "580.65.06" (for messages)
  std::optional<int> cuda_major_min;                // nvidia.com/cuda.runtime-version.major >= this
  std::optional<int> compute_major, compute_minor;  // nvidia.com/gpu.compute.{major,minor} >=
  std::optional<std::int64_t> memory_mib_min;       // nvidia.com/gpu.memory >= (MiB)
  int device_count = 0;                             // GPUs a truegreen container must request
  policy::MigExpectation mig = policy::MigExpectation::kAny;
  bool require_gpu = true;
};

// What a GPU node must offer under `m`, as GPU Feature Discovery labels can state it. Pure.
GpuNodeRequirements NodeRequirementsFromMatrix(const policy::Matrix& m);

// GFD label keys.
inline constexpr const char* kLabelDriverMajor = "nvidia.com/cuda.driver-version.major";
inline constexpr const char* kLabelCudaMajor = "nvidia.com/cuda.runtime-version.major";
inline constexpr const char* kLabelComputeMajor = "nvidia.com/gpu.compute.major";
inline constexpr const char* kLabelComputeMinor = "nvidia.com/gpu.compute.minor";
inline constexpr const char* kLabelMemory = "nvidia.com/gpu.memory";
inline constexpr const char* kLabelMigStrategy = "nvidia.com/mig.strategy";

struct K8sFinding {
  Finding finding;        // rule, severity, path (file), line, message, fix
  int document = 0;       // 1-based document index in the file
  std::string object;     // "Deployment/truegreen"
  std::string container;  // container name, "" for pod-level findings
  std::string field;      // dotted path: spec.template.spec.containers[0].resources.limits
};

// One pod template that was audited, and the role its rules were chosen by (k8s_workloads.h).
struct K8sAuditedPod {
  std::string file;
  int document = 0;
  std::string object;  // "RayService/sd"
  std::string path;    // "spec.rayClusterConfig.headGroupSpec.template.spec"
  std::string role;    // "inference-server" | "batch" | "system"
  std::string reason;  // why that role
};

struct K8sAuditReport {
  // At most cap.max() findings, the first in input order: the audit functions below trim after
  // every document, so the rest are only counted in `cap` (audit/report/finding_cap.h).
  std::vector<K8sFinding> findings;
  FindingCap cap;
  int documents = 0;
  int workloads = 0;  // pod templates audited
  int containers = 0;
  std::vector<K8sAuditedPod> audited;
  std::vector<std::string> skipped;      // "file#2 Service/truegreen": no pods in it
  std::vector<std::string> not_audited;  // objects with pod specs of an unknown kind
  std::vector<std::string> renderers;    // "DIR: kubectl kustomize" per kustomize directory
};

struct K8sAuditOptions {
  std::optional<GpuNodeRequirements> requirements;  // node-affinity rule runs only with these
  std::string runtime_class;  // the cluster's GPU RuntimeClass ("" = none): k8s.runtime-class
  // How a kustomize directory is rendered: "" = the built-in reader (kustomize.h), else an
  // external command such as "kubectl kustomize" (RenderWithKustomize).
  std::string kustomize;
};

// One entry of a kustomization's `images:` list.
struct KustomizeImage {
  std::string name;      // image name to match (without tag/digest)
  std::string new_name;  // replacement name, "" = keep
  std::string new_tag;   // replacement tag, "" = keep
  std::string digest;    // "sha256:...", replaces the tag when set
};
// The image reference after kustomize's images transformer (unchanged when nothing matches).
std::string ApplyKustomizeImages(const std::string& image, const std::vector<KustomizeImage>& l);

// Audits the documents of one YAML text; `images` is the kustomize images transformer to apply
// first (empty for a plain manifest).
common::Status AuditK8sText(const std::string& text, const std::string& source,
                            const K8sAuditOptions& options, K8sAuditReport* report,
                            const std::vector<KustomizeImage>& images = {});

// Audits parsed documents of one source. Fails (INVALID_ARG) before any rule runs when a document
// breaks `bounds` (cycle, depth, alias expansion) or when there is no non-empty document at all.
common::Status AuditK8sDocuments(const std::vector<YAML::Node>& docs, const std::string& source,
                                 const YamlBounds& bounds, const K8sAuditOptions& options,
                                 K8sAuditReport* report,
                                 const std::vector<KustomizeImage>& images = {});

// Audits a manifest file, or a directory with a kustomization.yaml (its `resources` files and
// directories, with its `images` transformer applied: name -> newName/newTag/digest).
common::Status AuditK8sPath(const std::string& path, const K8sAuditOptions& options,
                            K8sAuditReport* report);

// After every input is audited: adds the info finding k8s.no-workload when no pod template was
// audited and none was left unaudited (the input holds no workload at all: it says so).
void AddCoverageFindings(K8sAuditReport* report);

// {"documents","workloads","containers","audited":[{file,document,object,path,role,reason}],
// "skipped":[...],"not_audited":[...],"renderers":[...],"findings":[{...Finding, document, object,
// container, field}]}
common::Json K8sReportToJson(const K8sAuditReport& report);
// The parts of that document, for writing it finding by finding (common/json_stream.h): the
// document with "findings" an empty array, and one finding's object.
common::Json K8sReportHeadToJson(const K8sAuditReport& report);
common::Json K8sFindingToJson(const K8sFinding& finding);
// Findings in the shared text format; location details are part of each message.
std::string K8sReportToText(const K8sAuditReport& report);

}  // namespace tg::audit
