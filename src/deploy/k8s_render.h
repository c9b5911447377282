// `truegreen k8s render`: the Kubernetes objects that run truegreen for one version matrix.
//
// Renders, in order: a ConfigMap holding the matrix file, the Deployment (startup/readiness probes
// on /readyz, liveness on /healthz, nvidia.com/gpu (or MIG) in limits, node affinity derived from
// the matrix through GPU Feature Discovery labels, NVIDIA_DRIVER_CAPABILITIES from the matrix,
// cpu/memory requests and limits, a hardened security context, the model repository mounted
// read-only at /models from a PersistentVolumeClaim), the Service, a Prometheus Operator
// PodMonitor (port http, path /metrics), the node-admission Job that runs `truegreen admit
// --matrix` on a GPU node of the same class, an autoscaling/v2 HorizontalPodAutoscaler on the
// per-pod queue depth (nv_inference_pending_request_count through the Prometheus adapter), the
// adapter's rule as a ConfigMap, and a PrometheusRule alerting on the degraded path.
//
// With Rollout::kBlueGreen (docs/DEPLOY.md "Blue-green"): a ConfigMap with the bench (SLO) file,
// two Deployments <name>-blue and <name>-green (label truegreen.dev/color), the Service <name>
// selecting the live colour, one preview Service per colour, an HPA per colour, the gate's
// ServiceAccount, Role (get/patch on the one Service, get/update on the baseline ConfigMap, get
// on the two Deployments, all by resourceNames) and RoleBinding, and the gate Job that promotes
// the other colour: `truegreen k8s wait-ready`, `truegreen bench`, `truegreen compare --fail-on`
// (init containers, in order) and `truegreen k8s promote`.
//
// Everything it renders passes `truegreen audit k8s --matrix` for the same matrix when the image
// is pinned by digest (a test holds this).
//
// Failure behaviour: pure; never fails (the CLI validates the options first). Thread safety: pure
// functions.
#pragma once

#include <string>
#include <vector>

#include "audit/k8s/k8s_audit.h"
#include "common/config.h"
#include "policy/matrix.h"

namespace tg::deploy {

// Rendered objects keep their keys in Kubernetes' conventional order (apiVersion, kind, metadata).
using RenderJson = nlohmann::ordered_json;

enum class Rollout { kSingle, kBlueGreen };

// The label that tells the colours apart and that the live Service selects on.
inline constexpr const char* kColorLabel = "truegreen.dev/color";
// The server's queue-depth gauge (Triton's name), the HPA's Pods metric.
inline constexpr const char* kQueueDepthMetric = "nv_inference_pending_request_count";

struct K8sRenderOptions {
  std::string name = "truegreen";
  std::string image = "truegreen";  // should be name@sha256:<digest>; the candidate colour's
  std::string matrix_text;          // the matrix file, stored in the ConfigMap verbatim
  int port = 8000;                  // HTTP port: /healthz, /readyz, /metrics, inference
  std::string cpu = "2";
  std::string memory = "8Gi";
  std::string models_pvc;  // PersistentVolumeClaim with the model repository; "" = <name>-models
  int min_replicas = 1;    // HPA bounds (per colour under blue-green)
  int max_replicas = 4;
  int target_queue_depth = 4;   // HPA target: average pending requests per pod
  double gpu_util_floor = 0.5;  // alert when nv_gpu_utilization is below while requests queue
  Rollout rollout = Rollout::kSingle;
  std::string live = "blue";  // blue-green: the colour the Service selects now
  std::string live_image;     // blue-green: the live colour's image ("" = image)
  std::string bench_text;     // blue-green: the bench (SLO) file, stored in a ConfigMap
  std::vector<std::string> fail_on = {"p95 +10%", "throughput -10%"};  // compare gates
};

// "<name>-models" unless set.
std::string ModelsClaim(const K8sRenderOptions& o);
// The colour the gate Job promotes: the one that is not live.
std::string CandidateColor(const K8sRenderOptions& o);

// The node affinity (requiredDuringSchedulingIgnoredDuringExecution) for the requirements: one
// nodeSelectorTerm, or two when the minimum compute capability has a non-zero minor (terms OR).
RenderJson RenderNodeAffinity(const audit::GpuNodeRequirements& req);

// The objects, in the order listed above.
std::vector<RenderJson> RenderK8sObjects(const policy::Matrix& matrix,
                                         const K8sRenderOptions& options);

// Block-style YAML for a JSON value; strings that YAML would read as another type (numbers,
// booleans, null, special characters) are double-quoted, multi-line strings use `|` blocks.
std::string JsonToYaml(const RenderJson& value);
// Multi-document YAML ("---" between documents).
std::string JsonToYamlDocuments(const std::vector<RenderJson>& docs);

}  // namespace tg::deploy
