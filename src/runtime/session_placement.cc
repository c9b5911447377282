// Placement evaluation, the verbose-log placement parser, the static attention check (its graph
// analysis is onnx_graph_attention.cc) and the INT8 accuracy gate: the pure (ORT-free) parts of the
// runtime's integrity checks, declared in session.h.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "common/strings.h"
#include "runtime/onnx_graph.h"
#include "runtime/session.h"

namespace tg::runtime {
namespace {

constexpr const char* kCpuProvider = "CPUExecutionProvider";

bool IsMemcpy(const std::string& op) {
  return op == "MemcpyToHost" || op == "MemcpyFromHost" || op == "Memcpy";
}

std::string FormatShare(double share) {
  std::ostringstream os;
  os.precision(1);
  os << std::fixed << share * 100.0 << "%";
  return os.str();
}

}  // namespace

bool IsShapeOp(const std::string& op) {
  static const std::set<std::string, std::less<>> kShapeOps = {
      "Shape",   "Size",    "Gather",   "Unsqueeze",       "Squeeze",
      "Concat",  "Reshape", "Slice",    "ConstantOfShape", "Constant",
      "Range",   "Cast",    "Identity", "Equal",           "Where",
      "NonZero", "Min",     "Max",      "ReduceProd",      "Floor",
      "Ceil",    "Expand"};
  return kShapeOps.count(op) > 0;
}

PlacementReport EvaluatePlacement(const std::vector<NodePlacement>& nodes,
                                  const PlacementPolicy& policy, bool enforce) {
  PlacementReport r;
  r.total_nodes = static_cast<int>(nodes.size());
  std::set<std::string, std::less<>> required(policy.gpu_required_ops.begin(),
                                              policy.gpu_required_ops.end());
  int cpu_non_shape = 0;
  for (const auto& n : nodes) {
    ++r.nodes_per_provider[n.provider];
    if (IsMemcpy(n.op_type)) ++r.memcpy_nodes;
    if (n.provider != kCpuProvider) continue;
    ++r.cpu_nodes;
    if (IsShapeOp(n.op_type)) {
      ++r.cpu_shape_nodes;
    } else if (!IsMemcpy(n.op_type)) {
      ++cpu_non_shape;
    }
    if (required.count(n.op_type)) {
      r.cpu_compute_ops.push_back((n.name.empty() ? "<unnamed>" : n.name) + " (" + n.op_type + ")");
    }
  }
  r.cpu_share = r.total_nodes ? static_cast<double>(cpu_non_shape) / r.total_nodes : 0.0;
  if (!r.cpu_compute_ops.empty()) {
    std::string list;
    const std::size_t shown = std::min<std::size_t>(r.cpu_compute_ops.size(), 10);
    for (std::size_t i = 0; i < shown; ++i) {
      if (i) list += ", ";
      list += r.cpu_compute_ops[i];
    }
    if (shown < r.cpu_compute_ops.size()) {
      list += " and " + std::to_string(r.cpu_compute_ops.size() - shown) + " more";
    }
    r.violations.push_back(std::to_string(r.cpu_compute_ops.size()) +
                           " compute op(s) that must run on a GPU provider are on " + kCpuProvider +
                           ": " + list);
  }
  if (r.cpu_share > policy.max_cpu_node_share + 1e-12) {
    r.violations.push_back(std::to_string(cpu_non_shape) + " of " + std::to_string(r.total_nodes) +
                           " nodes (" + FormatShare(r.cpu_share) +
                           ", shape ops excluded) are on the CPU provider; the policy allows " +
                           FormatShare(policy.max_cpu_node_share));
  }
  if (r.memcpy_nodes > policy.max_memcpy_nodes) {
    r.violations.push_back(std::to_string(r.memcpy_nodes) +
                           " Memcpy nodes were inserted between providers; the policy allows " +
                           std::to_string(policy.max_memcpy_nodes));
  }
  r.ok = !enforce || r.violations.empty();
  return r;
}

std::vector<NodePlacement> ParseNodePlacementLog(const std::vector<std::string>& messages) {
  // ORT (utils.cc, "Node placements"): a header line per provider, then one "  OpType (name)"
  // line per node when that provider does not hold all nodes.
  std::vector<NodePlacement> out;
  std::vector<std::string> lines;
  for (const auto& m : messages) {
    std::istringstream is(m);
    std::string line;
    while (std::getline(is, line)) lines.push_back(line);
  }
  bool in_block = false;
  std::string provider;
  int expected = 0;
  int listed = 0;
  auto flush_unlisted = [&] {
    // "All nodes placed on [X]" carries only a count: synthesise anonymous entries.
    for (; listed < expected; ++listed) out.push_back({"", "", provider});
  };
  for (const auto& raw : lines) {
    const std::string line(common::Trim(raw));
    if (line.find("Node placements") != std::string::npos) {
      in_block = true;
      continue;
    }
    if (!in_block) continue;
    const std::size_t placed = line.find("placed on [");
    if (placed != std::string::npos) {
      flush_unlisted();
      const std::size_t close = line.find(']', placed);
      if (close == std::string::npos) continue;
      provider = line.substr(placed + 11, close - placed - 11);
      const std::size_t num = line.find("Number of nodes:");
      expected = num == std::string::npos ? 0 : std::atoi(line.c_str() + num + 16);
      listed = 0;
      continue;
    }
    const std::size_t open = line.find(" (");
    if (!provider.empty() && open != std::string::npos && !line.empty() && line.back() == ')' &&
        line.find(' ') == open) {
      out.push_back(
          {line.substr(open + 2, line.size() - open - 3), line.substr(0, open), provider});
      ++listed;
      continue;
    }
    if (!line.empty()) {
      flush_unlisted();
      in_block = false;
      provider.clear();
    }
  }
  flush_unlisted();
  return out;
}

int CountMemcpyFromLog(const std::vector<std::string>& messages) {
  int total = 0;
  for (const auto& m : messages) {
    const std::size_t p = m.find(" Memcpy nodes are added to the graph");
    if (p == std::string::npos) continue;
    std::size_t b = p;
    while (b > 0 && std::isdigit(static_cast<unsigned char>(m[b - 1]))) --b;
    if (b < p) total += std::atoi(m.substr(b, p - b).c_str());
  }
  return total;
}

// --- static attention check ------------------------------------------------------------------

common::Result<AttentionReport> CheckAttention(const std::string& model_path) {
  auto g = ReadOnnxGraph(model_path);
  if (!g.ok()) return g.status();
  return AnalyzeAttention(*g);
}

// --- INT8 accuracy gate ----------------------------------------------------------------------

common::Status CheckInt8Gate(const std::vector<Tensor>& reference,
                             const std::vector<Tensor>& candidate, const Int8Gate& gate) {
  if (reference.empty()) {
    return common::Status::InvalidArg("INT8 gate: no reference outputs (calibration set empty)");
  }
  if (reference.size() != candidate.size()) {
    return common::Status::InvalidArg("INT8 gate: " + std::to_string(candidate.size()) +
                                      " candidate outputs for " + std::to_string(reference.size()) +
                                      " reference outputs");
  }
  auto is_float = [](DataType d) {
    return d == DataType::kFloat32 || d == DataType::kFloat16 || d == DataType::kFloat64 ||
           d == DataType::kBFloat16;
  };
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const Tensor& ref = reference[i];
    const Tensor& cand = candidate[i];
    const std::string which = "output " + std::to_string(i);
    if (ref.shape() != cand.shape()) {
      return common::Status::InvalidArg("INT8 gate: " + which + " shape " +
                                        ShapeToString(cand.shape()) + " differs from reference " +
                                        ShapeToString(ref.shape()));
    }
    if (!is_float(ref.dtype()) || !is_float(cand.dtype())) {
      return common::Status::InvalidArg("INT8 gate: " + which +
                                        " must be a floating-point tensor (found " +
                                        std::string(DataTypeName(cand.dtype())) + ")");
    }
    const std::vector<float> a = ref.ToFloatVector();
    const std::vector<float> b = cand.ToFloatVector();
    double max_abs = 0.0, sum_sq_diff = 0.0, sum_sq_ref = 0.0;
    for (std::size_t k = 0; k < a.size(); ++k) {
      const double d = static_cast<double>(b[k]) - a[k];
      if (!std::isfinite(d)) {
        return common::Status::Unsupported(
            "INT8 gate: " + which + " has a non-finite value at element " + std::to_string(k));
      }
      max_abs = std::max(max_abs, std::fabs(d));
      sum_sq_diff += d * d;
      sum_sq_ref += static_cast<double>(a[k]) * a[k];
    }
    const double rel_rms =
        sum_sq_ref > 0 ? std::sqrt(sum_sq_diff / sum_sq_ref) : (sum_sq_diff > 0 ? INFINITY : 0.0);
    if (max_abs > gate.max_abs_error) {
      return common::Status::Unsupported(
          "INT8 gate: " + which + " max abs error " + std::to_string(max_abs) +
          " exceeds tolerance " + std::to_string(gate.max_abs_error) + "; INT8 stays disabled");
    }
    if (rel_rms > gate.max_rel_rms_error) {
      return common::Status::Unsupported(
          "INT8 gate: " + which + " relative RMS error " + std::to_string(rel_rms) +
          " exceeds tolerance " + std::to_string(gate.max_rel_rms_error) + "; INT8 stays disabled");
    }
  }
  return common::Status::Ok();
}

}  // namespace tg::runtime
