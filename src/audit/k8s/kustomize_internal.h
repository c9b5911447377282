// kustomize's field specs and name references, shared by the files of the kustomize reader
// (kustomize.cc applies them in kustomize's order). Not for other modules.
//
// Field specs are kustomize 5.5's built-in tables (which paths of which kinds a transformer
// writes): a spec's empty group, version or kind matches any. Thread safety: pure functions over
// the nodes they are given.
#pragma once

#include <yaml-cpp/yaml.h>

#include <vector>

#include "audit/k8s/kustomize.h"

namespace tg::audit {

// Writes `pairs` into the label maps the labels transformer writes: metadata.labels always; the
// pod-template (and volumeClaimTemplates, CronJob jobTemplate) labels with `templates`; those and
// the selectors of the built-in kinds (Service spec.selector, Deployment spec.selector.matchLabels,
// ...; existing Job/PDB/NetworkPolicy selectors only) with `selectors`.
void ApplyLabelFields(YAML::Node obj, const YAML::Node& pairs, bool selectors, bool templates);

// Writes `pairs` into metadata.annotations and the pod-template annotations of built-in workloads.
void ApplyAnnotationFields(YAML::Node obj, const YAML::Node& pairs);

// True for the kinds whose spec.replicas the replicas transformer sets (Deployment, ReplicaSet,
// ReplicationController, StatefulSet).
bool HasReplicasField(const YAML::Node& obj);

// Rewrites references by original name (KustomizeObject::original_name) to the referenced
// object's final name (and namespace, for RoleBinding subjects), for the referenced objects that
// are part of `objects`: ConfigMap, Secret, PersistentVolumeClaim and ServiceAccount references of
// pod specs, StatefulSet serviceName, HPA scaleTargetRef, RoleBinding/ClusterRoleBinding roleRef
// and ServiceAccount subjects, Ingress backends and TLS secrets.
void FixNameReferences(std::vector<KustomizeObject>* objects);

}  // namespace tg::audit
