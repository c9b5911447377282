// `truegreen audit image IMAGE [IMAGE2] [--budget SIZE] [--rules FILE] [--matrix FILE] [--diff]
// [--verify-digests]`.
// --rules is the audit rule file (its `image:` section, docs/AUDIT_IMAGE.md). The matrix the
// image's libraries are compared with is --matrix, or the one an explicit global --policy names.
// The ONNX Runtime pair check loads the image's core in a child of this binary (hidden
// `audit __ort-core-info DIR`), so a core that crashes or hangs on load costs a finding, not the
// audit; `--no-load` skips it and the pair is reported as not checked.
// Verdict first; errors through cli::ReportError.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "audit/image/image_audit.h"
#include "audit/image/image_ref.h"
#include "audit/report/byte_size.h"
#include "audit/report/rule_ids.h"
#include "cli/audit_output.h"
#include "cli/command_areas.h"
#include "cli/output.h"
#include "cli/policy_option.h"
#include "common/config.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/outcome.h"
#include "common/process.h"
#include "common/status.h"
#include "policy/matrix.h"
#include "runtime/ort_probe.h"

namespace tg::cli {

namespace {

struct AuditImageFlags {
  std::vector<std::string> images;
  std::string budget;
  std::string matrix;
  std::string rules;
  bool diff = false;
  bool verify_digests = false;
  bool no_load = false;
  AuditOutputFlags output;
};

int Fail(const common::Status& s) { return ReportError(s); }

constexpr auto kInspectTimeout = std::chrono::seconds(30);
constexpr const char* kOrtCore = "libonnxruntime.so";

std::string Tail(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

// Runs `truegreen audit __ort-core-info DIR` on an extracted core. The child gets a scrubbed
// library search (only DIR is searched first) and a time limit; its answer is one JSON object.
common::Result<audit::OrtCoreInfo> InspectOrtCore(const std::string& file) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(file).parent_path();
  // The loader opens libonnxruntime.so by name; a versioned copy gets that name as a link.
  if (fs::path(file).filename() != kOrtCore) {
    std::error_code ec;
    fs::create_symlink(fs::path(file).filename(), dir / kOrtCore, ec);
  }
  common::ProcessOptions po;
  po.timeout = kInspectTimeout;
  po.max_output_bytes = 1u << 20;
  po.unset_env = {"TRUEGREEN_LIB_PATH", "LD_LIBRARY_PATH", "LD_PRELOAD"};
  const common::ProcessResult pr =
      common::RunProcess({common::SelfExePath(), "audit", "__ort-core-info", dir.string()}, po);
  if (!pr.started) return common::Status::Unavailable("cannot start the inspector: " + pr.error);
  if (pr.timed_out) {
    return common::Status::Unavailable(
        fmt::format("loading it did not finish within {} s", kInspectTimeout.count()));
  }
  if (pr.term_signal != 0) {
    return common::Status::Unavailable("loading it killed the inspector with " +
                                       common::SignalName(pr.term_signal));
  }
  auto j = common::ParseJson(pr.out, "ORT core inspector output");
  if (!j.ok() || !j->is_object()) {
    return common::Status::Unavailable(fmt::format("exit {}: {}", pr.exit_code, Tail(pr.err, 300)));
  }
  if (pr.exit_code != 0 || !j->contains("version")) {
    const auto& e = (*j)["error"];
    return common::Status::Unavailable(e.is_object() ? e.value("message", std::string("?"))
                                                     : Tail(pr.err, 300));
  }
  audit::OrtCoreInfo info;
  info.version = j->value("version", std::string());
  info.build_info = j->value("build_info", std::string());
  info.providers = j->value("providers", std::vector<std::string>{});
  return info;
}

// The child: loads DIR/libonnxruntime.so through the one loader and prints what it says.
int RunOrtCoreInfo(const std::string& dir) {
  common::LibraryLoader loader({dir});
  probe::OrtInfo info;
  const common::Status st = runtime::ProbeOrtCore(loader, &info);
  if (!st.ok()) return Fail(st);
  const std::string want = std::filesystem::weakly_canonical(dir).string() + "/";
  if (info.library.resolved_path.rfind(want, 0) != 0) {
    return Fail(common::Status::Unavailable("loaded " + info.library.resolved_path +
                                            ", not the core in " + dir));
  }
  common::Json j;
  j["version"] = info.library.version.value_or("");
  j["build_info"] = info.build_info;
  j["providers"] = info.compiled_providers;
  j["library"] = info.library.resolved_path;
  std::cout << common::WriteJson(j) << "\n";
  return common::kExitOk;
}

// A rule id in the policy's `disable:` list or `severity:` map that no audit reports changes
// nothing; it is most likely a typo, so it is pointed out (as unknown suppression ids are).
// "family.*" entries are known when some id starts with "family.".
void WarnUnknownPolicyRuleIds(const audit::ImagePolicy& p) {
  auto known = [](const std::string& id) {
    if (!id.ends_with(".*")) return audit::IsAuditRuleId(id);
    const std::string_view family = std::string_view(id).substr(0, id.size() - 1);
    for (std::string_view k : audit::AuditRuleIds()) {
      if (k.starts_with(family)) return true;
    }
    return false;
  };
  auto warn = [&](const std::string& id, const char* field) {
    if (known(id)) return;
    const std::string near = audit::ClosestAuditRuleId(id);
    const std::string shown = id.size() > 80 ? id.substr(0, 80) + "..." : id;
    Warn(fmt::format(
        "{}: image.{}: unknown rule id '{}': no audit reports it, so this entry "
        "changes nothing{}",
        p.source, field, shown, near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
  };
  for (const auto& [rule, level] : p.severity) warn(rule, "severity");
  for (const std::string& rule : p.disabled) warn(rule, "disable (or severity: off)");
}

int RunAuditImage(const AuditImageFlags& f, const GlobalOptions& g) {
  audit::ImageAuditOptions opts;
  if (!f.rules.empty()) {
    auto lp = audit::LoadImagePolicy(f.rules);
    if (!lp.ok()) return Fail(lp.status().WithPrefix("--rules"));
    opts.policy = lp->image;
    if (lp->matrix) opts.matrix = lp->matrix;
    WarnUnknownPolicyRuleIds(opts.policy);
  }
  if (!f.budget.empty()) {
    auto b = audit::ParseByteSizeOrError(f.budget);
    if (!b.ok()) return Fail(b.status().WithPrefix("--budget"));
    opts.budget = *b;
  }
  auto m = RequestedMatrix(f.matrix, g);
  if (!m.ok()) return Fail(m.status());
  if (*m) opts.matrix = std::move(**m);
  opts.verify_digests = f.verify_digests;
  if (!f.no_load) opts.ort_inspect = InspectOrtCore;
  opts.ort_inspect_off =
      "loading the image's core to read its build flavour is turned off (--no-load)";
  if (f.diff && f.images.size() != 2) {
    return Fail(common::Status::InvalidArg("--diff needs exactly two images (A B)"));
  }
  if (!f.diff && f.images.size() != 1) {
    return Fail(common::Status::InvalidArg("give one image, or two with --diff"));
  }
  std::vector<audit::ImageAuditReport> reports;
  for (const auto& ref : f.images) {
    auto input = audit::ResolveImageInput(ref);
    if (!input.ok()) return Fail(input.status());
    auto r = audit::AuditImage((*input)->path(), opts);
    // The reader states each error's code where it arises (bad input, a missing file, a machine
    // that could not serve the read); the one Status-to-exit mapping decides the exit.
    if (!r.ok()) return Fail(r.status());
    reports.push_back(std::move(*r));
  }
  if (f.diff) {
    audit::ImageDiff d = audit::DiffImages(reports[0], reports[1]);
    if (g.json) {
      std::cout << common::WriteJson(audit::DiffToJson(reports[0], reports[1], d), 2) << "\n";
    } else {
      std::cout << audit::DiffToText(reports[0], reports[1], d);
    }
    return common::kExitOk;
  }
  auto& r = reports[0];
  auto out = ResolveAuditOutput(f.output, g, true);
  if (!out.ok()) return Fail(out.status());
  if (out->fail_on) r.fail_on = *out->fail_on;
  bool printed = false;
  common::Status emitted = EmitAuditReports(*out, "audit image", r.fail_on, &r.findings, &printed);
  if (!emitted.ok()) return Fail(emitted);
  r.failed = audit::GateFails(r.findings, r.fail_on);
  if (printed) {
    // SARIF or JUnit went to stdout.
  } else if (out->format == audit::OutputFormat::kJson) {
    common::Json j = audit::ReportToJson(r);
    if (!out->warnings.empty()) j["warnings"] = out->warnings;
    std::cout << common::WriteJson(j, 2) << "\n";
  } else {
    // Verdict first, like doctor; the report (ending in its own summary) follows.
    std::cout << (r.failed ? Paint("FAIL", Tone::kFail) : Paint("PASS", Tone::kPass)) << ": "
              << r.findings.size() << " finding(s)\n\n"
              << audit::ReportToText(r);
  }
  return common::ExitCodeFromOutcome(r.failed ? common::Outcome::kAuditFailed
                                              : common::Outcome::kOk);
}

}  // namespace

void RegisterAuditImageCommands(CLI::App& audit, GlobalOptions& g, CommandRegistry& r) {
  auto flags = std::make_shared<AuditImageFlags>();
  CLI::App* cmd = audit.add_subcommand(
      "image",
      "Audit a container image (docker save tar, OCI layout dir or OCI archive, or a "
      "docker-archive:, oci-archive:, oci: or docker:// reference) without a daemon: size "
      "budgets, dive efficiency, hygiene and GPU rules; exit 6 on failure");
  cmd->add_option("images", flags->images,
                  "Image file or directory (docker save tar, OCI layout dir or OCI archive) or "
                  "reference, or A B with --diff")
      ->required()
      ->expected(1, 2)
      ->type_name("IMAGE");
  cmd->add_option("--budget", flags->budget,
                  "Uncompressed size budget (default 2GiB, or image.budget of --rules)")
      ->type_name("SIZE");
  cmd->add_option("--rules", flags->rules,
                  "Audit rule file (its image: section: budget, limits, disable, severity)")
      ->type_name("FILE");
  cmd->add_option("--matrix", flags->matrix,
                  "Version matrix to compare the image's CUDA/cuDNN/TensorRT/ORT libraries with")
      ->type_name("FILE");
  cmd->add_flag("--diff", flags->diff, "Diff two images: files and capability snapshots");
  cmd->add_flag("--verify-digests", flags->verify_digests,
                "Hash every layer blob and compare with its digest (manifests and configs are "
                "always checked); reads plain layers in full instead of seeking over file data");
  cmd->add_flag("--no-load", flags->no_load,
                "Do not load the image's ONNX Runtime core (in a child process) to check its "
                "build flavour against the GPU providers; the pair is then reported as not "
                "checked");
  AddAuditOutputFlags(cmd, &flags->output);
  r.Add(cmd, [flags, &g] { return RunAuditImage(*flags, g); });

  auto dir = std::make_shared<std::string>();
  CLI::App* child = audit.add_subcommand(
      "__ort-core-info", "Internal: load an extracted ONNX Runtime core and print what it says");
  child->group("");  // hidden from help
  child->add_option("dir", *dir, "Folder holding libonnxruntime.so")->required();
  r.Add(child, [dir] { return RunOrtCoreInfo(*dir); });
}

}  // namespace tg::cli
