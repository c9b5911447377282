// The static attention check over a model's graph (AnalyzeAttention, onnx_graph.h): fused
// attention ops, or the unfused MatMul -> Softmax -> MatMul chains that a GPU provider cannot fuse.
#include <set>
#include <string>

#include "runtime/onnx_graph.h"
#include "runtime/session.h"

namespace tg::runtime {

namespace {

bool IsFusedAttention(const OnnxNode& n) {
  static const std::set<std::string, std::less<>> kMs = {"Attention",
                                                         "MultiHeadAttention",
                                                         "GroupQueryAttention",
                                                         "PackedAttention",
                                                         "PackedMultiHeadAttention",
                                                         "DecoderMaskedMultiHeadAttention",
                                                         "SparseAttention",
                                                         "LongformerAttention",
                                                         "DecoderAttention",
                                                         "DecoderMaskedSelfAttention"};
  if (n.domain == "com.microsoft") return kMs.count(n.op_type) > 0;
  return (n.domain.empty() || n.domain == "ai.onnx") && n.op_type == "Attention";
}

bool IsMatMulLike(const std::string& op) {
  return op == "MatMul" || op == "Einsum" || op == "FusedMatMul" || op == "Gemm";
}

// Elementwise ops that may sit between the QK^T product, the Softmax and the V product.
bool IsPassThrough(const std::string& op) {
  return op == "Mul" || op == "Div" || op == "Add" || op == "Where" || op == "Cast" ||
         op == "Dropout" || op == "Sub" || op == "Identity";
}

}  // namespace

AttentionReport AnalyzeAttention(const OnnxGraphSummary& g) {
  AttentionReport r;
  std::map<std::string, std::size_t> producer;
  std::multimap<std::string, std::size_t> consumers;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto& o : g.nodes[i].outputs) producer[o] = i;
    for (const auto& in : g.nodes[i].inputs) consumers.emplace(in, i);
  }
  std::set<std::string> fused_types;
  for (const auto& n : g.nodes) {
    if (IsFusedAttention(n)) {
      ++r.fused_ops;
      fused_types.insert(n.domain.empty() ? n.op_type : n.domain + "." + n.op_type);
    }
  }
  r.fused_op_types.assign(fused_types.begin(), fused_types.end());
  for (const auto& n : g.nodes) {
    if (n.op_type != "Softmax" || n.inputs.empty() || n.outputs.empty()) continue;
    // Backwards: through at most 4 elementwise ops to a MatMul (the QK^T product).
    bool qk = false;
    std::string cur = n.inputs[0];
    for (int depth = 0; depth < 5 && !qk; ++depth) {
      auto it = producer.find(cur);
      if (it == producer.end()) break;
      const OnnxNode& p = g.nodes[it->second];
      if (IsMatMulLike(p.op_type)) {
        qk = true;
      } else if (IsPassThrough(p.op_type) && !p.inputs.empty()) {
        cur = p.inputs[0];
      } else {
        break;
      }
    }
    if (!qk) continue;
    // Forwards: through at most 3 pass-through ops to a MatMul (the V product).
    bool v = false;
    std::vector<std::string> frontier = {n.outputs[0]};
    for (int depth = 0; depth < 4 && !v && !frontier.empty(); ++depth) {
      std::vector<std::string> next;
      for (const auto& t : frontier) {
        auto range = consumers.equal_range(t);
        for (auto it = range.first; it != range.second; ++it) {
          const OnnxNode& c = g.nodes[it->second];
          if (IsMatMulLike(c.op_type)) v = true;
          if (IsPassThrough(c.op_type) && !c.outputs.empty()) next.push_back(c.outputs[0]);
        }
      }
      frontier = std::move(next);
    }
    if (v) ++r.unfused_chains;
  }
  if (r.fused_ops > 0 && r.unfused_chains > 0) {
    r.verdict = "mixed";
  } else if (r.fused_ops > 0) {
    r.verdict = "fused";
  } else if (r.unfused_chains > 0) {
    r.verdict = "unfused";
  }
  return r;
}

}  // namespace tg::runtime
