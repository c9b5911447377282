// Builders shared by k8s_render.cc (workloads, YAML) and k8s_render_ops.cc (autoscaling,
// monitoring, the blue-green gate). Internal to src/audit/. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "deploy/k8s_render.h"

namespace tg::deploy::render_internal {

using Json = RenderJson;

// The truegreen container running `args` with `image`: GPU limit from the matrix, resources,
// hardened security context, the matrix ConfigMap at /etc/truegreen.
Json GpuContainer(const policy::Matrix& matrix, const K8sRenderOptions& o, const std::string& image,
                  std::vector<std::string> args);

// {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "truegreen"} plus, when
// `component` is set, "app.kubernetes.io/component".
Json Labels(const K8sRenderOptions& o, const std::string& component = "");

// HorizontalPodAutoscaler (autoscaling/v2) on the Pods metric kQueueDepthMetric for one
// Deployment.
Json Hpa(const K8sRenderOptions& o, const std::string& deployment, const Json& labels);
// The prometheus-adapter rule that exposes kQueueDepthMetric per pod, as a ConfigMap
// (<name>-prometheus-adapter, key config.yaml).
Json AdapterRulesConfigMap(const K8sRenderOptions& o);
// PrometheusRule (monitoring.coreos.com/v1): gate at 0, CPU nodes where the matrix requires a GPU,
// canary outside its window, GPU utilisation under the floor while requests queue, degraded.
Json AlertRules(const policy::Matrix& matrix, const K8sRenderOptions& o);

// Blue-green: ServiceAccount, Role, RoleBinding and the gate Job, in that order.
std::vector<Json> GateObjects(const K8sRenderOptions& o);

// Names used by both files.
std::string ColorName(const K8sRenderOptions& o, const std::string& color);  // <name>-<color>
std::string BaselineConfigMap(const K8sRenderOptions& o);                    // <name>-baseline
std::string BenchConfigMap(const K8sRenderOptions& o);                       // <name>-bench

}  // namespace tg::deploy::render_internal
