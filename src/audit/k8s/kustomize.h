// A kustomize reader for the audit: builds the objects a kustomization directory renders, with the
// features that change what runs applied, so `audit k8s DIR` judges the same objects that
// `kubectl kustomize DIR` would deploy.
//
// Supported: resources (files and kustomization directories; `bases` as its old name),
// components, patches (strategic merge and JSON 6902, inline or from a file, with a target of
// kind/name/namespace/group/version), patchesStrategicMerge, patchesJson6902, namePrefix,
// nameSuffix, namespace, images, replicas, commonLabels, labels, commonAnnotations, with
// kustomize 5.5's field specs and name-reference rewriting (kustomize_internal.h); the result is
// compared object by object with `kubectl kustomize` in tests/audit_kustomize_parity_test.cc.
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
  // Name and namespace as read from the file, before any prefix, suffix or namespace: references
  // to the object by its original name are rewritten to its final name, as kustomize does.
  std::string original_name, original_namespace;
};

// Builds the objects of the kustomization in `dir`.
common::Status BuildKustomization(const std::string& dir, std::vector<KustomizeObject>* out);

// The renderer `audit k8s DIR` uses when asked for one that exists: "kubectl kustomize" when
// kubectl is on PATH, else "kustomize build" when kustomize is, else "" (use the built-in reader).
std::string FindKustomizeCommand();
// The executable `program` names: itself when it holds a '/', else the first match on PATH; ""
// when there is none.
std::string FindOnPath(const std::string& program);

// Renders `dir` with an external kustomize: `command` is split on spaces (no shell) and run with
// DIR appended, for at most 120 s and 16 MiB of output. INVALID_ARG when the command is not on
// PATH, fails (its stderr, first 2000 bytes, is in the message), times out, or prints YAML that is
// malformed or breaks the bounds of k8s_yaml.h. Objects are named "<dir> (<command>)".
common::Status RenderWithKustomize(const std::string& command, const std::string& dir,
                                   std::vector<KustomizeObject>* out);

// Strategic-merge `patch` into `target` (exposed for tests). Lists of mappings merge by `name`
// (or containerPort, mountPath); `null` deletes a key; `$patch: delete` deletes a list element
// or a mapping; `$patch: replace` replaces. `where` names the patch in messages.
common::Status StrategicMerge(YAML::Node target, const YAML::Node& patch, const std::string& where);

// Applies one JSON 6902 patch (a sequence of {op, path, value|from}) to `target`. Supports
// add, remove, replace, move, copy and test.
common::Status ApplyJson6902(YAML::Node& target, const YAML::Node& ops, const std::string& where);

}  // namespace tg::audit
