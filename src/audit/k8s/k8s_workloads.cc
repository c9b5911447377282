// The pod-template table and the role decision. Kinds are matched together with their API group
// because names collide: Knative's `Service` and Volcano's `Job` are not the core kinds.
#include "audit/k8s/k8s_workloads.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "audit/k8s/k8s_yaml.h"
#include "common/config.h"
#include "common/strings.h"

namespace tg::audit {
namespace {

using common::Status;

std::string GroupOf(const YAML::Node& obj) {
  std::string av = YamlScalar(YamlChild(obj, "apiVersion"));
  std::size_t slash = av.find('/');
  return slash == std::string::npos ? "" : av.substr(0, slash);
}

// Adds the pod template `tmpl` (a PodTemplateSpec: metadata + spec) found at `path`.
void AddTemplate(const YAML::Node& tmpl, const std::string& path, WorkloadShape* w) {
  w->expect.push_back(path + ".spec");
  YAML::Node spec = YamlChild(tmpl, "spec");
  if (!spec.IsDefined() || !spec.IsMap()) return;
  w->pods.push_back({spec, path + ".spec", YamlChild(tmpl, "metadata"), {}});
}

void AddRayCluster(const YAML::Node& rc, const std::string& path, WorkloadShape* w) {
  AddTemplate(YamlChild(YamlChild(rc, "headGroupSpec"), "template"),
              path + ".headGroupSpec.template", w);
  YAML::Node workers = YamlChild(rc, "workerGroupSpecs");
  if (!workers.IsSequence()) return;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    AddTemplate(YamlChild(workers[i], "template"),
                fmt::format("{}.workerGroupSpecs[{}].template", path, i), w);
  }
}

// KServe components: the component itself is a pod spec; the model and the older framework keys
// are containers whose image the ServingRuntime supplies.
void AddKServe(const YAML::Node& spec, WorkloadShape* w) {
  static const char* kFrameworks[] = {"model",       "sklearn", "xgboost", "tensorflow", "pytorch",
                                      "triton",      "onnx",    "pmml",    "lightgbm",   "paddle",
                                      "huggingface", "alibi",   "art"};
  for (const char* comp : {"predictor", "transformer", "explainer"}) {
    YAML::Node c = YamlChild(spec, comp);
    std::string path = fmt::format("spec.{}", comp);
    w->expect.push_back(path);
    if (!c.IsDefined() || !c.IsMap()) continue;
    PodTemplate t{c, path, YamlChild(spec, "metadata"), {}};
    for (const char* fw : kFrameworks) {
      YAML::Node m = YamlChild(c, fw);
      if (m.IsDefined() && m.IsMap()) t.extra_containers.emplace_back(m, path + "." + fw);
    }
    w->pods.push_back(std::move(t));
  }
}

void AddKubeflow(const YAML::Node& spec, WorkloadShape* w) {
  if (!spec.IsMap()) return;
  for (auto it = spec.begin(); it != spec.end(); ++it) {
    std::string key = YamlScalar(it->first);
    if (!key.ends_with("ReplicaSpecs") || !it->second.IsMap()) continue;
    for (auto r = it->second.begin(); r != it->second.end(); ++r) {
      AddTemplate(YamlChild(r->second, "template"),
                  fmt::format("spec.{}.{}.template", key, YamlScalar(r->first)), w);
    }
  }
}

void AddIndexed(const YAML::Node& seq, const std::string& path, const std::string& suffix,
                const std::vector<std::string>& keys, WorkloadShape* w) {
  if (!seq.IsSequence()) return;
  for (std::size_t i = 0; i < seq.size(); ++i) {
    YAML::Node n = seq[i];
    for (const std::string& k : keys) n = YamlChild(n, k);
    AddTemplate(n, fmt::format("{}[{}]{}", path, i, suffix), w);
  }
}

void Walk(const YAML::Node& n, const std::string& path, int depth, std::size_t max,
          std::vector<std::string>* out) {
  if (out->size() >= max || depth > 24) return;
  if (n.IsMap()) {
    YAML::Node cs = YamlChild(n, "containers");
    if (cs.IsSequence() && cs.size() > 0 && cs[0].IsMap() &&
        (YamlPresent(YamlChild(cs[0], "image")) || YamlPresent(YamlChild(cs[0], "name")))) {
      out->push_back(path.empty() ? "." : path);
      return;
    }
    for (auto it = n.begin(); it != n.end(); ++it) {
      std::string key = YamlScalar(it->first);
      Walk(it->second, path.empty() ? key : path + "." + key, depth + 1, max, out);
    }
  } else if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i) {
      Walk(n[i], fmt::format("{}[{}]", path, i), depth + 1, max, out);
    }
  }
}

struct SystemImage {
  std::string_view base;  // last path component of the repository
  const char* what;
};

bool HostPathUnder(const YAML::Node& spec, std::string_view prefix) {
  YAML::Node vols = YamlChild(spec, "volumes");
  if (!vols.IsSequence()) return false;
  for (const auto& v : vols) {
    std::string p = YamlScalar(YamlChild(YamlChild(v, "hostPath"), "path"));
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    if (!p.empty() && (p == prefix || p.starts_with(std::string(prefix) + "/"))) return true;
  }
  return false;
}

bool AnyHostPath(const YAML::Node& spec) {
  YAML::Node vols = YamlChild(spec, "volumes");
  if (!vols.IsSequence()) return false;
  for (const auto& v : vols) {
    if (YamlPresent(YamlChild(v, "hostPath"))) return true;
  }
  return false;
}

bool AnyGpuLimit(const YAML::Node& spec) {
  for (const char* key : {"containers", "initContainers"}) {
    YAML::Node cs = YamlChild(spec, key);
    if (!cs.IsSequence()) continue;
    for (const auto& c : cs) {
      YAML::Node lim = YamlChild(YamlChild(c, "resources"), "limits");
      if (!lim.IsMap()) continue;
      for (auto it = lim.begin(); it != lim.end(); ++it) {
        std::string k = YamlScalar(it->first);
        if (k == "nvidia.com/gpu" || k.starts_with("nvidia.com/mig-")) return true;
      }
    }
  }
  return false;
}

// The annotation on the pod template wins over the object's.
YAML::Node RoleAnnotation(const YAML::Node& obj, const PodTemplate& pod) {
  YAML::Node a = YamlChild(YamlChild(pod.metadata, "annotations"), kRoleAnnotation);
  if (YamlPresent(a)) return a;
  return YamlChild(YamlChild(YamlChild(obj, "metadata"), "annotations"), kRoleAnnotation);
}

}  // namespace

std::string_view WorkloadRoleName(WorkloadRole r) {
  switch (r) {
    case WorkloadRole::kInferenceServer:
      return "inference-server";
    case WorkloadRole::kBatch:
      return "batch";
    case WorkloadRole::kSystem:
      return "system";
  }
  return "inference-server";
}

std::optional<WorkloadRole> ParseWorkloadRole(std::string_view s) {
  for (WorkloadRole r :
       {WorkloadRole::kInferenceServer, WorkloadRole::kBatch, WorkloadRole::kSystem}) {
    if (s == WorkloadRoleName(r)) return r;
  }
  return std::nullopt;
}

WorkloadShape LocateWorkload(const YAML::Node& obj) {
  WorkloadShape w;
  std::string kind = YamlScalar(YamlChild(obj, "kind"));
  std::string group = GroupOf(obj);
  YAML::Node spec = YamlChild(obj, "spec");
  static const std::set<std::string> kCoreTemplate = {"Deployment", "StatefulSet", "DaemonSet",
                                                      "ReplicaSet", "ReplicationController"};
  static const std::set<std::string> kCoreGroups = {"", "apps", "batch", "extensions"};
  bool core = kCoreGroups.count(group) != 0;
  w.known = true;
  if (core && kind == "Pod") {
    w.long_running = true;
    w.expect.push_back("spec");
    if (spec.IsMap()) w.pods.push_back({spec, "spec", YamlChild(obj, "metadata"), {}});
  } else if (core && (kCoreTemplate.count(kind) != 0 || kind == "Job")) {
    w.long_running = kind != "Job";
    AddTemplate(YamlChild(spec, "template"), "spec.template", &w);
  } else if (core && kind == "CronJob") {
    AddTemplate(YamlChild(YamlChild(YamlChild(spec, "jobTemplate"), "spec"), "template"),
                "spec.jobTemplate.spec.template", &w);
  } else if (group == "argoproj.io" && kind == "Rollout") {
    w.long_running = true;
    AddTemplate(YamlChild(spec, "template"), "spec.template", &w);
    std::string ref = YamlScalar(YamlChild(YamlChild(spec, "workloadRef"), "name"));
    if (w.pods.empty() && !ref.empty()) {
      w.note = fmt::format(
          "pods come from spec.workloadRef (Deployment '{}'), audited where that "
          "Deployment is part of the input",
          ref);
    }
  } else if (group == "serving.knative.dev" && kind == "Service") {
    w.long_running = true;
    AddTemplate(YamlChild(spec, "template"), "spec.template", &w);
  } else if (group == "ray.io" &&
             (kind == "RayCluster" || kind == "RayService" || kind == "RayJob")) {
    w.long_running = kind != "RayJob";
    w.operator_probes = true;
    if (kind == "RayCluster") AddRayCluster(spec, "spec", &w);
    if (kind == "RayService")
      AddRayCluster(YamlChild(spec, "rayClusterConfig"), "spec.rayClusterConfig", &w);
    if (kind == "RayJob") {
      AddRayCluster(YamlChild(spec, "rayClusterSpec"), "spec.rayClusterSpec", &w);
      YAML::Node sub = YamlChild(spec, "submitterPodTemplate");
      if (YamlPresent(sub)) AddTemplate(sub, "spec.submitterPodTemplate", &w);
    }
  } else if (group == "serving.kserve.io" && kind == "InferenceService") {
    w.long_running = true;
    AddKServe(spec, &w);
  } else if (group == "serving.kserve.io" &&
             (kind == "ServingRuntime" || kind == "ClusterServingRuntime")) {
    w.long_running = true;
    w.expect.push_back("spec");
    if (spec.IsMap()) w.pods.push_back({spec, "spec", YAML::Node(), {}});
  } else if (group == "kubeflow.org" && kind.ends_with("Job")) {
    AddKubeflow(spec, &w);
  } else if (group == "batch.volcano.sh" && kind == "Job") {
    AddIndexed(YamlChild(spec, "tasks"), "spec.tasks", ".template", {"template"}, &w);
  } else if (group == "jobset.x-k8s.io" && kind == "JobSet") {
    AddIndexed(YamlChild(spec, "replicatedJobs"), "spec.replicatedJobs", ".template.spec.template",
               {"template", "spec", "template"}, &w);
  } else if (group == "leaderworkerset.x-k8s.io" && kind == "LeaderWorkerSet") {
    w.long_running = true;
    YAML::Node lwt = YamlChild(spec, "leaderWorkerTemplate");
    if (YamlPresent(YamlChild(lwt, "leaderTemplate"))) {
      AddTemplate(YamlChild(lwt, "leaderTemplate"), "spec.leaderWorkerTemplate.leaderTemplate", &w);
    }
    AddTemplate(YamlChild(lwt, "workerTemplate"), "spec.leaderWorkerTemplate.workerTemplate", &w);
  } else {
    w.known = false;
  }
  return w;
}

std::vector<std::string> FindPodSpecPaths(const YAML::Node& obj, std::size_t max) {
  std::vector<std::string> out;
  Walk(obj, "", 0, max, &out);
  return out;
}

std::string SystemComponentOfImage(std::string_view image) {
  std::string ref = common::Lower(image);
  ref = ref.substr(0, ref.find('@'));
  std::size_t slash = ref.rfind('/');
  std::size_t colon = ref.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    ref.resize(colon);
  }
  slash = ref.rfind('/');
  std::string base = slash == std::string::npos ? ref : ref.substr(slash + 1);
  std::string parent;
  if (slash != std::string::npos) {
    std::string head = ref.substr(0, slash);
    std::size_t s2 = head.rfind('/');
    parent = s2 == std::string::npos ? head : head.substr(s2 + 1);
  }
  static const std::map<std::string, const char*> kBases = {
      {"k8s-device-plugin", "the GPU device plugin"},
      {"gpu-feature-discovery", "GPU feature discovery"},
      {"dcgm-exporter", "the DCGM exporter"},
      {"dcgm", "the DCGM host engine"},
      {"gpu-operator", "the NVIDIA GPU operator"},
      {"gpu-operator-validator", "the GPU operator validator"},
      {"k8s-driver-manager", "the GPU operator driver manager"},
      {"container-toolkit", "the NVIDIA container toolkit installer"},
      {"k8s-mig-manager", "the MIG manager"},
      {"vgpu-device-manager", "the vGPU device manager"},
      {"k8s-kata-manager", "the GPU operator Kata manager"},
      {"k8s-cc-manager", "the GPU operator confidential-computing manager"},
      {"kubevirt-gpu-device-plugin", "the KubeVirt GPU device plugin"},
      {"node-feature-discovery", "node feature discovery"},
      {"intel-gpu-plugin", "the Intel GPU device plugin"},
  };
  auto it = kBases.find(base);
  if (it != kBases.end()) return it->second;
  if (parent == "nvidia" && (base == "driver" || base == "vgpu-manager")) {
    return "the NVIDIA driver container";
  }
  return "";
}

common::Result<RoleDecision> DecideRole(const YAML::Node& obj, const std::string& source,
                                        const PodTemplate& pod, const WorkloadShape& shape,
                                        const std::vector<std::string>& images) {
  YAML::Node ann = RoleAnnotation(obj, pod);
  if (YamlPresent(ann)) {
    std::string v = YamlScalar(ann);
    if (auto r = ParseWorkloadRole(v)) {
      return RoleDecision{*r, fmt::format("annotation {}", kRoleAnnotation)};
    }
    return Status::InvalidArg(
        fmt::format("{}: annotation {} is '{}'; required: inference-server, batch or system",
                    common::YamlWhere(ann, source), kRoleAnnotation, v.substr(0, 64)));
  }
  std::string kind = YamlScalar(YamlChild(obj, "kind"));
  if (kind == "DaemonSet" && HostPathUnder(pod.spec, "/var/lib/kubelet/device-plugins")) {
    return RoleDecision{WorkloadRole::kSystem,
                        "a DaemonSet mounting the kubelet device-plugin socket directory"};
  }
  for (const std::string& image : images) {
    std::string what = SystemComponentOfImage(image);
    if (!what.empty()) {
      return RoleDecision{WorkloadRole::kSystem, fmt::format("image of {}", what)};
    }
  }
  if (kind == "DaemonSet" && AnyHostPath(pod.spec) && !AnyGpuLimit(pod.spec)) {
    return RoleDecision{WorkloadRole::kSystem,
                        "a node-level DaemonSet (host paths, no GPU requested)"};
  }
  if (!shape.long_running) return RoleDecision{WorkloadRole::kBatch, "a run-to-completion kind"};
  return RoleDecision{WorkloadRole::kInferenceServer, "a long-running workload"};
}

}  // namespace tg::audit
