#include "cli/policy_option.h"

#include <array>

#include "runtime/runtime_policy.h"

namespace tg::cli {

common::Result<policy::Matrix> ResolveMatrix(const std::string& matrix_flag,
                                             const GlobalOptions& g) {
  if (!matrix_flag.empty()) return policy::LoadMatrix(matrix_flag);
  if (g.policy == "production") return policy::ProductionMatrix();
  if (g.policy == "dev") return policy::DevMatrix();
  // A file is a runtime policy, never a matrix: one format per flag.
  auto p = runtime::LoadRuntimePolicy(g.policy);
  if (!p.ok()) {
    // The old meaning of --policy FILE was a matrix: say so instead of listing every field.
    if (p.status().code() == common::StatusCode::kInvalidArg && policy::LoadMatrix(g.policy).ok()) {
      return common::Status::InvalidArg(
          "--policy " + g.policy +
          ": this is a version matrix, not a runtime policy; pass it with --matrix FILE, or name "
          "it in a runtime policy (`matrix: FILE`, docs/POLICY.md)");
    }
    return p.status().WithPrefix("--policy");
  }
  if (!p->matrix_path.empty()) {
    auto m = policy::LoadMatrix(p->matrix_path);
    if (!m.ok()) return m.status().WithPrefix("--policy " + g.policy + ": matrix");
    return m;
  }
  return p->profile == runtime::Profile::kDev ? policy::DevMatrix() : policy::ProductionMatrix();
}

common::Result<std::optional<policy::Matrix>> RequestedMatrix(const std::string& matrix_flag,
                                                              const GlobalOptions& g) {
  if (matrix_flag.empty() && !g.policy_given) return std::optional<policy::Matrix>();
  auto m = ResolveMatrix(matrix_flag, g);
  if (!m.ok()) return m.status();
  return std::optional<policy::Matrix>(std::move(m).value());
}

bool CommandReadsPolicy(std::string_view command_path) {
  // __canary-child is the op canary's child process: it attaches the policy's providers.
  static constexpr std::array<std::string_view, 10> kReaders = {
      "admit",    "doctor",      "run",       "engines build", "engines verify",
      "generate", "audit image", "audit k8s", "serve",         "__canary-child"};
  for (std::string_view c : kReaders) {
    if (c == command_path) return true;
  }
  return false;
}

}  // namespace tg::cli
