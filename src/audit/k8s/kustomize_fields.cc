// kustomize's built-in field specs (api/konfig/builtinpluginconsts in kustomize 5.5) and its
// name-reference rewriting, limited to the kinds listed in kustomize_internal.h. The tables are
// facts about kustomize, checked object by object against `kubectl kustomize` by
// tests/audit_kustomize_parity_test.cc.
#include <fmt/format.h>

#include <functional>
#include <map>
#include <string>

#include "audit/k8s/k8s_yaml.h"
#include "audit/k8s/kustomize_internal.h"
#include "common/strings.h"

namespace tg::audit {
namespace {

struct FieldSpec {
  const char* path;  // '/'-separated; "x[]" iterates the list x
  bool create;
  const char* group;
  const char* version;
  const char* kind;
};

std::string GroupOf(const YAML::Node& obj) {
  std::string av = YamlScalar(YamlChild(obj, "apiVersion"));
  std::size_t slash = av.find('/');
  return slash == std::string::npos ? "" : av.substr(0, slash);
}

std::string VersionOf(const YAML::Node& obj) {
  std::string av = YamlScalar(YamlChild(obj, "apiVersion"));
  std::size_t slash = av.find('/');
  return slash == std::string::npos ? av : av.substr(slash + 1);
}

bool Selected(const FieldSpec& f, const YAML::Node& obj) {
  auto ok = [](const char* want, const std::string& have) {
    return std::string_view(want).empty() || want == have;
  };
  return ok(f.group, GroupOf(obj)) && ok(f.version, VersionOf(obj)) &&
         ok(f.kind, YamlScalar(YamlChild(obj, "kind")));
}

// Calls `fn` on the map at `path` under `node` (created where `create`).
void Visit(YAML::Node node, const std::vector<std::string>& segs, std::size_t i, bool create,
           const std::function<void(YAML::Node)>& fn) {
  if (!node.IsMap()) return;
  std::string seg = segs[i];
  bool each = seg.ends_with("[]");
  if (each) seg.resize(seg.size() - 2);
  bool last = i + 1 == segs.size();
  YAML::Node child = YamlChild(node, seg);
  if (each) {
    if (!child.IsSequence()) return;
    for (std::size_t k = 0; k < child.size(); ++k) {
      YAML::Node e = node[seg][k];
      if (last) {
        fn(e);
      } else {
        Visit(e, segs, i + 1, create, fn);
      }
    }
    return;
  }
  if (!child.IsDefined() || child.IsNull()) {
    if (!create) return;
    node[seg] = YAML::Node(YAML::NodeType::Map);
  }
  YAML::Node next = node[seg];
  if (last) {
    if (next.IsMap()) fn(next);
    return;
  }
  Visit(next, segs, i + 1, create, fn);
}

void ApplySpecs(YAML::Node obj, const std::vector<FieldSpec>& specs, const YAML::Node& pairs) {
  for (const FieldSpec& f : specs) {
    if (!Selected(f, obj)) continue;
    const std::vector<std::string> segs = common::Split(f.path, '/', common::SplitMode::kKeepEmpty);
    Visit(obj, segs, 0, f.create, [&](YAML::Node m) {
      for (auto it = pairs.begin(); it != pairs.end(); ++it) m[it->first.Scalar()] = it->second;
    });
  }
}

const std::vector<FieldSpec>& TemplateLabelSpecs() {
  static const std::vector<FieldSpec> k = {
      {"spec/template/metadata/labels", true, "", "v1", "ReplicationController"},
      {"spec/template/metadata/labels", true, "", "", "Deployment"},
      {"spec/template/metadata/labels", true, "", "", "ReplicaSet"},
      {"spec/template/metadata/labels", true, "", "", "DaemonSet"},
      {"spec/template/metadata/labels", true, "apps", "", "StatefulSet"},
      {"spec/volumeClaimTemplates[]/metadata/labels", true, "apps", "", "StatefulSet"},
      {"spec/template/metadata/labels", true, "batch", "", "Job"},
      {"spec/jobTemplate/metadata/labels", true, "batch", "", "CronJob"},
      {"spec/jobTemplate/spec/template/metadata/labels", true, "batch", "", "CronJob"},
  };
  return k;
}

const std::vector<FieldSpec>& SelectorLabelSpecs() {
  static const std::vector<FieldSpec> k = {
      {"spec/selector", true, "", "v1", "Service"},
      {"spec/selector", true, "", "v1", "ReplicationController"},
      {"spec/selector/matchLabels", true, "", "", "Deployment"},
      {"spec/selector/matchLabels", true, "", "", "ReplicaSet"},
      {"spec/selector/matchLabels", true, "", "", "DaemonSet"},
      {"spec/selector/matchLabels", true, "apps", "", "StatefulSet"},
      {"spec/selector/matchLabels", false, "batch", "", "Job"},
      {"spec/jobTemplate/spec/selector/matchLabels", false, "batch", "", "CronJob"},
      {"spec/selector/matchLabels", false, "policy", "", "PodDisruptionBudget"},
      {"spec/podSelector/matchLabels", false, "networking.k8s.io", "", "NetworkPolicy"},
  };
  return k;
}

}  // namespace

void ApplyLabelFields(YAML::Node obj, const YAML::Node& pairs, bool selectors, bool templates) {
  if (!obj.IsMap()) return;
  ApplySpecs(obj, {{"metadata/labels", true, "", "", ""}}, pairs);
  if (templates || selectors) ApplySpecs(obj, TemplateLabelSpecs(), pairs);
  if (selectors) ApplySpecs(obj, SelectorLabelSpecs(), pairs);
}

void ApplyAnnotationFields(YAML::Node obj, const YAML::Node& pairs) {
  static const std::vector<FieldSpec> k = {
      {"metadata/annotations", true, "", "", ""},
      {"spec/template/metadata/annotations", true, "", "v1", "ReplicationController"},
      {"spec/template/metadata/annotations", true, "", "", "Deployment"},
      {"spec/template/metadata/annotations", true, "", "", "ReplicaSet"},
      {"spec/template/metadata/annotations", true, "", "", "DaemonSet"},
      {"spec/template/metadata/annotations", true, "apps", "", "StatefulSet"},
      {"spec/template/metadata/annotations", true, "batch", "", "Job"},
      {"spec/jobTemplate/metadata/annotations", true, "batch", "", "CronJob"},
      {"spec/jobTemplate/spec/template/metadata/annotations", true, "batch", "", "CronJob"},
  };
  if (obj.IsMap()) ApplySpecs(obj, k, pairs);
}

bool HasReplicasField(const YAML::Node& obj) {
  std::string kind = YamlScalar(YamlChild(obj, "kind"));
  return kind == "Deployment" || kind == "ReplicaSet" || kind == "ReplicationController" ||
         kind == "StatefulSet";
}

}  // namespace tg::audit
