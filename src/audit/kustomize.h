// A kustomize reader for the audit: builds the objects a kustomization directory renders, with the
// features that change what runs applied, so `audit k8s DIR` judges the same objects that
// `kubectl kustomize DIR` would deploy.
//
// Supported: resources (files and kustomization directories; `bases` as its old name),
// components, patches (strategic merge and JSON 6902, inline or from a file, with a target of
// kind/name/namespace/group/version), patchesStrategicMerge, patchesJson6902, namePrefix,
// nameSuffix, namespace, images, replicas, commonLabels, labels, commonAnnotations.
// Anything else in a kustomization (generators, replacements, helmCharts, a label selector in a
// patch target, ...) is an error naming the feature, with the hint to pipe `kubectl kustomize`
// into `truegreen audit k8s -`: an audit never skips what it cannot apply.
//
// Containment (kustomize's default load restrictor): a file a kustomization reads (a resource or
// a patch) must resolve, symlinks followed, inside that kustomization's directory. A directory
// entry must hold its own kustomization file. Nesting is limited to 16 levels and a directory that
// includes itself is reported as a cycle. Every YAML text read is bounded like a manifest
// (k8s_yaml.h). Messages name the file, line and field, and never echo a file's content.
//
// Failure behaviour: INVALID_ARG (exit 2) for all of the above and for a patch whose target is
// missing. Thread safety: pure function over the file system.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "common/status.h"

namespace tg::audit {

// One object the kustomization renders. `node` is a private deep copy (patches edit it).
struct KustomizeObject {
  YAML::Node node;
  std::string source;  // the file the object came from
  int document = 0;    // 1-based document index in that file
};

// Builds the objects of the kustomization in `dir`.
common::Status BuildKustomization(const std::string& dir, std::vector<KustomizeObject>* out);

// Strategic-merge `patch` into `target` (exposed for tests). Lists of mappings merge by `name`
// (or containerPort, mountPath); `null` deletes a key; `$patch: delete` deletes a list element
// or a mapping; `$patch: replace` replaces. `where` names the patch in messages.
common::Status StrategicMerge(YAML::Node target, const YAML::Node& patch, const std::string& where);

// Applies one JSON 6902 patch (a sequence of {op, path, value|from}) to `target`. Supports
// add, remove, replace, move, copy and test.
common::Status ApplyJson6902(YAML::Node& target, const YAML::Node& ops, const std::string& where);

}  // namespace tg::audit
