// The operational objects of `k8s render`: autoscaling on queue depth, the Prometheus adapter rule
// that feeds it, the alerts on the degraded path, and the blue-green gate (RBAC + Job).
//
// Why queue depth and not CPU or GPU utilisation: a GPU server that is saturated shows it as
// requests waiting (nv_inference_pending_request_count), while its CPU stays low and its GPU
// utilisation is already near 1 before latency degrades. The HPA reads the metric through the
// custom metrics API, which the Prometheus adapter serves from the rule rendered here.
#include <fmt/format.h>

#include "common/telemetry.h"
#include "deploy/k8s_render_internal.h"

namespace tg::deploy::render_internal {
namespace {

constexpr const char* kGateVolume = "/gate";
constexpr const char* kBenchDir = "/etc/truegreen-bench";
constexpr const char* kBaselineDir = "/baseline";

Json Alert(const std::string& name, const std::string& expr, const char* for_, const char* severity,
           const std::string& summary) {
  return {{"alert", name},
          {"expr", expr},
          {"for", for_},
          {"labels", {{"severity", severity}}},
          {"annotations", {{"summary", summary}}}};
}

// A small truegreen container that needs no GPU: NVIDIA_VISIBLE_DEVICES=void keeps the NVIDIA
// container runtime from injecting every GPU of the node (the image's CUDA base sets "all").
Json ToolContainer(const K8sRenderOptions& o, const std::string& name,
                   std::vector<std::string> args, Json mounts) {
  Json c = {
      {"name", name},
      {"image", o.image},
      {"args", std::move(args)},
      {"env", Json::array({{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "void"}},
                           {{"name", common::kOrtDisableTelemetryVar}, {"value", "1"}}})},
      {"resources",
       {{"requests", {{"cpu", "500m"}, {"memory", "1Gi"}}}, {"limits", {{"memory", "1Gi"}}}}}};
  if (!mounts.empty()) c["volumeMounts"] = std::move(mounts);
  c["securityContext"] = {{"allowPrivilegeEscalation", false},
                          {"readOnlyRootFilesystem", true},
                          {"capabilities", {{"drop", Json::array({"ALL"})}}}};
  return c;
}

Json Mount(const char* volume, const char* path, bool read_only) {
  return {{"name", volume}, {"mountPath", path}, {"readOnly", read_only}};
}

Json GateRole(const K8sRenderOptions& o, const std::string& sa, const Json& labels) {
  // Least privilege: the one Service it switches, the one ConfigMap it stores the baseline in,
  // and read access to the two Deployments it waits on. No create, no list, no watch.
  Json rules =
      Json::array({{{"apiGroups", Json::array({""})},
                    {"resources", Json::array({"services"})},
                    {"resourceNames", Json::array({o.name})},
                    {"verbs", Json::array({"get", "patch"})}},
                   {{"apiGroups", Json::array({""})},
                    {"resources", Json::array({"configmaps"})},
                    {"resourceNames", Json::array({BaselineConfigMap(o)})},
                    {"verbs", Json::array({"get", "update"})}},
                   {{"apiGroups", Json::array({"apps"})},
                    {"resources", Json::array({"deployments"})},
                    {"resourceNames", Json::array({ColorName(o, "blue"), ColorName(o, "green")})},
                    {"verbs", Json::array({"get"})}}});
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "Role"},
          {"metadata", {{"name", sa}, {"labels", labels}}},
          {"rules", std::move(rules)}};
}

Json GateJob(const K8sRenderOptions& o, const std::string& sa, const Json& labels) {
  const std::string candidate = CandidateColor(o);
  const std::string baseline_file = std::string(kBaselineDir) + "/baseline.json";
  const std::string candidate_file = std::string(kGateVolume) + "/candidate.json";
  Json rw = Json::array({Mount("gate", kGateVolume, false)});
  Json init = Json::array();
  init.push_back(ToolContainer(
      o, "wait-ready",
      {"k8s", "wait-ready", "--deployment", ColorName(o, candidate), "--timeout-s", "900"},
      Json::array()));
  init.push_back(ToolContainer(
      o, "bench",
      {"bench", "--url", fmt::format("http://{}:{}", ColorName(o, candidate), o.port),
       "--bench-file", std::string(kBenchDir) + "/bench.yaml", "--out", candidate_file, "--no-nvml",
       "--no-progress"},
      Json::array({Mount("gate", kGateVolume, false), Mount("bench", kBenchDir, true)})));
  std::vector<std::string> compare = {"compare", baseline_file, candidate_file};
  for (const auto& g : o.fail_on) {
    compare.push_back("--fail-on");
    compare.push_back(g);
  }
  compare.push_back("--out");
  compare.push_back(std::string(kGateVolume) + "/compare.json");
  init.push_back(ToolContainer(
      o, "compare", compare,
      Json::array({Mount("gate", kGateVolume, false), Mount("baseline", kBaselineDir, true)})));
  Json promote = ToolContainer(
      o, "promote",
      {"k8s", "promote", "--service", o.name, "--color", candidate, "--baseline-configmap",
       BaselineConfigMap(o), "--baseline-file", candidate_file},
      rw);
  Json volumes =
      Json::array({{{"name", "gate"}, {"emptyDir", {{"sizeLimit", "64Mi"}}}},
                   {{"name", "bench"}, {"configMap", {{"name", BenchConfigMap(o)}}}},
                   // optional: before the first baseline is stored, compare fails naming the
                   // missing file instead of the pod waiting forever for the volume.
                   {{"name", "baseline"},
                    {"configMap", {{"name", BaselineConfigMap(o)}, {"optional", true}}}}});
  Json pod = {{"serviceAccountName", sa},
              // promote and wait-ready talk to the API server with this token.
              {"automountServiceAccountToken", true},
              {"restartPolicy", "Never"},
              {"securityContext",
               {{"runAsNonRoot", true},
                {"runAsUser", 65532},
                {"runAsGroup", 65532},
                {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
              {"initContainers", std::move(init)},
              {"containers", Json::array({std::move(promote)})},
              {"volumes", std::move(volumes)}};
  // backoffLimit 0: a failed gate is a verdict, and a retry could pass it by luck.
  Json spec = {{"backoffLimit", 0},
               {"activeDeadlineSeconds", 3600},
               {"ttlSecondsAfterFinished", 86400},
               {"template", {{"metadata", {{"labels", labels}}}, {"spec", std::move(pod)}}}};
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", o.name + "-gate-to-" + candidate}, {"labels", labels}}},
          {"spec", std::move(spec)}};
}

}  // namespace

Json Hpa(const K8sRenderOptions& o, const std::string& deployment, const Json& labels) {
  Json metric = {
      {"type", "Pods"},
      {"pods",
       {{"metric", {{"name", kQueueDepthMetric}}},
        {"target",
         {{"type", "AverageValue"}, {"averageValue", std::to_string(o.target_queue_depth)}}}}}};
  // A GPU pod takes minutes to become ready (engine build, warm-up, canary): scale down slowly
  // so a short lull does not throw away capacity that is expensive to get back.
  Json behavior = {{"scaleDown", {{"stabilizationWindowSeconds", 600}}}};
  return {{"apiVersion", "autoscaling/v2"},
          {"kind", "HorizontalPodAutoscaler"},
          {"metadata", {{"name", deployment}, {"labels", labels}}},
          {"spec",
           {{"scaleTargetRef",
             {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", deployment}}},
            {"minReplicas", o.min_replicas},
            {"maxReplicas", o.max_replicas},
            {"metrics", Json::array({std::move(metric)})},
            {"behavior", std::move(behavior)}}}};
}

Json AdapterRulesConfigMap(const K8sRenderOptions& o) {
  // The metric carries a `model` label; the HPA wants one value per pod, so the rule sums the
  // models of a pod. `namespace` and `pod` are the labels the PodMonitor's scrape attaches.
  const std::string rule = fmt::format(
      "rules:\n"
      "  - seriesQuery: '{0}{{namespace!=\"\",pod!=\"\"}}'\n"
      "    resources:\n"
      "      overrides:\n"
      "        namespace: {{resource: namespace}}\n"
      "        pod: {{resource: pod}}\n"
      "    name:\n"
      "      matches: ^{0}$\n"
      "      as: {0}\n"
      "    metricsQuery: sum(<<.Series>>{{<<.LabelMatchers>>}}) by (<<.GroupBy>>)\n",
      kQueueDepthMetric);
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", o.name + "-prometheus-adapter"}, {"labels", Labels(o)}}},
          {"data", {{"config.yaml", rule}}}};
}

Json AlertRules(const policy::Matrix& matrix, const K8sRenderOptions& o) {
  Json rules = Json::array();
  rules.push_back(
      Alert("TruegreenGateDown", "min by (namespace, pod, gate) (truegreen_gate_status) == 0",
            // start-up (engines, warm-up, canary) may take up to 10 minutes
            "15m", "critical", "a start-up gate of {{ $labels.pod }} is at 0: {{ $labels.gate }}"));
  if (matrix.require_gpu) {
    // The matrix requires a GPU: any graph node on the CPU provider is the fallback the seeds hit.
    rules.push_back(
        Alert("TruegreenCpuNodeShare",
              "sum by (namespace, pod, model) "
              "(truegreen_session_nodes{provider=\"CPUExecutionProvider\"})"
              " / sum by (namespace, pod, model) (truegreen_session_nodes) > 0",
              "5m", "critical",
              "{{ $labels.pod }} runs part of {{ $labels.model }} on the CPU provider although the "
              "matrix requires a GPU"));
    rules.push_back(Alert("TruegreenDegraded", "max by (namespace, pod) (truegreen_degraded) == 1",
                          "5m", "critical",
                          "{{ $labels.pod }} serves degraded (CPU) under a GPU matrix"));
  }
  rules.push_back(Alert("TruegreenCanaryOutsideWindow",
                        "min by (namespace, pod) (truegreen_canary_ok) == 0", "15m", "warning",
                        "the latest canary of {{ $labels.pod }} failed or ran outside the "
                        "policy's P50/P95 window (/readyz answers 503)"));
  rules.push_back(
      Alert("TruegreenGpuUnderutilised",
            fmt::format("avg by (namespace, pod) (nv_gpu_utilization) < {} and on (namespace, pod) "
                        "sum by (namespace, pod) ({}) > 0",
                        o.gpu_util_floor, kQueueDepthMetric),
            "10m", "warning",
            fmt::format("{{{{ $labels.pod }}}} has queued requests but GPU utilisation under {}",
                        o.gpu_util_floor)));
  return {{"apiVersion", "monitoring.coreos.com/v1"},
          {"kind", "PrometheusRule"},
          {"metadata", {{"name", o.name}, {"labels", Labels(o, "server")}}},
          {"spec",
           {{"groups",
             Json::array({{{"name", "truegreen.degraded-path"}, {"rules", std::move(rules)}}})}}}};
}

std::vector<Json> GateObjects(const K8sRenderOptions& o) {
  const std::string sa = o.name + "-gate";
  const Json labels = Labels(o, "rollout-gate");
  std::vector<Json> docs;
  docs.push_back({{"apiVersion", "v1"},
                  {"kind", "ServiceAccount"},
                  {"metadata", {{"name", sa}, {"labels", labels}}},
                  {"automountServiceAccountToken", false}});
  docs.push_back(GateRole(o, sa, labels));
  docs.push_back(
      {{"apiVersion", "rbac.authorization.k8s.io/v1"},
       {"kind", "RoleBinding"},
       {"metadata", {{"name", sa}, {"labels", labels}}},
       {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", sa}}},
       {"subjects", Json::array({{{"kind", "ServiceAccount"}, {"name", sa}}})}});
  docs.push_back(GateJob(o, sa, labels));
  return docs;
}

}  // namespace tg::deploy::render_internal
