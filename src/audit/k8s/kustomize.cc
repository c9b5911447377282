// The kustomize build, in kustomize's order: resources, then components (each adds its resources
// and applies its transforms to everything gathered so far), then this kustomization's patches,
// name prefix/suffix, namespace, labels and annotations, images and replicas.
//
// yaml-cpp pitfall: assigning to a Node handle that already refers to a node rewrites that node in
// place (it does not rebind the handle). Navigation therefore rebinds with reset(), and assignment
// is used only where an in-place edit is meant.
#include "audit/k8s/kustomize.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <regex>
#include <set>

#include "audit/k8s/k8s_audit.h"
#include "audit/k8s/k8s_yaml.h"
#include "audit/k8s/kustomize_internal.h"
#include "common/config.h"
#include "common/file_util.h"

namespace tg::audit {
namespace {

namespace fs = std::filesystem;
using common::Result;
using common::Status;

constexpr int kMaxNesting = 16;
constexpr const char* kPipeHint =
    "render it with `kubectl kustomize DIR | truegreen audit k8s -` instead";

struct Build {
  std::vector<KustomizeObject>* objects;
  std::vector<fs::path> stack;  // canonical kustomization directories being built (cycle check)
};

struct Kustomization {
  fs::path dir;   // canonical
  fs::path file;  // kustomization.yaml
  YAML::Node node;
};

// Keys this reader applies; everything else is refused by name.
const std::set<std::string, std::less<>>& SupportedKeys() {
  static const std::set<std::string, std::less<>> k = {"apiVersion",
                                                       "kind",
                                                       "metadata",
                                                       "resources",
                                                       "bases",
                                                       "components",
                                                       "patches",
                                                       "patchesStrategicMerge",
                                                       "patchesJson6902",
                                                       "namePrefix",
                                                       "nameSuffix",
                                                       "namespace",
                                                       "images",
                                                       "replicas",
                                                       "commonLabels",
                                                       "labels",
                                                       "commonAnnotations"};
  return k;
}

bool IsRemote(std::string_view ref) {
  return ref.find("://") != std::string_view::npos || ref.rfind("git@", 0) == 0 ||
         ref.rfind("github.com/", 0) == 0 || ref.find("?ref=") != std::string_view::npos;
}

// `rel` inside `root`, symlinks followed; "" when it escapes.
fs::path Contained(const fs::path& root, const std::string& rel) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(root / rel, ec);
  if (ec) return {};
  auto [r, q] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
  return r == root.end() ? p : fs::path();
}

Status ReadKustomizationFile(const fs::path& dir, Kustomization* k) {
  std::error_code ec;
  k->dir = fs::canonical(dir, ec);
  if (ec) return Status::InvalidArg(fmt::format("{}: {}", dir.string(), ec.message()));
  for (const char* n : {"kustomization.yaml", "kustomization.yml", "Kustomization"}) {
    if (fs::is_regular_file(k->dir / n, ec)) {
      k->file = k->dir / n;
      break;
    }
  }
  if (k->file.empty()) {
    return Status::InvalidArg(
        fmt::format("{}: a directory without kustomization.yaml (give the manifest files instead)",
                    dir.string()));
  }
  TG_ASSIGN_OR_RETURN(std::string text,
                      common::ReadFileLimited(k->file.string(), common::kMaxConfigBytes));
  TG_ASSIGN_OR_RETURN(k->node, common::ParseYaml(text, k->file.string()));
  std::size_t visited = 0;
  TG_RETURN_IF_ERROR(
      CheckYamlBounds(k->node, k->file.string(), BoundsForText(text.size()), &visited));
  if (!k->node.IsMap()) {
    return Status::InvalidArg(fmt::format("{}: expected a mapping, found {}",
                                          common::YamlWhere(k->node, k->file.string()),
                                          YamlKind(k->node)));
  }
  for (auto it = k->node.begin(); it != k->node.end(); ++it) {
    std::string key = YamlScalar(it->first);
    if (SupportedKeys().count(key) == 0) {
      return Status::InvalidArg(fmt::format(
          "{}: kustomize feature '{}' is not supported by `audit k8s` (it could change what "
          "runs, so it is not skipped); {}",
          common::YamlWhere(it->first, k->file.string()), key, kPipeHint));
    }
  }
  return Status::Ok();
}

// A list of strings under `key` (absent = empty).
Result<std::vector<std::pair<std::string, YAML::Node>>> StringList(const Kustomization& k,
                                                                   std::string_view key) {
  std::vector<std::pair<std::string, YAML::Node>> out;
  YAML::Node n = YamlChild(k.node, key);
  if (!YamlPresent(n)) return out;
  if (!n.IsSequence()) {
    return Status::InvalidArg(fmt::format("{}: '{}' must be a list, found {}",
                                          common::YamlWhere(n, k.file.string()), key, YamlKind(n)));
  }
  for (const auto& e : n) {
    if (!e.IsScalar() || e.Scalar().empty()) {
      return Status::InvalidArg(fmt::format("{}: '{}' entries must be paths, found {}",
                                            common::YamlWhere(e, k.file.string()), key,
                                            YamlKind(e)));
    }
    out.emplace_back(e.Scalar(), e);
  }
  return out;
}

// Reads a YAML file that `k` names (resource or patch), contained in k's directory.
Result<std::vector<YAML::Node>> ReadContainedYaml(const Kustomization& k, const std::string& rel,
                                                  const YAML::Node& at, std::string* path) {
  std::string where = common::YamlWhere(at, k.file.string());
  if (IsRemote(rel)) {
    return Status::InvalidArg(
        fmt::format("{}: remote resource '{}' is not supported; {}", where, rel, kPipeHint));
  }
  fs::path p = Contained(k.dir, rel);
  if (p.empty()) {
    return Status::InvalidArg(fmt::format(
        "{}: '{}' resolves outside the kustomization directory {} (kustomize's default load "
        "restrictor allows only files under it)",
        where, rel, k.dir.string()));
  }
  *path = p.string();
  TG_ASSIGN_OR_RETURN(std::string text, common::ReadFileLimited(*path, common::kMaxConfigBytes));
  auto docs = common::ParseYamlDocuments(text, *path);
  if (!docs.ok()) {
    return Status::InvalidArg(
        fmt::format("{}: '{}' is not valid YAML: {}", where, rel, docs.status().message()));
  }
  std::size_t visited = 0;
  for (const auto& d : *docs) {
    TG_RETURN_IF_ERROR(CheckYamlBounds(d, *path, BoundsForText(text.size()), &visited));
  }
  return std::move(*docs);
}

Status BuildDir(const fs::path& dir, const YAML::Node& at, const std::string& at_file, Build* b,
                bool component);

Status AddResources(const Kustomization& k, Build* b) {
  for (const char* key : {"resources", "bases"}) {
    TG_ASSIGN_OR_RETURN(auto list, StringList(k, key));
    for (const auto& [rel, node] : list) {
      std::error_code ec;
      if (!IsRemote(rel) && fs::is_directory(k.dir / rel, ec)) {
        // A base is built on its own: its transforms apply to its objects only.
        std::vector<KustomizeObject> base;
        Build sub{&base, b->stack};
        TG_RETURN_IF_ERROR(BuildDir(k.dir / rel, node, k.file.string(), &sub, false));
        for (auto& o : base) b->objects->push_back(std::move(o));
        continue;
      }
      std::string path;
      TG_ASSIGN_OR_RETURN(std::vector<YAML::Node> docs, ReadContainedYaml(k, rel, node, &path));
      int index = 0;
      bool any = false;
      for (const auto& d : docs) {
        ++index;
        if (!YamlPresent(d)) continue;
        any = true;
        YAML::Node meta = YamlChild(d, "metadata");
        b->objects->push_back({YAML::Clone(d), path, index, YamlScalar(YamlChild(meta, "name")),
                               YamlScalar(YamlChild(meta, "namespace"))});
      }
      if (!any) {
        return Status::InvalidArg(fmt::format("{}: resource '{}' holds no Kubernetes objects",
                                              common::YamlWhere(node, k.file.string()), rel));
      }
    }
  }
  return Status::Ok();
}

// ----- patch targets -------------------------------------------------------------------------

struct Target {
  std::string kind, name, ns, group, version;
};

std::string Meta(const YAML::Node& obj, std::string_view key) {
  return YamlScalar(YamlChild(YamlChild(obj, "metadata"), key));
}

// kustomize matches a target's name as an anchored regular expression; names are short (DNS
// names, at most 253 bytes), which keeps std::regex's recursion small.
bool NameMatches(const std::string& pattern, const std::string& name) {
  if (pattern.empty()) return true;
  if (pattern.find_first_of("^$.*+?()[]{}|\\") == std::string::npos) return pattern == name;
  if (pattern.size() > 253 || name.size() > 253) return false;
  try {
    return std::regex_match(name, std::regex(pattern));
  } catch (const std::regex_error&) {
    return false;
  }
}

bool Matches(const Target& t, const YAML::Node& obj) {
  std::string api = YamlScalar(YamlChild(obj, "apiVersion"));
  std::size_t slash = api.find('/');
  std::string group = slash == std::string::npos ? "" : api.substr(0, slash);
  std::string version = slash == std::string::npos ? api : api.substr(slash + 1);
  if (!t.kind.empty() && t.kind != YamlScalar(YamlChild(obj, "kind"))) return false;
  if (!t.group.empty() && t.group != group) return false;
  if (!t.version.empty() && t.version != version) return false;
  if (!t.ns.empty() && t.ns != Meta(obj, "namespace")) return false;
  return NameMatches(t.name, Meta(obj, "name"));
}

Result<Target> ReadTarget(const YAML::Node& n, const std::string& file) {
  Target t;
  if (!YamlPresent(n)) return t;
  if (!n.IsMap()) {
    return Status::InvalidArg(
        fmt::format("{}: 'target' must be a mapping", common::YamlWhere(n, file)));
  }
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string key = YamlScalar(it->first);
    std::string v = YamlScalar(it->second);
    if (key == "kind") {
      t.kind = v;
    } else if (key == "name") {
      t.name = v;
    } else if (key == "namespace") {
      t.ns = v;
    } else if (key == "group") {
      t.group = v;
    } else if (key == "version") {
      t.version = v;
    } else {
      return Status::InvalidArg(fmt::format(
          "{}: patch target field '{}' is not supported (kind, name, namespace, group, version "
          "are); {}",
          common::YamlWhere(it->first, file), key, kPipeHint));
    }
  }
  return t;
}

// ----- applying patches ------------------------------------------------------------------------

// The patch documents of one `patches`/`patchesStrategicMerge`/`patchesJson6902` entry.
Result<std::vector<YAML::Node>> PatchDocuments(const Kustomization& k, const YAML::Node& entry,
                                               std::string* where) {
  *where = common::YamlWhere(entry, k.file.string());
  YAML::Node inline_patch = entry.IsScalar() ? YAML::Node() : YamlChild(entry, "patch");
  std::string path = entry.IsScalar() ? entry.Scalar() : YamlScalar(YamlChild(entry, "path"));
  if (YamlPresent(inline_patch)) {
    if (!inline_patch.IsScalar()) return std::vector<YAML::Node>{inline_patch};
    std::string text = inline_patch.Scalar();
    auto docs = common::ParseYamlDocuments(text, *where + " (inline patch)");
    if (!docs.ok()) return docs.status();
    std::size_t visited = 0;
    for (const auto& d : *docs) {
      TG_RETURN_IF_ERROR(CheckYamlBounds(d, *where, BoundsForText(text.size()), &visited));
    }
    return std::move(*docs);
  }
  if (path.empty()) {
    return Status::InvalidArg(*where + ": a patch needs 'path' or 'patch'");
  }
  std::string file;
  TG_ASSIGN_OR_RETURN(std::vector<YAML::Node> docs, ReadContainedYaml(k, path, entry, &file));
  *where = file;
  return docs;
}

Status ApplyPatchDoc(const YAML::Node& doc, const Target& target, bool json6902,
                     const std::string& where, Build* b) {
  if (!YamlPresent(doc)) return Status::Ok();
  bool is_json = json6902 || doc.IsSequence();
  Target t = target;
  if (!is_json && t.kind.empty() && t.name.empty()) {
    t.kind = YamlScalar(YamlChild(doc, "kind"));
    t.name = Meta(doc, "name");
    t.ns = Meta(doc, "namespace");
    if (t.kind.empty() || t.name.empty()) {
      return Status::InvalidArg(fmt::format(
          "{}: a strategic-merge patch without a target needs kind and metadata.name", where));
    }
  }
  int hits = 0;
  bool deleted = false;
  for (auto it = b->objects->begin(); it != b->objects->end(); ++it) {
    if (!Matches(t, it->node)) continue;
    ++hits;
    if (is_json) {
      TG_RETURN_IF_ERROR(ApplyJson6902(it->node, doc, where));
    } else if (YamlScalar(YamlChild(doc, "$patch")) == "delete") {
      it->node.reset();  // rebinds the handle to a null node; removed below
      deleted = true;
    } else {
      // kustomize gives the patch each target's own name, namespace and kind before merging, so
      // a patch selected by `target:` never renames what it patches.
      YAML::Node p = YAML::Clone(doc);
      if (p.IsMap() && YamlChild(p, "metadata").IsMap()) {
        p["metadata"].remove("name");
        p["metadata"].remove("namespace");
      }
      if (p.IsMap()) {
        p.remove("kind");
        p.remove("apiVersion");
      }
      TG_RETURN_IF_ERROR(StrategicMerge(it->node, p, where));
    }
  }
  if (deleted) {
    // Rebuild instead of erase(): erase move-assigns the elements after the gap, and assigning
    // one yaml-cpp handle to another rewrites the node the target already refers to.
    std::vector<KustomizeObject> kept;
    for (const KustomizeObject& o : *b->objects) {
      if (o.node.IsMap()) kept.push_back(o);
    }
    b->objects->swap(kept);
  }
  if (hits == 0) {
    return Status::InvalidArg(fmt::format(
        "{}: the patch matches no resource (target kind '{}', name '{}'); kustomize fails the "
        "same way",
        where, t.kind, t.name));
  }
  return Status::Ok();
}

Status ApplyPatches(const Kustomization& k, Build* b) {
  for (const char* key : {"patchesStrategicMerge", "patches", "patchesJson6902"}) {
    YAML::Node list = YamlChild(k.node, key);
    if (!YamlPresent(list)) continue;
    if (!list.IsSequence()) {
      return Status::InvalidArg(
          fmt::format("{}: '{}' must be a list", common::YamlWhere(list, k.file.string()), key));
    }
    bool json = std::string_view(key) == "patchesJson6902";
    for (const auto& entry : list) {
      if (!entry.IsScalar() && !entry.IsMap()) {
        return Status::InvalidArg(fmt::format("{}: '{}' entries must be paths or mappings",
                                              common::YamlWhere(entry, k.file.string()), key));
      }
      if (entry.IsScalar() && std::string_view(key) == "patchesStrategicMerge" &&
          entry.Scalar().find('\n') != std::string::npos) {
        // An inline patch written as a block scalar.
        YAML::Node wrapped;
        wrapped["patch"] = entry.Scalar();
        std::string where;
        TG_ASSIGN_OR_RETURN(auto docs, PatchDocuments(k, wrapped, &where));
        where = common::YamlWhere(entry, k.file.string());
        for (const auto& d : docs) TG_RETURN_IF_ERROR(ApplyPatchDoc(d, {}, false, where, b));
        continue;
      }
      if (entry.IsMap() && YamlPresent(YamlChild(entry, "options"))) {
        return Status::InvalidArg(fmt::format("{}: patch 'options' are not supported; {}",
                                              common::YamlWhere(entry, k.file.string()),
                                              kPipeHint));
      }
      TG_ASSIGN_OR_RETURN(
          Target t,
          ReadTarget(entry.IsMap() ? YamlChild(entry, "target") : YAML::Node(), k.file.string()));
      std::string where;
      TG_ASSIGN_OR_RETURN(auto docs, PatchDocuments(k, entry, &where));
      for (const auto& d : docs) TG_RETURN_IF_ERROR(ApplyPatchDoc(d, t, json, where, b));
    }
  }
  return Status::Ok();
}

// ----- transformers --------------------------------------------------------------------------

// The pod spec of a workload (Undefined for other kinds).
YAML::Node PodTemplate(const YAML::Node& obj) {
  std::string kind = YamlScalar(YamlChild(obj, "kind"));
  YAML::Node spec = YamlChild(obj, "spec");
  if (kind == "CronJob") spec = YamlChild(YamlChild(spec, "jobTemplate"), "spec");
  return YamlChild(spec, "template");
}

Status ApplyLabels(const Kustomization& k, Build* b) {
  const std::string file = k.file.string();
  YAML::Node common_labels = YamlChild(k.node, "commonLabels");
  if (YamlPresent(common_labels)) {
    if (!common_labels.IsMap()) {
      return Status::InvalidArg(common::YamlWhere(common_labels, file) +
                                ": 'commonLabels' must be a mapping");
    }
    for (auto& o : *b->objects) ApplyLabelFields(o.node, common_labels, true, true);
  }
  YAML::Node annotations = YamlChild(k.node, "commonAnnotations");
  if (YamlPresent(annotations)) {
    if (!annotations.IsMap()) {
      return Status::InvalidArg(common::YamlWhere(annotations, file) +
                                ": 'commonAnnotations' must be a mapping");
    }
    for (auto& o : *b->objects) ApplyAnnotationFields(o.node, annotations);
  }
  YAML::Node labels = YamlChild(k.node, "labels");
  if (!YamlPresent(labels)) return Status::Ok();
  if (!labels.IsSequence()) {
    return Status::InvalidArg(common::YamlWhere(labels, file) + ": 'labels' must be a list");
  }
  for (const auto& l : labels) {
    YAML::Node pairs = YamlChild(l, "pairs");
    if (!pairs.IsMap()) {
      return Status::InvalidArg(common::YamlWhere(l, file) +
                                ": a 'labels' entry needs 'pairs' (a mapping)");
    }
    bool sel = YamlScalar(YamlChild(l, "includeSelectors")) == "true";
    bool tmpl = sel || YamlScalar(YamlChild(l, "includeTemplates")) == "true";
    for (auto& o : *b->objects) ApplyLabelFields(o.node, pairs, sel, tmpl);
  }
  return Status::Ok();
}

void RetagContainers(YAML::Node pod_spec, const std::vector<KustomizeImage>& images) {
  for (const char* key : {"initContainers", "containers"}) {
    YAML::Node seq = YamlChild(pod_spec, key);
    if (!seq.IsSequence()) continue;
    for (auto c : seq) {
      YAML::Node image = YamlChild(c, "image");
      if (!image.IsScalar()) continue;
      std::string now = ApplyKustomizeImages(image.Scalar(), images);
      if (now != image.Scalar()) c["image"] = now;
    }
  }
}

Status ApplyImagesAndReplicas(const Kustomization& k, Build* b) {
  const std::string file = k.file.string();
  YAML::Node imgs = YamlChild(k.node, "images");
  if (YamlPresent(imgs)) {
    if (!imgs.IsSequence()) {
      return Status::InvalidArg(common::YamlWhere(imgs, file) + ": 'images' must be a list");
    }
    std::vector<KustomizeImage> images;
    for (const auto& i : imgs) {
      KustomizeImage ki{YamlScalar(YamlChild(i, "name")), YamlScalar(YamlChild(i, "newName")),
                        YamlScalar(YamlChild(i, "newTag")), YamlScalar(YamlChild(i, "digest"))};
      if (ki.name.empty()) {
        return Status::InvalidArg(common::YamlWhere(i, file) + ": images entry without 'name'");
      }
      images.push_back(std::move(ki));
    }
    for (auto& o : *b->objects) {
      YAML::Node tmpl = PodTemplate(o.node);
      YAML::Node spec = YamlScalar(YamlChild(o.node, "kind")) == "Pod" ? YamlChild(o.node, "spec")
                                                                       : YamlChild(tmpl, "spec");
      RetagContainers(spec, images);
    }
  }
  YAML::Node reps = YamlChild(k.node, "replicas");
  if (!YamlPresent(reps)) return Status::Ok();
  if (!reps.IsSequence()) {
    return Status::InvalidArg(common::YamlWhere(reps, file) + ": 'replicas' must be a list");
  }
  for (const auto& r : reps) {
    std::string name = YamlScalar(YamlChild(r, "name"));
    std::string count = YamlScalar(YamlChild(r, "count"));
    long long n = -1;
    auto [p, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
    if (name.empty() || ec != std::errc() || p != count.data() + count.size() || n < 0) {
      return Status::InvalidArg(common::YamlWhere(r, file) +
                                ": a 'replicas' entry needs 'name' and a 'count' >= 0");
    }
    int hits = 0;
    for (auto& o : *b->objects) {
      if (Meta(o.node, "name") != name || !HasReplicasField(o.node)) continue;
      o.node["spec"]["replicas"] = n;
      ++hits;
    }
    if (hits == 0) {
      return Status::InvalidArg(
          fmt::format("{}: replicas: no resource named '{}'", common::YamlWhere(r, file), name));
    }
  }
  return Status::Ok();
}

// Kinds whose Service references kustomize's name-reference transformer follows and this reader
// does not: rendering them under a new name or namespace would leave a webhook or an aggregated
// API pointing at a Service that no longer exists under that name, so the reader refuses them.
bool HoldsUnfollowedServiceReference(const YAML::Node& obj) {
  std::string kind = YamlScalar(YamlChild(obj, "kind"));
  if (kind == "MutatingWebhookConfiguration" || kind == "ValidatingWebhookConfiguration" ||
      kind == "APIService") {
    return true;
  }
  if (kind != "CustomResourceDefinition") return false;
  YAML::Node conversion = YamlChild(YamlChild(obj, "spec"), "conversion");
  return YamlChild(conversion, "webhook").IsDefined();
}

Status ApplyNames(const Kustomization& k, Build* b) {
  std::string prefix = YamlScalar(YamlChild(k.node, "namePrefix"));
  std::string suffix = YamlScalar(YamlChild(k.node, "nameSuffix"));
  std::string ns = YamlScalar(YamlChild(k.node, "namespace"));
  if (!prefix.empty() || !suffix.empty() || !ns.empty()) {
    for (const auto& o : *b->objects) {
      if (!o.node.IsMap() || !HoldsUnfollowedServiceReference(o.node)) continue;
      return Status::InvalidArg(fmt::format(
          "{}: namePrefix/nameSuffix/namespace with a {} ('{}', from {}): the built-in reader "
          "does not rewrite its Service references; {}",
          k.file.string(), YamlScalar(YamlChild(o.node, "kind")), Meta(o.node, "name"), o.source,
          kPipeHint));
    }
  }
  for (auto& o : *b->objects) {
    if (!o.node.IsMap()) continue;
    YAML::Node meta = o.node["metadata"];
    if (!prefix.empty() || !suffix.empty()) meta["name"] = prefix + Meta(o.node, "name") + suffix;
    if (!ns.empty()) meta["namespace"] = ns;
  }
  return Status::Ok();
}

Status ApplyTransforms(const Kustomization& k, Build* b) {
  TG_RETURN_IF_ERROR(ApplyPatches(k, b));
  TG_RETURN_IF_ERROR(ApplyNames(k, b));
  TG_RETURN_IF_ERROR(ApplyLabels(k, b));
  return ApplyImagesAndReplicas(k, b);
}

Status BuildDir(const fs::path& dir, const YAML::Node& at, const std::string& at_file, Build* b,
                bool component) {
  std::string where = at_file.empty() ? dir.string() : common::YamlWhere(at, at_file);
  if (static_cast<int>(b->stack.size()) >= kMaxNesting) {
    return Status::InvalidArg(fmt::format(
        "{}: depth limit hit: kustomizations nested more than {} levels deep", where, kMaxNesting));
  }
  Kustomization k;
  TG_RETURN_IF_ERROR(ReadKustomizationFile(dir, &k));
  if (std::find(b->stack.begin(), b->stack.end(), k.dir) != b->stack.end()) {
    return Status::InvalidArg(
        fmt::format("{}: cycle: kustomization {} includes itself", where, k.dir.string()));
  }
  std::string kind = YamlScalar(YamlChild(k.node, "kind"));
  if (component != (kind == "Component")) {
    return Status::InvalidArg(fmt::format("{}: {} is kind '{}' but is listed under '{}'", where,
                                          k.file.string(), kind.empty() ? "Kustomization" : kind,
                                          component ? "components" : "resources"));
  }
  b->stack.push_back(k.dir);
  TG_RETURN_IF_ERROR(AddResources(k, b));
  TG_ASSIGN_OR_RETURN(auto components, StringList(k, "components"));
  for (const auto& [rel, node] : components) {
    if (IsRemote(rel)) {
      return Status::InvalidArg(fmt::format("{}: remote component '{}' is not supported; {}",
                                            common::YamlWhere(node, k.file.string()), rel,
                                            kPipeHint));
    }
    TG_RETURN_IF_ERROR(BuildDir(k.dir / rel, node, k.file.string(), b, true));
  }
  TG_RETURN_IF_ERROR(ApplyTransforms(k, b));
  b->stack.pop_back();
  return Status::Ok();
}

}  // namespace

Status BuildKustomization(const std::string& dir, std::vector<KustomizeObject>* out) {
  Build b{out, {}};
  try {
    TG_RETURN_IF_ERROR(BuildDir(dir, YAML::Node(), "", &b, false));
    FixNameReferences(out);
    return Status::Ok();
  } catch (const YAML::Exception& e) {
    return Status::InvalidArg(fmt::format("{}: line {}: {}", dir, e.mark.line + 1, e.msg));
  }
}

}  // namespace tg::audit
