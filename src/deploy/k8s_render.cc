// Rendering of the truegreen Kubernetes objects. The objects are built as JSON (the API's own
// shape) and printed as YAML by a small emitter that quotes every string YAML would otherwise
// re-type: node-affinity values such as "579" must stay strings or the API server rejects them.
#include "deploy/k8s_render.h"

#include <fmt/format.h>

#include <regex>

#include "common/json_writer.h"
#include "common/telemetry.h"
#include "deploy/k8s_render_internal.h"

namespace tg::deploy {
namespace {

using render_internal::GpuContainer;
using render_internal::Json;
using render_internal::Labels;

Json Expr(const char* key, const char* op, std::vector<std::string> values) {
  Json e = {{"key", key}, {"operator", op}};
  if (!values.empty()) e["values"] = values;
  return e;
}

std::string DriverCapabilities(const policy::Matrix& m) {
  std::string out;
  for (const auto& c : m.container.driver_capabilities) out += (out.empty() ? "" : ",") + c;
  // compute and utility are what CUDA and NVML need; an empty list means the toolkit default.
  return out.empty() ? "compute,utility" : out;
}

Json PodSpec(const policy::Matrix& matrix, const K8sRenderOptions& o, Json container, bool server) {
  audit::GpuNodeRequirements req = audit::NodeRequirementsFromMatrix(matrix);
  Json spec;
  spec["automountServiceAccountToken"] = false;
  spec["securityContext"] = {{"runAsNonRoot", true},
                             {"runAsUser", 65532},
                             {"runAsGroup", 65532},
                             {"seccompProfile", {{"type", "RuntimeDefault"}}}};
  spec["affinity"] = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution", RenderNodeAffinity(req)}}}};
  spec["tolerations"] =
      Json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
  if (!server) spec["restartPolicy"] = "Never";
  spec["containers"] = Json::array({std::move(container)});
  spec["volumes"] =
      Json::array({{{"name", "matrix"}, {"configMap", {{"name", o.name + "-matrix"}}}}});
  if (server) {
    // The model repository is data the cluster provides (a ReadOnlyMany claim when replicas
    // spread over nodes); the pod never writes it.
    spec["volumes"].push_back(
        {{"name", "models"},
         {"persistentVolumeClaim", {{"claimName", ModelsClaim(o)}, {"readOnly", true}}}});
  }
  return spec;
}

}  // namespace

namespace render_internal {

Json Labels(const K8sRenderOptions& o, const std::string& component) {
  Json l = {{"app.kubernetes.io/name", o.name}, {"app.kubernetes.io/part-of", "truegreen"}};
  if (!component.empty()) l["app.kubernetes.io/component"] = component;
  return l;
}

std::string ColorName(const K8sRenderOptions& o, const std::string& color) {
  return o.name + "-" + color;
}
std::string BaselineConfigMap(const K8sRenderOptions& o) { return o.name + "-baseline"; }
std::string BenchConfigMap(const K8sRenderOptions& o) { return o.name + "-bench"; }

Json GpuContainer(const policy::Matrix& matrix, const K8sRenderOptions& o, const std::string& image,
                  std::vector<std::string> args) {
  audit::GpuNodeRequirements req = audit::NodeRequirementsFromMatrix(matrix);
  int gpus = std::max(1, req.device_count);
  Json c;
  c["name"] = "truegreen";
  c["image"] = image;
  c["args"] = std::move(args);
  // ONNX Runtime's telemetry off in the pod too (truegreen sets it itself; the pod says so).
  c["env"] =
      Json::array({{{"name", "NVIDIA_DRIVER_CAPABILITIES"}, {"value", DriverCapabilities(matrix)}},
                   {{"name", common::kOrtDisableTelemetryVar}, {"value", "1"}}});
  std::string gpu_resource = "nvidia.com/gpu";
  c["resources"] = {{"requests", {{"cpu", o.cpu}, {"memory", o.memory}}},
                    {"limits", {{"memory", o.memory}, {gpu_resource, std::to_string(gpus)}}}};
  c["volumeMounts"] =
      Json::array({{{"name", "matrix"}, {"mountPath", "/etc/truegreen"}, {"readOnly", true}}});
  c["securityContext"] = {{"allowPrivilegeEscalation", false},
                          {"readOnlyRootFilesystem", true},
                          {"capabilities", {{"drop", Json::array({"ALL"})}}}};
  return c;
}

}  // namespace render_internal

namespace {

Json Probe(const char* path, int period, int failures) {
  return {{"httpGet", {{"path", path}, {"port", "http"}}},
          {"periodSeconds", period},
          {"failureThreshold", failures}};
}

bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  static const std::regex kRetyped(
      R"(^(~|null|Null|NULL|true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|y|Y|n|N)$)"
      R"(|^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$)"
      R"(|^0[xob][0-9a-fA-F_]+$|^[-+]?\.(inf|Inf|INF|nan|NaN|NAN)$|^[0-9]+(:[0-9]+)+$)");
  if (s.size() > 64) {
    // Too long for a YAML keyword; quote anything number-like without running the regex.
    if (s.find_first_not_of("0123456789._+-eE") == std::string::npos) return true;
  } else if (std::regex_match(s, kRetyped)) {
    return true;
  }
  if (std::string("-?:,[]{}#&*!|>'\"%@`").find(s[0]) != std::string::npos) return true;
  if (s.front() == ' ' || s.back() == ' ') return true;
  if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) return true;
  if (s.back() == ':') return true;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

std::string Scalar(const Json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    return NeedsQuotes(s) ? common::WriteJson(v, -1, common::JsonNotice::kNone) : s;
  }
  if (v.is_null()) return "null";
  return common::WriteJson(v, -1, common::JsonNotice::kNone);
}

bool IsBlockString(const Json& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  if (s.find('\n') == std::string::npos || s.front() == ' ' || s.front() == '\n') return false;
  for (unsigned char c : s) {
    if ((c < 0x20 && c != '\n') || c == 0x7f) return false;
  }
  // A line with trailing spaces would be kept but is easy to lose in review; quote instead.
  return s.find(" \n") == std::string::npos;
}

void Emit(const Json& v, int indent, std::string* out);

void EmitValueAfterKey(const Json& v, int indent, std::string* out) {
  if (v.is_object() && !v.empty()) {
    *out += "\n";
    Emit(v, indent + 2, out);
  } else if (v.is_array() && !v.empty()) {
    *out += "\n";
    Emit(v, indent + 2, out);
  } else if (v.is_object()) {
    *out += " {}\n";
  } else if (v.is_array()) {
    *out += " []\n";
  } else if (IsBlockString(v)) {
    const std::string& s = v.get_ref<const std::string&>();
    *out += s.back() == '\n' ? " |\n" : " |-\n";
    std::size_t pos = 0;
    while (pos < s.size()) {
      std::size_t nl = s.find('\n', pos);
      std::string line = s.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      *out += line.empty() ? "\n" : std::string(indent + 2, ' ') + line + "\n";
      if (nl == std::string::npos) break;
      pos = nl + 1;
    }
  } else {
    // Appended piecewise: `" " + std::string&&` trips GCC 12's false -Wrestrict (PR 105329).
    *out += ' ';
    *out += Scalar(v);
    *out += '\n';
  }
}

void Emit(const Json& v, int indent, std::string* out) {
  std::string pad(indent, ' ');
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      *out += pad + Scalar(Json(it.key())) + ":";
      EmitValueAfterKey(it.value(), indent, out);
    }
  } else if (v.is_array()) {
    for (const auto& item : v) {
      if (item.is_object() && !item.empty()) {
        // "- key: value" then the remaining keys aligned under the first.
        std::string sub;
        Emit(item, indent + 2, &sub);
        *out += pad + "- " + sub.substr(indent + 2);
      } else if (item.is_array() && !item.empty()) {
        *out += pad + "-\n";
        Emit(item, indent + 2, out);
      } else {
        *out += pad + "-";
        EmitValueAfterKey(item, indent, out);
      }
    }
  } else {
    *out += pad + Scalar(v) + "\n";
  }
}

}  // namespace

Json RenderNodeAffinity(const audit::GpuNodeRequirements& req) {
  Json base = Json::array();
  if (req.driver_branch) {
    base.push_back(Expr(audit::kLabelDriverMajor, "In", {std::to_string(*req.driver_branch)}));
  } else if (req.driver_major_min) {
    base.push_back(
        Expr(audit::kLabelDriverMajor, "Gt", {std::to_string(*req.driver_major_min - 1)}));
  }
  if (req.cuda_major_min) {
    base.push_back(Expr(audit::kLabelCudaMajor, "Gt", {std::to_string(*req.cuda_major_min - 1)}));
  }
  if (req.memory_mib_min) {
    base.push_back(Expr(audit::kLabelMemory, "Gt", {std::to_string(*req.memory_mib_min - 1)}));
  }
  if (req.mig == policy::MigExpectation::kEnabled) {
    base.push_back(Expr(audit::kLabelMigStrategy, "In", {"single"}));
  } else if (req.mig == policy::MigExpectation::kDisabled) {
    base.push_back(Expr(audit::kLabelMigStrategy, "NotIn", {"single", "mixed"}));
  }
  Json terms = Json::array();
  if (req.compute_major) {
    int maj = *req.compute_major;
    int min = req.compute_minor.value_or(0);
    Json t1 = base;
    if (min == 0) {
      t1.push_back(Expr(audit::kLabelComputeMajor, "Gt", {std::to_string(maj - 1)}));
      terms.push_back({{"matchExpressions", t1}});
    } else {
      // (major > M) OR (major == M AND minor >= m): terms are ORed, expressions ANDed.
      t1.push_back(Expr(audit::kLabelComputeMajor, "Gt", {std::to_string(maj)}));
      Json t2 = base;
      t2.push_back(Expr(audit::kLabelComputeMajor, "In", {std::to_string(maj)}));
      t2.push_back(Expr(audit::kLabelComputeMinor, "Gt", {std::to_string(min - 1)}));
      terms.push_back({{"matchExpressions", t1}});
      terms.push_back({{"matchExpressions", t2}});
    }
  } else {
    // Without a capability floor, still keep the pod off nodes without an NVIDIA GPU.
    if (base.empty()) base.push_back(Expr("nvidia.com/gpu.product", "Exists", {}));
    terms.push_back({{"matchExpressions", base}});
  }
  return {{"nodeSelectorTerms", terms}};
}

std::string ModelsClaim(const K8sRenderOptions& o) {
  return o.models_pvc.empty() ? o.name + "-models" : o.models_pvc;
}

std::string CandidateColor(const K8sRenderOptions& o) {
  return o.live == "green" ? "blue" : "green";
}

namespace {

// The server Deployment `deploy_name` whose pods carry `labels`.
Json ServerDeployment(const policy::Matrix& matrix, const K8sRenderOptions& o,
                      const std::string& deploy_name, const std::string& image,
                      const Json& labels) {
  Json server =
      GpuContainer(matrix, o, image,
                   // serve binds 127.0.0.1 by default; in a pod the kubelet's probes
                   // and the Service reach it on the pod's address.
                   {"serve", "--models", "/models", "--matrix", "/etc/truegreen/matrix.yaml",
                    "--host", "0.0.0.0", "--port", std::to_string(o.port)});
  server["volumeMounts"].push_back(
      {{"name", "models"}, {"mountPath", "/models"}, {"readOnly", true}});
  server["ports"] = Json::array({{{"name", "http"}, {"containerPort", o.port}}});
  // Start-up covers engine builds and warm-up (up to 10 minutes); readiness then flips quickly.
  server["startupProbe"] = Probe("/readyz", 10, 60);
  server["readinessProbe"] = Probe("/readyz", 5, 3);
  server["livenessProbe"] = Probe("/healthz", 10, 3);
  // No `replicas`: the HorizontalPodAutoscaler owns the count (a fixed value here would reset it
  // on every apply).
  Json deploy_spec = {{"selector", {{"matchLabels", labels}}},
                      {"template",
                       {{"metadata", {{"labels", labels}}},
                        {"spec", PodSpec(matrix, o, std::move(server), true)}}}};
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", deploy_name}, {"labels", labels}}},
          {"spec", std::move(deploy_spec)}};
}

Json ServiceObject(const K8sRenderOptions& o, const std::string& svc_name, const Json& labels,
                   const Json& selector) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata", {{"name", svc_name}, {"labels", labels}}},
      {"spec",
       {{"selector", selector},
        {"ports", Json::array({{{"name", "http"}, {"port", o.port}, {"targetPort", "http"}}})}}}};
}

Json AdmissionJob(const policy::Matrix& matrix, const K8sRenderOptions& o) {
  Json admit_labels = Labels(o, "node-admission");
  Json admit =
      GpuContainer(matrix, o, o.image, {"admit", "--matrix", "/etc/truegreen/matrix.yaml"});
  Json job_spec = {{"backoffLimit", 0},
                   {"ttlSecondsAfterFinished", 86400},
                   {"template",
                    {{"metadata", {{"labels", admit_labels}}},
                     {"spec", PodSpec(matrix, o, std::move(admit), false)}}}};
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", o.name + "-node-admission"}, {"labels", admit_labels}}},
          {"spec", std::move(job_spec)}};
}

Json PodMonitor(const K8sRenderOptions& o, const Json& server_labels) {
  return {{"apiVersion", "monitoring.coreos.com/v1"},
          {"kind", "PodMonitor"},
          {"metadata", {{"name", o.name}, {"labels", server_labels}}},
          {"spec",
           {{"selector", {{"matchLabels", server_labels}}},
            {"podMetricsEndpoints",
             Json::array({{{"port", "http"}, {"path", "/metrics"}, {"interval", "15s"}}})}}}};
}

Json ConfigMap(const K8sRenderOptions& o, const std::string& cm_name, const std::string& key,
               const std::string& text) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", cm_name}, {"labels", Labels(o)}}},
          {"data", {{key, text}}}};
}

std::vector<Json> RenderBlueGreen(const policy::Matrix& matrix, const K8sRenderOptions& o) {
  using render_internal::ColorName;
  const Json server_labels = Labels(o, "server");
  const std::string live_image = o.live_image.empty() ? o.image : o.live_image;
  std::vector<Json> docs;
  docs.push_back(ConfigMap(o, o.name + "-matrix", "matrix.yaml", o.matrix_text));
  docs.push_back(ConfigMap(o, render_internal::BenchConfigMap(o), "bench.yaml", o.bench_text));
  for (const char* color : {"blue", "green"}) {
    Json labels = server_labels;
    labels[kColorLabel] = color;
    docs.push_back(ServerDeployment(matrix, o, ColorName(o, color),
                                    color == o.live ? live_image : o.image, labels));
  }
  Json live_selector = server_labels;
  live_selector[kColorLabel] = o.live;
  docs.push_back(ServiceObject(o, o.name, server_labels, live_selector));
  // One Service per colour: the gate benchmarks the candidate before any user traffic reaches it.
  for (const char* color : {"blue", "green"}) {
    Json labels = server_labels;
    labels[kColorLabel] = color;
    docs.push_back(ServiceObject(o, ColorName(o, color), labels, labels));
  }
  docs.push_back(PodMonitor(o, server_labels));
  docs.push_back(AdmissionJob(matrix, o));
  for (const char* color : {"blue", "green"}) {
    Json labels = server_labels;
    labels[kColorLabel] = color;
    docs.push_back(render_internal::Hpa(o, ColorName(o, color), labels));
  }
  docs.push_back(render_internal::AdapterRulesConfigMap(o));
  docs.push_back(render_internal::AlertRules(matrix, o));
  for (Json& d : render_internal::GateObjects(o)) docs.push_back(std::move(d));
  return docs;
}

}  // namespace

std::vector<Json> RenderK8sObjects(const policy::Matrix& matrix, const K8sRenderOptions& o) {
  if (o.rollout == Rollout::kBlueGreen) return RenderBlueGreen(matrix, o);
  const Json server_labels = Labels(o, "server");
  std::vector<Json> docs;
  docs.push_back(ConfigMap(o, o.name + "-matrix", "matrix.yaml", o.matrix_text));
  docs.push_back(ServerDeployment(matrix, o, o.name, o.image, server_labels));
  docs.push_back(ServiceObject(o, o.name, server_labels, server_labels));
  docs.push_back(PodMonitor(o, server_labels));
  docs.push_back(AdmissionJob(matrix, o));
  docs.push_back(render_internal::Hpa(o, o.name, server_labels));
  docs.push_back(render_internal::AdapterRulesConfigMap(o));
  docs.push_back(render_internal::AlertRules(matrix, o));
  return docs;
}

std::string JsonToYaml(const Json& value) {
  std::string out;
  Emit(value, 0, &out);
  return out;
}

std::string JsonToYamlDocuments(const std::vector<Json>& docs) {
  std::string out;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    if (i > 0) out += "---\n";
    out += JsonToYaml(docs[i]);
  }
  return out;
}

}  // namespace tg::deploy
