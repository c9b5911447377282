// `truegreen k8s render`: the Kubernetes objects that run truegreen for one version matrix.
//
// Renders, in order: a ConfigMap holding the matrix file, the Deployment (startup/readiness probes
// on /readyz, liveness on /healthz, nvidia.com/gpu (or MIG) in limits, node affinity derived from
// the matrix through GPU Feature Discovery labels, NVIDIA_DRIVER_CAPABILITIES from the matrix,
// cpu/memory requests and limits, a hardened security context), the Service, a Prometheus
// Operator PodMonitor (port http, path /metrics) and the node-admission Job that runs
// `truegreen admit --matrix` on a GPU node of the same class. Everything it renders passes
// `truegreen audit k8s --matrix` for the same matrix when the image is pinned by digest (a test
// holds this).
//
// Failure behaviour: pure; never fails. Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "audit/k8s_audit.h"
#include "common/config.h"
#include "policy/matrix.h"

namespace tg::audit {

// Rendered objects keep their keys in Kubernetes' conventional order (apiVersion, kind, metadata).
using RenderJson = nlohmann::ordered_json;

struct K8sRenderOptions {
  std::string name = "truegreen";
  std::string image = "truegreen";  // should be name@sha256:<digest>
  std::string matrix_text;          // the matrix file, stored in the ConfigMap verbatim
  int port = 8000;                  // HTTP port: /healthz, /readyz, /metrics, inference
  std::string cpu = "2";
  std::string memory = "8Gi";
};

// The node affinity (requiredDuringSchedulingIgnoredDuringExecution) for the requirements: one
// nodeSelectorTerm, or two when the minimum compute capability has a non-zero minor (terms OR).
RenderJson RenderNodeAffinity(const GpuNodeRequirements& req);

// The objects, in the order listed above.
std::vector<RenderJson> RenderK8sObjects(const policy::Matrix& matrix,
                                         const K8sRenderOptions& options);

// Block-style YAML for a JSON value; strings that YAML would read as another type (numbers,
// booleans, null, special characters) are double-quoted, multi-line strings use `|` blocks.
std::string JsonToYaml(const RenderJson& value);
// Multi-document YAML ("---" between documents).
std::string JsonToYamlDocuments(const std::vector<RenderJson>& docs);

}  // namespace tg::audit
