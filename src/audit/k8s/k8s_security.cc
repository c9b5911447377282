// Pod security rules. Defaults matter: allowPrivilegeEscalation defaults to true and a container
// runs as the image's user (often root) unless the spec says otherwise, so "not set" is reported
// (as a warning) rather than assumed safe.
#include "audit/k8s/k8s_security.h"

#include <fmt/format.h>

#include <set>

#include "audit/k8s/k8s_yaml.h"

namespace tg::audit {
namespace {

struct Out {
  std::vector<PodFinding>* v;
  void Add(const char* rule, Severity s, int line, const std::string& container, std::string field,
           std::string message, std::string fix) {
    v->push_back({rule, s, line, container, std::move(field), std::move(message), std::move(fix)});
  }
};

bool True(const YAML::Node& n) { return YamlScalar(n) == "true"; }

void HostRules(const YAML::Node& spec, const std::string& sp, Out* out) {
  for (const char* key : {"hostNetwork", "hostPID", "hostIPC"}) {
    YAML::Node n = YamlChild(spec, key);
    if (!True(n)) continue;
    out->Add("k8s.host-namespaces", Severity::kError, YamlLine(n), "", sp + "." + key,
             fmt::format("{}: true shares the node's {} namespace with the pod", key,
                         std::string_view(key) == "hostNetwork" ? "network"
                         : std::string_view(key) == "hostPID"   ? "process"
                                                                : "IPC"),
             fmt::format("remove {} (Pod Security Standards 'baseline' forbids it)", key));
  }
  YAML::Node vols = YamlChild(spec, "volumes");
  if (!vols.IsSequence()) return;
  for (std::size_t i = 0; i < vols.size(); ++i) {
    YAML::Node hp = YamlChild(vols[i], "hostPath");
    if (!YamlPresent(hp)) continue;
    out->Add("k8s.host-path", Severity::kError, YamlLine(hp), "",
             fmt::format("{}.volumes[{}].hostPath", sp, i),
             fmt::format("volume '{}' mounts the node's '{}': the pod reads or writes the host "
                         "file system (the device plugin already injects the driver files)",
                         YamlScalar(YamlChild(vols[i], "name")), YamlScalar(YamlChild(hp, "path"))),
             "use an emptyDir, a PVC or a ConfigMap instead");
  }
}

void ContainerPrivilegeRules(const PodContainerView& c, Out* out) {
  YAML::Node sc = YamlChild(c.node, "securityContext");
  std::string scp = c.path + ".securityContext";
  int line = YamlLine(sc) ? YamlLine(sc) : YamlLine(c.node);
  if (True(YamlChild(sc, "privileged"))) {
    out->Add("k8s.privileged", Severity::kError, YamlLine(YamlChild(sc, "privileged")), c.name,
             scp + ".privileged",
             "privileged: true gives the container every device and capability of the node "
             "(all GPUs included, outside the device plugin)",
             "remove privileged; request nvidia.com/gpu in limits for GPU access");
  }
  YAML::Node ape = YamlChild(sc, "allowPrivilegeEscalation");
  if (YamlScalar(ape) != "false") {
    bool explicit_true = True(ape);
    out->Add("k8s.privilege-escalation", explicit_true ? Severity::kError : Severity::kWarning,
             explicit_true ? YamlLine(ape) : line, c.name, scp + ".allowPrivilegeEscalation",
             explicit_true ? "allowPrivilegeEscalation: true lets a process gain more privileges "
                             "than its parent (setuid binaries)"
                           : "allowPrivilegeEscalation is not set to false (it defaults to true)",
             "set securityContext.allowPrivilegeEscalation: false");
  }
  static const std::set<std::string> kDangerous = {
      "SYS_ADMIN",       "NET_ADMIN", "SYS_PTRACE", "SYS_MODULE", "SYS_RAWIO",
      "DAC_READ_SEARCH", "BPF",       "PERFMON",    "NET_RAW",    "ALL"};
  YAML::Node add = YamlChild(YamlChild(sc, "capabilities"), "add");
  if (add.IsSequence()) {
    for (const auto& cap : add) {
      std::string name = YamlScalar(cap);
      std::string bare = name.rfind("CAP_", 0) == 0 ? name.substr(4) : name;
      if (kDangerous.count(bare) == 0) continue;
      out->Add("k8s.capabilities", Severity::kError, YamlLine(cap), c.name,
               scp + ".capabilities.add",
               fmt::format("adds capability {}: close to root on the node", name),
               "drop ALL capabilities and add back only what the process needs (none for "
               "inference)");
    }
  }
}

// runAsNonRoot/runAsUser: the container's setting wins over the pod's.
void RootRule(const YAML::Node& spec, const std::string& sp, const PodContainerView& c, Out* out) {
  YAML::Node psc = YamlChild(spec, "securityContext");
  YAML::Node csc = YamlChild(c.node, "securityContext");
  auto pick = [&](const char* key) {
    YAML::Node v = YamlChild(csc, key);
    return YamlPresent(v) ? v : YamlChild(psc, key);
  };
  YAML::Node user = pick("runAsUser");
  YAML::Node non_root = pick("runAsNonRoot");
  if (YamlScalar(user) == "0") {
    out->Add("k8s.run-as-non-root", Severity::kError, YamlLine(user), c.name,
             c.path + ".securityContext.runAsUser", "runAsUser: 0 runs the container as root",
             "run as an unprivileged user: runAsUser: 65532, runAsNonRoot: true");
    return;
  }
  bool user_set = YamlPresent(user) && YamlScalar(user) != "0";
  if (True(non_root) || user_set) return;
  out->Add("k8s.run-as-non-root", Severity::kWarning, YamlLine(c.node), c.name,
           sp + ".securityContext.runAsNonRoot",
           "neither runAsNonRoot: true nor a non-zero runAsUser: the container runs as whatever "
           "user the image names, often root",
           "set securityContext.runAsNonRoot: true (and runAsUser) on the pod or container");
}

// Environment variables and argument prefixes that name a directory the runtime writes.
const std::vector<std::pair<const char*, bool>>& CacheKeys() {
  // {name, is_env}
  static const std::vector<std::pair<const char*, bool>> k = {
      {"ORT_TENSORRT_ENGINE_CACHE_PATH", true},
      {"ORT_TENSORRT_CACHE_PATH", true},
      {"TRT_ENGINE_CACHE_PATH", true},
      {"CUDA_CACHE_PATH", true},
      {"HF_HOME", true},
      {"TRANSFORMERS_CACHE", true},
      {"trt_engine_cache_path=", false},
      {"--engine-cache=", false},
      {"--cache-dir=", false}};
  return k;
}

std::vector<std::pair<std::string, int>> CachePaths(const PodContainerView& c) {
  std::vector<std::pair<std::string, int>> out;
  YAML::Node env = YamlChild(c.node, "env");
  if (env.IsSequence()) {
    for (const auto& e : env) {
      std::string name = YamlScalar(YamlChild(e, "name"));
      for (const auto& [key, is_env] : CacheKeys()) {
        if (is_env && name == key) out.emplace_back(YamlScalar(YamlChild(e, "value")), YamlLine(e));
      }
    }
  }
  for (const char* key : {"command", "args"}) {
    YAML::Node seq = YamlChild(c.node, key);
    if (!seq.IsSequence()) continue;
    for (const auto& a : seq) {
      std::string s = YamlScalar(a);
      for (const auto& [k, is_env] : CacheKeys()) {
        std::size_t at = s.find(k);
        if (is_env || at == std::string::npos) continue;
        std::string v = s.substr(at + std::string_view(k).size());
        out.emplace_back(v.substr(0, v.find_first_of(", ;")), YamlLine(a));
      }
    }
  }
  return out;
}

void ReadOnlyCacheRule(const PodContainerView& c, Out* out) {
  if (!True(YamlChild(YamlChild(c.node, "securityContext"), "readOnlyRootFilesystem"))) return;
  std::vector<std::string> mounts;
  YAML::Node vm = YamlChild(c.node, "volumeMounts");
  if (vm.IsSequence()) {
    for (const auto& m : vm) {
      if (YamlScalar(YamlChild(m, "readOnly")) != "true") {
        mounts.push_back(YamlScalar(YamlChild(m, "mountPath")));
      }
    }
  }
  for (const auto& [path, line] : CachePaths(c)) {
    if (path.empty() || path[0] != '/') continue;
    bool covered = false;
    for (std::string m : mounts) {
      while (m.size() > 1 && m.back() == '/') m.pop_back();
      if (!m.empty() && (path == m || path.rfind(m + "/", 0) == 0 || m == "/")) covered = true;
    }
    if (covered) continue;
    out->Add(
        "k8s.readonly-cache", Severity::kError, line, c.name, c.path + ".volumeMounts",
        fmt::format("cache path '{}' is on a read-only root filesystem and no writable "
                    "volume is mounted over it: engine/cache writes fail at run time (and "
                    "every restart rebuilds the engines)",
                    path),
        fmt::format("mount an emptyDir (or a PVC, to keep engines across restarts) at {}", path));
  }
}

}  // namespace

std::vector<PodFinding> PodSecurityFindings(const YAML::Node& spec, const std::string& sp,
                                            const std::vector<PodContainerView>& containers,
                                            const PodSecurityOptions& options) {
  std::vector<PodFinding> v;
  Out out{&v};
  HostRules(spec, sp, &out);
  bool gpu = false;
  for (const auto& c : containers) {
    ContainerPrivilegeRules(c, &out);
    RootRule(spec, sp, c, &out);
    ReadOnlyCacheRule(c, &out);
    gpu = gpu || c.gpu;
  }
  YAML::Node rc = YamlChild(spec, "runtimeClassName");
  if (gpu && !options.runtime_class.empty() && YamlScalar(rc) != options.runtime_class) {
    out.Add("k8s.runtime-class", Severity::kError, YamlLine(rc) ? YamlLine(rc) : YamlLine(spec), "",
            sp + ".runtimeClassName",
            YamlScalar(rc).empty()
                ? fmt::format("a GPU pod without runtimeClassName: on this cluster the NVIDIA "
                              "runtime is the RuntimeClass '{}', so the pod starts without the "
                              "GPU hooks",
                              options.runtime_class)
                : fmt::format("runtimeClassName '{}' is not the cluster's GPU RuntimeClass '{}'",
                              YamlScalar(rc), options.runtime_class),
            fmt::format("set spec.runtimeClassName: {}", options.runtime_class));
  }
  return v;
}

}  // namespace tg::audit
