// Kubernetes manifest rules. yaml-cpp nodes are only read through the helpers below (a const
// operator[] on a scalar throws), and every finding carries the line of the nearest node that
// exists, so a missing field is reported at its parent.
#include "audit/k8s/k8s_audit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "audit/k8s/k8s_security.h"
#include "audit/k8s/k8s_workloads.h"
#include "audit/k8s/k8s_yaml.h"
#include "audit/k8s/kustomize.h"
#include "audit/report/secret_shape.h"
#include "common/file_util.h"
#include "common/strings.h"
#include "common/yaml_stream.h"

namespace tg::audit {
namespace {

namespace fs = std::filesystem;
using common::Status;

YAML::Node Child(const YAML::Node& n, std::string_view key) { return YamlChild(n, key); }
bool Present(const YAML::Node& n) { return YamlPresent(n); }
std::string Scalar(const YAML::Node& n) { return YamlScalar(n); }
int LineOf(const YAML::Node& n) { return YamlLine(n); }

using common::Lower;

std::optional<long long> ToInt(std::string_view s) {
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

using common::IsPinnedByDigest;

// Splits "name:tag@digest" into its parts (the tag colon is the one after the last '/').
void SplitImage(const std::string& ref, std::string* name, std::string* tag, std::string* digest) {
  std::string r = ref;
  std::size_t at = r.find('@');
  *digest = at == std::string::npos ? "" : r.substr(at + 1);
  if (at != std::string::npos) r = r.substr(0, at);
  std::size_t slash = r.rfind('/');
  std::size_t colon = r.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    *tag = r.substr(colon + 1);
    r = r.substr(0, colon);
  } else {
    tag->clear();
  }
  *name = r;
}

struct Ctx {
  const std::string& file;
  int document;
  std::string object;
  K8sAuditReport* report;
  WorkloadRole role = WorkloadRole::kInferenceServer;
  std::string role_reason;
};

void Add(Ctx& ctx, const char* rule, int line, const std::string& container,
         const std::string& field, const std::string& message, const std::string& fix) {
  K8sFinding kf;
  kf.finding.rule = rule;
  kf.finding.severity = Severity::kError;
  kf.finding.path = ctx.file;
  kf.finding.line = line;
  std::string where = fmt::format("[doc {}] {}", ctx.document, ctx.object);
  if (!container.empty()) where += fmt::format(" container '{}'", container);
  kf.finding.message = fmt::format("{} ({}): {}", where, field, message);
  kf.finding.fix = fix;
  kf.document = ctx.document;
  kf.object = ctx.object;
  kf.container = container;
  kf.field = field;
  ctx.report->findings.push_back(std::move(kf));
}

struct Container {
  YAML::Node node;
  std::string name, image, path;
  bool init = false;
  bool gpu_limit = false;  // nvidia.com/gpu or nvidia.com/mig-* in limits, value >= 1
  bool mig_limit = false;
  long long gpu_count = 0;
  bool looks_gpu = false;
  bool truegreen = false;
  bool visible_all = false;
  int visible_line = 0;
  bool runtime_image = false;  // KServe model: the ServingRuntime supplies the image
};

bool ImageLooksGpu(const std::string& image) {
  std::string i = Lower(image);
  for (const char* k : {"cuda", "tensorrt", "triton", "truegreen", "onnxruntime-gpu", "nvidia/",
                        "-gpu", "gpu-", "vllm", "cudnn"}) {
    if (i.find(k) != std::string::npos) return true;
  }
  return false;
}

bool IsTruegreen(const Container& c) {
  std::string name, tag, digest;
  SplitImage(Lower(c.image), &name, &tag, &digest);
  if (common::Basename(name).starts_with("truegreen")) return true;
  YAML::Node cmd = Child(c.node, "command");
  if (cmd.IsDefined() && cmd.IsSequence() && cmd.size() > 0) {
    std::string c0 = Scalar(cmd[0]);
    if (common::Basename(c0) == "truegreen") return true;
  }
  return false;
}

// truegreen subcommands that never touch a GPU (load generation, comparison, the API steps of the
// blue-green gate, audits): such a container may opt out of GPU injection.
bool TruegreenCommandNeedsNoGpu(const YAML::Node& node) {
  std::vector<std::string> words;
  for (const char* key : {"command", "args"}) {
    YAML::Node seq = Child(node, key);
    if (!seq.IsDefined() || !seq.IsSequence()) continue;
    for (const auto& a : seq) words.push_back(Scalar(a));
  }
  std::size_t i = 0;
  if (!words.empty()) {
    const std::string& w = words[0];
    if (common::Basename(w) == "truegreen") i = 1;
  }
  // A leading flag (a global option) hides the command: stay conservative.
  if (i >= words.size() || words[i].starts_with("-")) return false;
  static const std::set<std::string> kNoGpu = {"bench",   "compare", "k8s",      "audit",   "diff",
                                               "logscan", "help",    "tokenize", "schedule"};
  return kNoGpu.count(words[i]) != 0;
}

Container ReadContainer(const YAML::Node& node, const std::string& path, bool init,
                        const std::vector<KustomizeImage>& images) {
  Container c;
  c.node = node;
  c.path = path;
  c.init = init;
  c.name = Scalar(Child(node, "name"));
  c.image = ApplyKustomizeImages(Scalar(Child(node, "image")), images);
  YAML::Node limits = Child(Child(node, "resources"), "limits");
  if (limits.IsDefined() && limits.IsMap()) {
    for (auto it = limits.begin(); it != limits.end(); ++it) {
      std::string key = Scalar(it->first);
      if (key != "nvidia.com/gpu" && !key.starts_with("nvidia.com/mig-")) continue;
      std::optional<long long> n = ToInt(Scalar(it->second));
      if (n && *n >= 1) {
        c.gpu_limit = true;
        c.gpu_count += *n;
        if (key.starts_with("nvidia.com/mig-")) c.mig_limit = true;
      }
    }
  }
  c.looks_gpu = ImageLooksGpu(c.image);
  YAML::Node env = Child(node, "env");
  bool no_devices = false;  // NVIDIA_VISIBLE_DEVICES=void: the container runtime injects no GPU
  if (env.IsDefined() && env.IsSequence()) {
    for (const auto& e : env) {
      std::string n = Scalar(Child(e, "name"));
      std::string v = Lower(Scalar(Child(e, "value")));
      if (n == "NVIDIA_VISIBLE_DEVICES" && v == "void") {
        no_devices = true;
        continue;
      }
      if (n.starts_with("NVIDIA_") || n == "CUDA_VISIBLE_DEVICES") c.looks_gpu = true;
      // Only "all" leaks: "void"/empty/unset means no GPU injection at all (container toolkit).
      if (n == "NVIDIA_VISIBLE_DEVICES" && v == "all") {
        c.visible_all = true;
        c.visible_line = LineOf(e);
      }
    }
  }
  for (const char* key : {"command", "args"}) {
    YAML::Node seq = Child(node, key);
    if (!seq.IsDefined() || !seq.IsSequence()) continue;
    for (const auto& a : seq) {
      std::string s = Lower(Scalar(a));
      if (s.find("cudaexecutionprovider") != std::string::npos ||
          s.find("tensorrtexecutionprovider") != std::string::npos ||
          s.find("--gpu") != std::string::npos || s.find("cuda") != std::string::npos) {
        c.looks_gpu = true;
      }
    }
  }
  c.truegreen = IsTruegreen(c);
  if (c.truegreen) c.looks_gpu = true;
  // An explicit opt-out is honoured only where it is true: a truegreen container running a GPU
  // command (serve, admit, run, ...) with no devices is exactly the fallback this rule catches.
  if (no_devices && !c.gpu_limit && (!c.truegreen || TruegreenCommandNeedsNoGpu(node))) {
    c.looks_gpu = false;
  }
  return c;
}

// ----- node constraints ------------------------------------------------------------------------

struct Expr {
  std::string op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
};
using Term = std::map<std::string, std::vector<Expr>>;  // label key -> ANDed expressions

// Does some integer label value in [lo, hi] satisfy every expression on the key? A missing label
// satisfies NotIn/DoesNotExist only, which the caller treats as "admits nodes without the label".
bool AdmitsInRange(const std::vector<Expr>& exprs, long long lo, long long hi) {
  if (lo > hi) return false;
  std::vector<long long> cand = {lo, hi};
  for (const Expr& e : exprs) {
    for (const auto& v : e.values) {
      // Label values are small integers; huge ones would overflow the +-1 below.
      if (auto n = ToInt(v); n && *n > -(1LL << 50) && *n < (1LL << 50)) {
        for (long long d : {-1LL, 0LL, 1LL}) cand.push_back(*n + d);
      }
    }
  }
  for (long long v : cand) {
    if (v < lo || v > hi) continue;
    bool ok = true;
    for (const Expr& e : exprs) {
      std::vector<long long> nums;
      for (const auto& s : e.values) {
        if (auto n = ToInt(s)) nums.push_back(*n);
      }
      bool in = std::find(nums.begin(), nums.end(), v) != nums.end();
      if (e.op == "In") ok = ok && in;
      if (e.op == "NotIn") ok = ok && !in;
      if (e.op == "DoesNotExist") ok = false;
      if (e.op == "Gt") ok = ok && !nums.empty() && v > nums[0];
      if (e.op == "Lt") ok = ok && !nums.empty() && v < nums[0];
      if (!ok) break;
    }
    if (ok) return true;
  }
  return false;
}

// True when a node without the label would match (no In/Exists/Gt/Lt on the key).
bool AdmitsMissing(const std::vector<Expr>& exprs) {
  for (const Expr& e : exprs) {
    if (e.op == "In" || e.op == "Exists" || e.op == "Gt" || e.op == "Lt") return false;
  }
  return true;
}

// The pod's node terms: each requiredDuringScheduling term ANDed with nodeSelector, or
// nodeSelector alone when there are none.
std::vector<Term> CollectNodeTerms(const YAML::Node& spec, const YAML::Node& req_terms) {
  std::vector<Term> terms;
  Term selector;
  YAML::Node ns = Child(spec, "nodeSelector");
  if (ns.IsDefined() && ns.IsMap()) {
    for (auto it = ns.begin(); it != ns.end(); ++it) {
      selector[Scalar(it->first)].push_back({"In", {Scalar(it->second)}});
    }
  }
  if (req_terms.IsDefined() && req_terms.IsSequence() && req_terms.size() > 0) {
    for (const auto& t : req_terms) {
      Term term = selector;
      YAML::Node exprs = Child(t, "matchExpressions");
      if (exprs.IsDefined() && exprs.IsSequence()) {
        for (const auto& e : exprs) {
          Expr x;
          x.op = Scalar(Child(e, "operator"));
          YAML::Node vals = Child(e, "values");
          if (vals.IsDefined() && vals.IsSequence()) {
            for (const auto& v : vals) x.values.push_back(Scalar(v));
          }
          term[Scalar(Child(e, "key"))].push_back(std::move(x));
        }
      }
      terms.push_back(std::move(term));
    }
  } else {
    terms.push_back(selector);
  }
  return terms;
}

// Where affinity findings are reported: one line and field for the whole affinity.
struct AffinitySite {
  int line;
  std::string field;
};

void CheckMinLabel(std::size_t ti, const Term& term, const char* key, long long min,
                   const std::string& what, const AffinitySite& site, Ctx& ctx) {
  auto it = term.find(key);
  std::vector<Expr> exprs = it == term.end() ? std::vector<Expr>{} : it->second;
  std::string problem;
  if (AdmitsMissing(exprs)) {
    problem = fmt::format("admits nodes without the label {}", key);
  } else if (AdmitsInRange(exprs, 0, min - 1)) {
    problem = fmt::format("admits nodes with {} < {}", key, min);
  }
  if (problem.empty()) return;
  Add(ctx, "k8s.node-affinity", site.line, "", site.field,
      fmt::format("nodeSelectorTerms[{}] {} ({})", ti, problem, what),
      fmt::format("require it in every term: {{key: {}, operator: Gt, values: [\"{}\"]}} "
                  "(`truegreen k8s render --matrix FILE` writes the whole affinity)",
                  key, min - 1));
}

void CheckDriverBranch(std::size_t ti, const Term& term, int branch, const AffinitySite& site,
                       Ctx& ctx) {
  auto it = term.find(kLabelDriverMajor);
  if (it != term.end() && AdmitsInRange(it->second, branch + 1, LLONG_MAX / 4)) {
    Add(ctx, "k8s.node-affinity", site.line, "", site.field,
        fmt::format("nodeSelectorTerms[{}] admits drivers newer than the pinned branch {} "
                    "({})",
                    ti, branch, kLabelDriverMajor),
        fmt::format("use {{key: {}, operator: In, values: [\"{}\"]}}", kLabelDriverMajor, branch));
  }
}

void CheckComputeCapability(std::size_t ti, const Term& term, int maj, int min,
                            const AffinitySite& site, Ctx& ctx) {
  auto mj = term.find(kLabelComputeMajor);
  auto mn = term.find(kLabelComputeMinor);
  std::vector<Expr> emaj = mj == term.end() ? std::vector<Expr>{} : mj->second;
  std::vector<Expr> emin = mn == term.end() ? std::vector<Expr>{} : mn->second;
  bool bad = AdmitsMissing(emaj) || AdmitsInRange(emaj, 0, maj - 1) ||
             (min > 0 && AdmitsInRange(emaj, maj, maj) &&
              (AdmitsMissing(emin) || AdmitsInRange(emin, 0, min - 1)));
  if (!bad) return;
  Add(ctx, "k8s.node-affinity", site.line, "", site.field,
      fmt::format("nodeSelectorTerms[{}] admits GPUs below compute capability {}.{} "
                  "(labels {}, {})",
                  ti, maj, min, kLabelComputeMajor, kLabelComputeMinor),
      min == 0 ? fmt::format("add {{key: {}, operator: Gt, values: [\"{}\"]}}", kLabelComputeMajor,
                             maj - 1)
               : fmt::format("use two terms: major Gt {} | major In [{}] and minor Gt {}", maj, maj,
                             min - 1));
}

void CheckTermAgainstMatrix(std::size_t ti, const Term& term, const GpuNodeRequirements& req,
                            const AffinitySite& site, Ctx& ctx) {
  if (req.driver_major_min) {
    CheckMinLabel(ti, term, kLabelDriverMajor, *req.driver_major_min,
                  fmt::format("the matrix requires driver {}", req.driver_text), site, ctx);
  }
  if (req.driver_branch) CheckDriverBranch(ti, term, *req.driver_branch, site, ctx);
  if (req.cuda_major_min) {
    CheckMinLabel(ti, term, kLabelCudaMajor, *req.cuda_major_min,
                  fmt::format("the matrix's CUDA runtime needs a driver supporting CUDA {}",
                              *req.cuda_major_min),
                  site, ctx);
  }
  if (req.memory_mib_min) {
    CheckMinLabel(ti, term, kLabelMemory, *req.memory_mib_min,
                  fmt::format("the matrix requires {} MiB per GPU", *req.memory_mib_min), site,
                  ctx);
  }
  if (req.compute_major) {
    CheckComputeCapability(ti, term, *req.compute_major, req.compute_minor.value_or(0), site, ctx);
  }
}

void CheckMigSelection(const std::vector<Term>& terms, const std::vector<Container>& containers,
                       const AffinitySite& site, Ctx& ctx) {
  bool any_mig = std::any_of(containers.begin(), containers.end(),
                             [](const Container& c) { return c.mig_limit; });
  bool strategy = std::all_of(terms.begin(), terms.end(), [](const Term& t) {
    return t.count(kLabelMigStrategy) != 0 && !AdmitsMissing(t.at(kLabelMigStrategy));
  });
  if (!any_mig && !strategy) {
    Add(ctx, "k8s.gpu-request", site.line, "", site.field,
        "the matrix expects MIG, but no container requests nvidia.com/mig-* and the affinity "
        "does not select MIG nodes (" +
            std::string(kLabelMigStrategy) + ")",
        "request nvidia.com/mig-<profile> (mixed strategy), or nvidia.com/gpu with "
        "nvidia.com/mig.strategy In [single]");
  }
}

void AuditAffinity(const YAML::Node& spec, const std::string& spec_path,
                   const GpuNodeRequirements& req, const std::vector<Container>& containers,
                   Ctx& ctx) {
  YAML::Node req_terms = Child(Child(Child(Child(spec, "affinity"), "nodeAffinity"),
                                     "requiredDuringSchedulingIgnoredDuringExecution"),
                               "nodeSelectorTerms");
  std::vector<Term> terms = CollectNodeTerms(spec, req_terms);
  AffinitySite site{LineOf(req_terms) != 0 ? LineOf(req_terms) : LineOf(spec),
                    spec_path + ".affinity.nodeAffinity"};
  for (std::size_t ti = 0; ti < terms.size(); ++ti) {
    CheckTermAgainstMatrix(ti, terms[ti], req, site, ctx);
  }
  if (req.mig == policy::MigExpectation::kEnabled) {
    CheckMigSelection(terms, containers, site, ctx);
  }
}

void AuditPodSecurity(const YAML::Node& spec, const std::string& spec_path,
                      const std::vector<Container>& cs, const K8sAuditOptions& opts, Ctx& ctx) {
  std::vector<PodContainerView> views;
  for (const Container& c : cs) views.push_back({c.node, c.name, c.path, c.gpu_limit});
  static const std::set<std::string> kSystemNeeds = {
      "k8s.privileged", "k8s.privilege-escalation", "k8s.capabilities",
      "k8s.host-path",  "k8s.host-namespaces",      "k8s.run-as-non-root"};
  for (PodFinding& f : PodSecurityFindings(spec, spec_path, views, {opts.runtime_class})) {
    // A system component does what NVIDIA documents for it (device-plugin socket, /dev, host
    // PID for the driver): context, not a failure. It must still be pinned and bounded.
    bool expected = ctx.role == WorkloadRole::kSystem && kSystemNeeds.count(f.rule) != 0;
    Add(ctx, f.rule, f.line, f.container, f.field,
        expected
            ? f.message + fmt::format(" (expected for a system component: {})", ctx.role_reason)
            : f.message,
        f.fix);
    ctx.report->findings.back().finding.severity = expected ? Severity::kInfo : f.severity;
  }
}

// k8s.secret-env and k8s.cuda-stubs: literal values in a container's env.
void CheckEnvLiterals(const Container& c, Ctx& ctx) {
  YAML::Node env = Child(c.node, "env");
  if (!env.IsDefined() || !env.IsSequence()) return;
  for (std::size_t i = 0; i < env.size(); ++i) {
    std::string name = Scalar(Child(env[i], "name"));
    YAML::Node vnode = Child(env[i], "value");
    std::string value = Scalar(vnode);
    std::string field = fmt::format("{}.env[{}].value", c.path, i);
    int line = LineOf(vnode) ? LineOf(vnode) : LineOf(env[i]);
    if (!IsVariableReference(value)) {
      std::string shape = SecretValueShape(value);
      if (!shape.empty() || LooksSecretName(name)) {
        Add(ctx, "k8s.secret-env", line, c.name, field,
            shape.empty()
                ? fmt::format("env {} looks like a secret and has a literal value: it is stored "
                              "in the manifest, the API server and every `kubectl get -o yaml`",
                              name)
                : fmt::format("env {} has a literal value with the shape of {}: a credential in "
                              "the manifest is readable by anyone who can read the object",
                              name, shape),
            "revoke it, store it in a Secret and use valueFrom.secretKeyRef (or envFrom "
            "secretRef)");
      }
    }
    if (name == "LD_LIBRARY_PATH") {
      for (std::size_t at = value.find("/stubs"); at != std::string::npos;
           at = value.find("/stubs", at + 1)) {
        std::size_t end = at + 6;
        if (end < value.size() && value[end] != ':' && value[end] != '/') continue;
        Add(ctx, "k8s.cuda-stubs", line, c.name, field,
            "LD_LIBRARY_PATH holds CUDA's stub folder: its libcuda.so shadows the driver's, so "
            "CUDA reports cudaErrorStubLibrary and inference falls back to the CPU",
            "remove the stubs folder from LD_LIBRARY_PATH (they are for linking only)");
        break;
      }
    }
  }
}

// Per-container rules: image digest, resources, GPU request, visible devices.
void CheckContainer(const Container& c, const std::optional<GpuNodeRequirements>& req, Ctx& ctx) {
  int cline = LineOf(c.node);
  // k8s.image-digest
  if (!IsPinnedByDigest(c.image) && !(c.runtime_image && c.image.empty())) {
    Add(ctx, "k8s.image-digest",
        LineOf(Child(c.node, "image")) ? LineOf(Child(c.node, "image")) : cline, c.name,
        c.path + ".image",
        c.image.empty() ? "no image" : fmt::format("image '{}' is not pinned by digest", c.image),
        "use name@sha256:<digest> (kustomize: images: [{name, digest}])");
  }
  // k8s.resources
  YAML::Node res = Child(c.node, "resources");
  std::vector<std::string> missing;
  for (auto [section, key] : {std::pair{"requests", "cpu"}, std::pair{"requests", "memory"},
                              std::pair{"limits", "memory"}}) {
    if (!Present(Child(Child(res, section), key)))
      missing.push_back(fmt::format("{}.{}", section, key));
  }
  if (!missing.empty()) {
    Add(ctx, "k8s.resources", LineOf(res) ? LineOf(res) : cline, c.name, c.path + ".resources",
        fmt::format("missing {}: the pod is BestEffort/Burstable without bounds and can be "
                    "evicted or OOM-killed under pressure",
                    fmt::join(missing, ", ")),
        "set resources.requests.cpu, resources.requests.memory and resources.limits.memory");
  }
  CheckEnvLiterals(c, ctx);
  // A system component (device plugin, GFD, DCGM exporter) sees GPUs by design, not by request.
  if (ctx.role == WorkloadRole::kSystem) return;
  // k8s.gpu-request
  if (c.looks_gpu && !c.gpu_limit) {
    bool in_requests = Present(Child(Child(res, "requests"), "nvidia.com/gpu"));
    Add(ctx, "k8s.gpu-request", LineOf(res) ? LineOf(res) : cline, c.name,
        c.path + ".resources.limits",
        in_requests ? "nvidia.com/gpu is in requests but not in limits (extended resources "
                      "are granted through limits)"
                    : "a GPU container (image, NVIDIA_* env or arguments) requests no "
                      "nvidia.com/gpu or nvidia.com/mig-* in limits: the device plugin "
                      "gives it no GPU and inference falls back or fails",
        "add resources.limits: {nvidia.com/gpu: 1} (or nvidia.com/mig-<profile>: 1)");
  }
  if (req && c.truegreen && c.gpu_limit && req->device_count > c.gpu_count) {
    Add(ctx, "k8s.gpu-request", LineOf(res) ? LineOf(res) : cline, c.name,
        c.path + ".resources.limits",
        fmt::format("requests {} GPU(s) but the matrix requires {} visible devices", c.gpu_count,
                    req->device_count),
        fmt::format("set nvidia.com/gpu: {}", req->device_count));
  }
  if (req && req->mig == policy::MigExpectation::kDisabled && c.mig_limit) {
    Add(ctx, "k8s.gpu-request", LineOf(res) ? LineOf(res) : cline, c.name,
        c.path + ".resources.limits",
        "requests a MIG slice (nvidia.com/mig-*) but the matrix expects MIG disabled",
        "request whole GPUs with nvidia.com/gpu");
  }
  // k8s.visible-devices-all
  if (c.visible_all && !c.gpu_limit) {
    Add(ctx, "k8s.visible-devices-all", c.visible_line ? c.visible_line : cline, c.name,
        c.path + ".env",
        "NVIDIA_VISIBLE_DEVICES=all without a GPU limit: the container toolkit exposes every "
        "GPU of the node to this container, outside the scheduler's accounting",
        "remove NVIDIA_VISIBLE_DEVICES and request nvidia.com/gpu in limits (the device "
        "plugin sets the variable)");
  }
}

// k8s.probes for a GPU container of a long-running workload.
void CheckProbes(const Container& c, Ctx& ctx) {
  int cline = LineOf(c.node);
  for (auto [probe, want] :
       {std::pair{"startupProbe", "/readyz"}, std::pair{"readinessProbe", "/readyz"},
        std::pair{"livenessProbe", "/healthz"}}) {
    YAML::Node p = Child(c.node, probe);
    std::string field = c.path + "." + probe;
    if (!Present(p)) {
      Add(ctx, "k8s.probes", cline, c.name, field,
          fmt::format("no {}: a GPU server {}", probe,
                      std::string_view(probe) == "livenessProbe"
                          ? "that wedges (lost GPU, hung kernel) is never restarted"
                          : "receives traffic before its engines are built and warmed up"),
          fmt::format("add {}: {{httpGet: {{path: {}, port: http}}}}", probe, want));
      continue;
    }
    if (!c.truegreen) continue;
    YAML::Node path_node = Child(Child(p, "httpGet"), "path");
    std::string path = Scalar(path_node);
    if (path == want) continue;
    Add(ctx, "k8s.probes", LineOf(path_node) ? LineOf(path_node) : LineOf(p), c.name,
        field + ".httpGet.path",
        path.empty() ? fmt::format("{} is not an httpGet probe of {}", probe, want)
                     : fmt::format("{} probes '{}'; truegreen answers {} on {}", probe, path,
                                   std::string_view(probe) == "livenessProbe"
                                       ? "liveness"
                                       : "readiness (GPU path proven, warmed up)",
                                   want),
        fmt::format("{}: {{httpGet: {{path: {}, port: http}}}}", probe, want));
  }
}

Status AuditPodSpec(const PodTemplate& pod, const WorkloadShape& shape, const YAML::Node& obj,
                    const K8sAuditOptions& opts, const std::vector<KustomizeImage>& images,
                    Ctx& ctx) {
  const YAML::Node& spec = pod.spec;
  const std::string& spec_path = pod.path;
  std::vector<Container> cs;
  for (const char* key : {"initContainers", "containers"}) {
    YAML::Node seq = Child(spec, key);
    if (!seq.IsDefined() || !seq.IsSequence()) continue;
    for (std::size_t i = 0; i < seq.size(); ++i) {
      cs.push_back(ReadContainer(seq[i], fmt::format("{}.{}[{}]", spec_path, key, i),
                                 std::string_view(key) == "initContainers", images));
    }
  }
  for (const auto& [node, path] : pod.extra_containers) {
    cs.push_back(ReadContainer(node, path, false, images));
    cs.back().runtime_image = true;
    if (cs.back().name.empty()) cs.back().name = path.substr(path.rfind('.') + 1);
  }
  ctx.report->workloads++;
  ctx.report->containers += static_cast<int>(cs.size());
  std::vector<std::string> imgs;
  for (const Container& c : cs) imgs.push_back(c.image);
  TG_ASSIGN_OR_RETURN(RoleDecision role, DecideRole(obj, ctx.file, pod, shape, imgs));
  ctx.role = role.role;
  ctx.role_reason = role.reason;
  ctx.report->audited.push_back({ctx.file, ctx.document, ctx.object, spec_path,
                                 std::string(WorkloadRoleName(role.role)), role.reason});
  if (cs.empty()) {
    Add(ctx, "k8s.resources", LineOf(spec), "", spec_path + ".containers",
        "the pod spec has no containers", "add the containers");
    return Status::Ok();
  }
  const std::optional<GpuNodeRequirements>& req = opts.requirements;
  bool pod_gpu = false;
  for (const Container& c : cs) pod_gpu = pod_gpu || c.looks_gpu || c.gpu_limit;
  bool server = ctx.role == WorkloadRole::kInferenceServer && !shape.operator_probes;
  for (const Container& c : cs) {
    CheckContainer(c, req, ctx);
    if (server && !c.init && (c.looks_gpu || c.gpu_limit)) CheckProbes(c, ctx);
  }
  if (req && pod_gpu && ctx.role != WorkloadRole::kSystem)
    AuditAffinity(spec, spec_path, *req, cs, ctx);
  AuditPodSecurity(spec, spec_path, cs, opts, ctx);
  return Status::Ok();
}

// An object whose pods this audit cannot read: never a silent pass.
void ReportNotAudited(const std::vector<std::string>& paths, const std::string& prefix,
                      const YAML::Node& obj, Ctx& ctx) {
  std::string where;
  for (const std::string& p : paths) where += (where.empty() ? "" : ", ") + prefix + p;
  std::string api = Scalar(Child(obj, "apiVersion"));
  Add(ctx, "k8s.not-audited", LineOf(obj), "", prefix + paths.front(),
      fmt::format("{} ({}) holds pod specs at {}; truegreen does not know this kind, so its "
                  "containers were NOT audited",
                  ctx.object, api.empty() ? "no apiVersion" : api, where),
      "audit the pods it creates (kubectl get pods -l ... -o yaml | truegreen audit k8s -), or "
      "list k8s.not-audited in --suppressions with the reason");
  ctx.report->not_audited.push_back(fmt::format("{}#{} {}", ctx.file, ctx.document, ctx.object));
}

Status AuditObject(const YAML::Node& obj, const std::string& file, int doc,
                   const K8sAuditOptions& opts, const std::vector<KustomizeImage>& images,
                   K8sAuditReport* rep, const std::string& prefix) {
  if (!obj.IsMap()) {
    return Status::InvalidArg(
        fmt::format("{}: document {} is {}, not a Kubernetes object "
                    "(a mapping with apiVersion and kind)",
                    common::YamlWhere(obj, file), doc, YamlKind(obj)));
  }
  std::string kind = Scalar(Child(obj, "kind"));
  if (kind.empty()) {
    return Status::InvalidArg(
        fmt::format("{}: document {} has no 'kind' (required: a Kubernetes "
                    "object such as Deployment)",
                    common::YamlWhere(obj, file), doc));
  }
  std::string name = Scalar(Child(Child(obj, "metadata"), "name"));
  Ctx ctx{file, doc, kind + "/" + (name.empty() ? "<unnamed>" : name), rep};
  if (kind == "List") {
    YAML::Node items = Child(obj, "items");
    if (items.IsDefined() && items.IsSequence()) {
      for (std::size_t i = 0; i < items.size(); ++i) {
        TG_RETURN_IF_ERROR(AuditObject(items[i], file, doc, opts, images, rep,
                                       fmt::format("{}items[{}].", prefix, i)));
      }
    }
    return Status::Ok();
  }
  WorkloadShape shape = LocateWorkload(obj);
  if (!shape.known) {
    std::vector<std::string> paths = FindPodSpecPaths(obj);
    if (!paths.empty()) {
      ReportNotAudited(paths, prefix, obj, ctx);
    } else {
      rep->skipped.push_back(fmt::format("{}#{} {}", file, doc, ctx.object));
    }
    return Status::Ok();
  }
  if (shape.pods.empty()) {
    if (!shape.note.empty()) {
      rep->skipped.push_back(fmt::format("{}#{} {}: {}", file, doc, ctx.object, shape.note));
      return Status::Ok();
    }
    std::string expect;
    for (const std::string& e : shape.expect) expect += (expect.empty() ? "" : " or ") + prefix + e;
    return Status::InvalidArg(fmt::format(
        "{}: {} has no pod spec at {} (found {})", common::YamlWhere(obj, file), ctx.object,
        expect.empty() ? prefix + "spec" : expect, YamlKind(Child(obj, "spec"))));
  }
  for (PodTemplate pod : shape.pods) {
    pod.path = prefix + pod.path;
    for (auto& extra : pod.extra_containers) extra.second = prefix + extra.second;
    TG_RETURN_IF_ERROR(AuditPodSpec(pod, shape, obj, opts, images, ctx));
  }
  return Status::Ok();
}

// Keeps the findings within the report's cap after each document, so a document-dense or
// finding-dense manifest holds at most the cap plus one document's findings.
void TrimFindings(K8sAuditReport* report) {
  report->cap.Trim(&report->findings,
                   [](const K8sFinding& k) -> const Finding& { return k.finding; });
}

// Audits what the kustomization in `dir` renders (kustomize.h applies its transforms first).
Status AuditKustomization(const std::string& dir, const K8sAuditOptions& options,
                          K8sAuditReport* report) {
  std::vector<KustomizeObject> objects;
  if (options.kustomize.empty()) {
    TG_RETURN_IF_ERROR(BuildKustomization(dir, &objects));
    report->renderers.push_back(dir + ": built-in kustomize reader");
  } else {
    TG_RETURN_IF_ERROR(RenderWithKustomize(options.kustomize, dir, &objects));
    report->renderers.push_back(dir + ": " + options.kustomize);
  }
  if (objects.empty()) {
    return Status::InvalidArg(
        fmt::format("{}: the kustomization renders no objects: nothing to audit", dir));
  }
  for (const KustomizeObject& o : objects) {
    report->documents++;
    try {
      TG_RETURN_IF_ERROR(AuditObject(o.node, o.source, o.document, options, {}, report, ""));
      TrimFindings(report);
    } catch (const YAML::Exception& e) {
      return Status::InvalidArg(
          fmt::format("{}:{}: document {}: {}", o.source, e.mark.line + 1, o.document, e.msg));
    }
  }
  return Status::Ok();
}

// An empty manifest audits nothing; a PASS here would vouch for objects that were never read.
Status NoObjects(const std::string& source, bool empty_file) {
  return Status::InvalidArg(fmt::format(
      "{}: no Kubernetes objects ({}): nothing to audit; give the manifest files, or pipe "
      "`kubectl kustomize DIR` into `truegreen audit k8s -`",
      source, empty_file ? "the file is empty" : "only empty documents"));
}

// Audits one non-empty document (index `index` of `source`).
Status AuditDocument(const YAML::Node& d, const std::string& source, int index,
                     const K8sAuditOptions& options, const std::vector<KustomizeImage>& images,
                     K8sAuditReport* report) {
  report->documents++;
  Status s = Status::Ok();
  try {
    s = AuditObject(d, source, index, options, images, report, "");
  } catch (const YAML::Exception& e) {
    s = Status::InvalidArg(
        fmt::format("{}:{}: document {}: {}", source, e.mark.line + 1, index, e.msg));
  }
  TrimFindings(report);
  return s;
}

}  // namespace

GpuNodeRequirements NodeRequirementsFromMatrix(const policy::Matrix& m) {
  GpuNodeRequirements r;
  r.require_gpu = m.require_gpu;
  if (m.driver.minimum) {
    r.driver_major_min = m.driver.minimum->major();
    r.driver_text = m.driver.minimum->ToString();
  }
  if (m.driver.branch) {
    r.driver_branch = *m.driver.branch;
    r.driver_major_min = std::max(r.driver_major_min.value_or(0), *m.driver.branch);
    if (r.driver_text.empty()) r.driver_text = fmt::format("branch {}", *m.driver.branch);
  }
  if (m.cuda.runtime) {
    if (auto major = m.cuda.runtime->SingleMajor()) r.cuda_major_min = *major;
  }
  if (m.devices.min_compute_capability) {
    r.compute_major = m.devices.min_compute_capability->major();
    r.compute_minor = m.devices.min_compute_capability->minor();
  }
  if (m.devices.min_memory_mib) r.memory_mib_min = *m.devices.min_memory_mib;
  r.device_count = m.devices.count;
  r.mig = m.devices.mig;
  return r;
}

std::string ApplyKustomizeImages(const std::string& image, const std::vector<KustomizeImage>& l) {
  // Entries apply in order (a base's transformer first, then each overlay's), like kustomize.
  std::string cur = image;
  for (const auto& ki : l) {
    std::string name, tag, digest;
    SplitImage(cur, &name, &tag, &digest);
    if (ki.name != name) continue;
    std::string out = ki.new_name.empty() ? name : ki.new_name;
    if (!ki.digest.empty()) {
      out += "@" + ki.digest;
    } else if (!ki.new_tag.empty()) {
      out += ":" + ki.new_tag;
    } else {
      if (!tag.empty()) out += ":" + tag;
      if (!digest.empty()) out += "@" + digest;
    }
    cur = out;
  }
  return cur;
}

Status AuditK8sText(const std::string& text, const std::string& source,
                    const K8sAuditOptions& options, K8sAuditReport* report,
                    const std::vector<KustomizeImage>& images) {
  // One batch of documents is parsed at a time (common/yaml_stream.h). The outcome is that of
  // AuditK8sDocuments over the whole list: a bounds error anywhere comes before "no objects",
  // which comes before the first rule error, so after a rule error only the bounds are checked.
  const YamlBounds bounds = BoundsForText(text.size());
  std::size_t visited = 0;
  int documents = 0, objects = 0;
  Status audit = Status::Ok();
  TG_RETURN_IF_ERROR(
      common::ForEachYamlDocument(text, source, [&](const YAML::Node& d, int index) -> Status {
        ++documents;
        TG_RETURN_IF_ERROR(CheckYamlBounds(d, source, bounds, &visited));
        if (!d.IsDefined() || d.IsNull()) return Status::Ok();
        ++objects;
        if (audit.ok()) audit = AuditDocument(d, source, index, options, images, report);
        return Status::Ok();
      }));
  if (objects == 0) return NoObjects(source, documents == 0);
  return audit;
}

Status AuditK8sDocuments(const std::vector<YAML::Node>& docs, const std::string& source,
                         const YamlBounds& bounds, const K8sAuditOptions& options,
                         K8sAuditReport* report, const std::vector<KustomizeImage>& images) {
  // Bound every document before any rule walks it: the walkers below trust the tree to be finite
  // and proportional to the input.
  std::size_t visited = 0;
  int objects = 0;
  for (const YAML::Node& d : docs) {
    TG_RETURN_IF_ERROR(CheckYamlBounds(d, source, bounds, &visited));
    if (d.IsDefined() && !d.IsNull()) ++objects;
  }
  if (objects == 0) return NoObjects(source, docs.empty());
  int index = 0;
  for (const YAML::Node& d : docs) {
    ++index;
    if (!d.IsDefined() || d.IsNull()) continue;  // empty document ("---" twice, trailing "---")
    TG_RETURN_IF_ERROR(AuditDocument(d, source, index, options, images, report));
  }
  return Status::Ok();
}

Status AuditK8sPath(const std::string& path, const K8sAuditOptions& options,
                    K8sAuditReport* report) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return AuditKustomization(path, options, report);
  TG_ASSIGN_OR_RETURN(std::string text, common::ReadFileLimited(path, common::kMaxConfigBytes));
  return AuditK8sText(text, path, options, report);
}

void AddCoverageFindings(K8sAuditReport* report) {
  if (report->workloads > 0 || !report->not_audited.empty()) return;
  K8sFinding kf;
  kf.finding.rule = "k8s.no-workload";
  kf.finding.severity = Severity::kInfo;
  kf.finding.message = fmt::format(
      "no workload in the input: {} object(s) read, none of them runs pods, so no GPU, probe or "
      "pod security rule was applied",
      report->documents);
  kf.finding.fix = "give the manifests of the workloads (Deployment, StatefulSet, ...) too";
  report->findings.push_back(std::move(kf));
  TrimFindings(report);
}

common::Json K8sReportHeadToJson(const K8sAuditReport& report) {
  common::Json j;
  j["documents"] = report.documents;
  j["workloads"] = report.workloads;
  j["containers"] = report.containers;
  common::Json audited = common::Json::array();
  for (const K8sAuditedPod& a : report.audited) {
    audited.push_back({{"file", a.file},
                       {"document", a.document},
                       {"object", a.object},
                       {"path", a.path},
                       {"role", a.role},
                       {"reason", a.reason}});
  }
  j["audited"] = std::move(audited);
  j["skipped"] = report.skipped;
  j["not_audited"] = report.not_audited;
  j["renderers"] = report.renderers;
  j["findings"] = common::Json::array();
  return j;
}

common::Json K8sFindingToJson(const K8sFinding& kf) {
  common::Json f = FindingToJson(kf.finding);
  f["document"] = kf.document;
  f["object"] = kf.object;
  if (!kf.container.empty()) f["container"] = kf.container;
  f["field"] = kf.field;
  return f;
}

common::Json K8sReportToJson(const K8sAuditReport& report) {
  common::Json j = K8sReportHeadToJson(report);
  common::Json& arr = j["findings"];
  for (const auto& kf : report.findings) arr.push_back(K8sFindingToJson(kf));
  return j;
}

std::string K8sReportToText(const K8sAuditReport& report) {
  std::vector<Finding> fs;
  for (const auto& kf : report.findings) fs.push_back(kf.finding);
  return RenderFindingsText(fs);
}

}  // namespace tg::audit
