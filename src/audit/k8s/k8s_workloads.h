// Where a Kubernetes object keeps its pods, and what those pods are for.
//
// LocateWorkload knows the pod-template paths of the built-in workloads and of the well-known
// custom resources that run pods (paths relative to the object; `[i]` is every list element and
// `<Role>` every key of the map):
//   Pod                                   spec
//   Deployment, StatefulSet, DaemonSet,   spec.template.spec
//   ReplicaSet, ReplicationController, Job
//   CronJob                               spec.jobTemplate.spec.template.spec
//   Rollout (argoproj.io)                 spec.template.spec (or spec.workloadRef: pods of a
//                                         Deployment that is audited where it is in the input)
//   Service (serving.knative.dev)         spec.template.spec
//   RayCluster (ray.io)                   spec.headGroupSpec.template.spec,
//                                         spec.workerGroupSpecs[i].template.spec
//   RayService (ray.io)                   spec.rayClusterConfig.<as RayCluster>
//   RayJob (ray.io)                       spec.rayClusterSpec.<as RayCluster>,
//                                         spec.submitterPodTemplate.spec
//   InferenceService (serving.kserve.io)  spec.predictor, spec.transformer, spec.explainer (each a
//                                         pod spec; predictor.model and the framework keys such as
//                                         predictor.onnx/triton are containers whose image comes
//                                         from a ServingRuntime)
//   ServingRuntime, ClusterServingRuntime spec
//   PyTorchJob, TFJob, MPIJob, XGBoostJob, spec.<x>ReplicaSpecs.<Role>.template.spec
//   PaddleJob, JAXJob (kubeflow.org)
//   Job (batch.volcano.sh)                spec.tasks[i].template.spec
//   JobSet (jobset.x-k8s.io)              spec.replicatedJobs[i].template.spec.template.spec
//   LeaderWorkerSet (leaderworkerset.x-k8s.io)
//                                         spec.leaderWorkerTemplate.leaderTemplate.spec,
//                                         spec.leaderWorkerTemplate.workerTemplate.spec
// Any other object is searched for pod specs (a `containers` list of mappings) so that a pod
// nobody audited is reported rather than passed.
//
// DecideRole says what a workload's pods are: an inference server (long-running), a batch job, or
// a cluster system component (device plugin, GPU feature discovery, DCGM exporter, GPU operator
// operands, node-level agents). The annotation truegreen.dev/role (inference-server | batch |
// system) on the pod template or the object overrides the decision.
//
// Thread safety: pure functions. Failure: DecideRole returns INVALID_ARG for an unknown role value.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace tg::audit {

inline constexpr const char* kRoleAnnotation = "truegreen.dev/role";

enum class WorkloadRole { kInferenceServer, kBatch, kSystem };

// "inference-server" | "batch" | "system".
std::string_view WorkloadRoleName(WorkloadRole r);
std::optional<WorkloadRole> ParseWorkloadRole(std::string_view s);  // nullopt for another

struct PodTemplate {
  YAML::Node spec;      // the pod spec mapping
  std::string path;     // "spec.template.spec"
  YAML::Node metadata;  // the pod template's metadata (Undefined when it has none)
  // Container mappings outside spec.containers (KServe `model` and framework keys), with paths.
  std::vector<std::pair<YAML::Node, std::string>> extra_containers;
};

struct WorkloadShape {
  bool known = false;               // a kind of the table above
  bool long_running = false;        // serves until stopped (probes matter)
  bool operator_probes = false;     // the operator adds probes itself (KubeRay)
  std::vector<PodTemplate> pods;    // found at the known paths
  std::string note;                 // why a known kind has no pods here (Rollout workloadRef)
  std::vector<std::string> expect;  // the known paths, for "no pod spec at ..." messages
};

// The pod templates of `obj` at the paths of the table above (none for another kind). Pure.
WorkloadShape LocateWorkload(const YAML::Node& obj);

// Paths of mappings under `obj` that look like pod specs (a non-empty `containers` sequence whose
// elements are mappings with `name` or `image`), at most `max` of them.
std::vector<std::string> FindPodSpecPaths(const YAML::Node& obj, std::size_t max = 8);

struct RoleDecision {
  WorkloadRole role = WorkloadRole::kInferenceServer;
  std::string reason;  // "DaemonSet mounting the kubelet device-plugin socket directory"
};

// `kind` the object's kind; `images` the pod's container images (after kustomize images).
common::Result<RoleDecision> DecideRole(const YAML::Node& obj, const std::string& source,
                                        const PodTemplate& pod, const WorkloadShape& shape,
                                        const std::vector<std::string>& images);

// The well-known NVIDIA/Kubernetes system component an image is ("the NVIDIA device plugin"), or
// "" when it is none of them.
std::string SystemComponentOfImage(std::string_view image);

}  // namespace tg::audit
