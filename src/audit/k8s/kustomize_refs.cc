// kustomize's name-reference transformer for the references that matter to a GPU deployment: a
// reference holds the original name of an object of the build, and must follow it when a prefix,
// suffix or namespace changes that object.
#include <functional>
#include <map>
#include <string>
#include <tuple>

#include "audit/k8s/k8s_yaml.h"
#include "audit/k8s/kustomize_internal.h"

namespace tg::audit {
namespace {

struct Final {
  std::string name, ns;
};

struct Names {
  // (kind, original name, original namespace) -> final; and (kind, original name) when unique.
  std::map<std::tuple<std::string, std::string, std::string>, Final> exact;
  std::map<std::pair<std::string, std::string>, std::vector<Final>> by_name;

  const Final* Find(const std::string& kind, const std::string& name, const std::string& ns) const {
    auto it = exact.find({kind, name, ns});
    if (it != exact.end()) return &it->second;
    auto b = by_name.find({kind, name});
    if (b != by_name.end() && b->second.size() == 1) return &b->second.front();
    return nullptr;
  }
};

struct Referrer {
  const Names& names;
  std::string ns;  // the referring object's original namespace

  // parent[key] names an object of `kind`: point it at the object's final name.
  const Final* Rewrite(YAML::Node parent, const char* key, const std::string& kind) const {
    if (!parent.IsMap()) return nullptr;
    YAML::Node v = YamlChild(parent, key);
    if (!v.IsScalar()) return nullptr;
    const Final* f = names.Find(kind, v.Scalar(), ns);
    if (f != nullptr && f->name != v.Scalar()) parent[key] = f->name;
    return f;
  }
};

YAML::Node Sub(YAML::Node n, const char* key) {
  return n.IsMap() && YamlChild(n, key).IsDefined() ? n[key] : YAML::Node();
}

void EachOf(YAML::Node seq, const std::function<void(YAML::Node)>& fn) {
  if (!seq.IsSequence()) return;
  for (std::size_t i = 0; i < seq.size(); ++i) fn(seq[i]);
}

void FixContainer(YAML::Node c, const Referrer& r) {
  EachOf(Sub(c, "env"), [&](YAML::Node e) {
    YAML::Node vf = Sub(e, "valueFrom");
    r.Rewrite(Sub(vf, "configMapKeyRef"), "name", "ConfigMap");
    r.Rewrite(Sub(vf, "secretKeyRef"), "name", "Secret");
  });
  EachOf(Sub(c, "envFrom"), [&](YAML::Node e) {
    r.Rewrite(Sub(e, "configMapRef"), "name", "ConfigMap");
    r.Rewrite(Sub(e, "secretRef"), "name", "Secret");
  });
}

void FixPodSpec(YAML::Node spec, const Referrer& r) {
  if (!spec.IsMap()) return;
  r.Rewrite(spec, "serviceAccountName", "ServiceAccount");
  EachOf(Sub(spec, "imagePullSecrets"), [&](YAML::Node s) { r.Rewrite(s, "name", "Secret"); });
  for (const char* key : {"containers", "initContainers"}) {
    EachOf(Sub(spec, key), [&](YAML::Node c) { FixContainer(c, r); });
  }
  EachOf(Sub(spec, "volumes"), [&](YAML::Node v) {
    r.Rewrite(Sub(v, "configMap"), "name", "ConfigMap");
    r.Rewrite(Sub(v, "secret"), "secretName", "Secret");
    r.Rewrite(Sub(v, "persistentVolumeClaim"), "claimName", "PersistentVolumeClaim");
    EachOf(Sub(Sub(v, "projected"), "sources"), [&](YAML::Node s) {
      r.Rewrite(Sub(s, "configMap"), "name", "ConfigMap");
      r.Rewrite(Sub(s, "secret"), "name", "Secret");
    });
  });
}

void FixObject(YAML::Node obj, const Referrer& r) {
  std::string kind = YamlScalar(YamlChild(obj, "kind"));
  YAML::Node spec = Sub(obj, "spec");
  if (kind == "Pod") {
    FixPodSpec(spec, r);
  } else if (kind == "Deployment" || kind == "ReplicaSet" || kind == "DaemonSet" ||
             kind == "StatefulSet" || kind == "Job" || kind == "ReplicationController") {
    FixPodSpec(Sub(Sub(spec, "template"), "spec"), r);
    if (kind == "StatefulSet") r.Rewrite(spec, "serviceName", "Service");
  } else if (kind == "CronJob") {
    FixPodSpec(Sub(Sub(Sub(Sub(spec, "jobTemplate"), "spec"), "template"), "spec"), r);
  } else if (kind == "HorizontalPodAutoscaler") {
    YAML::Node ref = Sub(spec, "scaleTargetRef");
    r.Rewrite(ref, "name", YamlScalar(YamlChild(ref, "kind")));
  } else if (kind == "RoleBinding" || kind == "ClusterRoleBinding") {
    YAML::Node role = Sub(obj, "roleRef");
    r.Rewrite(role, "name", YamlScalar(YamlChild(role, "kind")));
    EachOf(Sub(obj, "subjects"), [&](YAML::Node s) {
      if (YamlScalar(YamlChild(s, "kind")) != "ServiceAccount") return;
      Referrer sr{r.names, YamlScalar(YamlChild(s, "namespace"))};
      if (sr.ns.empty()) sr.ns = r.ns;
      const Final* f = sr.Rewrite(s, "name", "ServiceAccount");
      if (f != nullptr && !f->ns.empty() && YamlScalar(YamlChild(s, "namespace")) != f->ns) {
        s["namespace"] = f->ns;
      }
    });
  } else if (kind == "Ingress") {
    auto backend = [&](YAML::Node b) { r.Rewrite(Sub(b, "service"), "name", "Service"); };
    backend(Sub(spec, "defaultBackend"));
    EachOf(Sub(spec, "rules"), [&](YAML::Node rule) {
      EachOf(Sub(Sub(rule, "http"), "paths"), [&](YAML::Node p) { backend(Sub(p, "backend")); });
    });
    EachOf(Sub(spec, "tls"), [&](YAML::Node t) { r.Rewrite(t, "secretName", "Secret"); });
  }
}

}  // namespace

void FixNameReferences(std::vector<KustomizeObject>* objects) {
  Names names;
  for (const KustomizeObject& o : *objects) {
    std::string kind = YamlScalar(YamlChild(o.node, "kind"));
    YAML::Node meta = YamlChild(o.node, "metadata");
    Final f{YamlScalar(YamlChild(meta, "name")), YamlScalar(YamlChild(meta, "namespace"))};
    names.exact[{kind, o.original_name, o.original_namespace}] = f;
    names.by_name[{kind, o.original_name}].push_back(f);
  }
  for (KustomizeObject& o : *objects) {
    if (!o.node.IsMap()) continue;
    FixObject(o.node, Referrer{names, o.original_namespace});
  }
}

}  // namespace tg::audit
