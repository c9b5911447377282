// The attention rewrite: the unfused attention chains the attention check counts (MatMul ->
// [scale] -> [additive mask] -> Softmax -> MatMul, AnalyzeAttention in onnx_graph.h) become one
// com.microsoft.MultiHeadAttention node each, so ONNX Runtime runs its flash / memory-efficient
// kernels instead of holding the batch x heads x S x L score tensor.
//
// Forms handled (torch.onnx and Optimum exports): heads split by Reshape [.., N, H] + Transpose
// (K as [0,2,3,1], or [0,2,1,3] then [0,1,3,2]), or 4-D tensors from anywhere (Transpose and
// Reshape are inserted), or 3-D tensors (one head, or heads folded into the batch); the scale as
// one scalar Mul or Div on the scores, or as Mul(sqrt scale) on Q and on K (the product becomes
// the node's `scale`; no scale at all is scale 1); an additive mask of rank 2 [S, L], or rank 4
// [1, 1|N, S, L], as attention_bias (the text encoders' causal mask). The output's Transpose +
// Reshape back to [B, S, N*H] is absorbed; elsewhere a Reshape + Transpose restores the 4-D
// layout. A chain in any other form is left as it is, with the reason.
//
// Correctness is not assumed: the caller compares the rewritten model's outputs with the
// original's (attention_fusion.h) and keeps the original when they differ.
// Pure function of the model; not thread-safe on one model.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/onnx_model.h"

namespace tg::runtime {

struct AttentionRewriteReport {
  int chains = 0;                    // MatMul -> .. -> Softmax -> MatMul chains found (main graph)
  int rewritten = 0;                 // of them, now one MultiHeadAttention each
  std::vector<std::string> skipped;  // "<Softmax node>: why", one per chain left as is
  std::map<std::string, int> ops_before;  // OnnxModel::OpCounts before and after
  std::map<std::string, int> ops_after;
};

// Rewrites `model` in place (main graph; nodes left unused are removed and the graph is put back
// in topological order; the com.microsoft opset 1 is imported when a node was written).
// Errors: INVALID_ARG when shape inference refuses the model (then the model is unchanged).
common::Result<AttentionRewriteReport> RewriteAttention(OnnxModel* model);

}  // namespace tg::runtime
