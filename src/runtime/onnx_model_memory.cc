#include "runtime/onnx_model_memory.h"

#include <algorithm>
#include <set>

#include "runtime/onnx_model_internal.h"

namespace tg::runtime {

using common::Result;

std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b) {
  return a >= kSaturatedBytes - b ? kSaturatedBytes : a + b;
}

std::int64_t SaturatingMul(std::int64_t a, std::int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a >= kSaturatedBytes / b ? kSaturatedBytes : std::min(a * b, kSaturatedBytes);
}

std::int64_t TensorBytes(const std::vector<std::int64_t>& dims, int elem_size) {
  if (elem_size <= 0) return -1;
  std::int64_t bytes = elem_size;
  for (std::int64_t d : dims) {
    if (d < 0) return -1;
    bytes = SaturatingMul(bytes, d);
  }
  return bytes;
}

OnnxModel ShapeOnlyModel(const OnnxModel& model) {
  OnnxModel m;  // not Clone(): that would copy the weights first
  OnnxModelAccess::ImplOf(m).proto = ShapeOnlyCopy(OnnxModelAccess::Proto(model));
  OnnxModelAccess::ImplOf(m).source = model.source();
  OnnxModelAccess::ImplOf(m).folder = model.folder();
  return m;
}

std::int64_t ModelByteSize(const OnnxModel& model) {
  return static_cast<std::int64_t>(OnnxModelAccess::Proto(model).ByteSizeLong());
}

namespace {

// Every name the nodes of `g` (and of their subgraphs, at most 64 levels) read.
void SubgraphReads(const ::onnx::GraphProto& g, int depth, std::set<std::string>* names) {
  if (depth > 64) return;
  for (const auto& n : g.node()) {
    for (const auto& i : n.input()) names->insert(i);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) SubgraphReads(a.g(), depth + 1, names);
      for (const auto& sub : a.graphs()) SubgraphReads(sub, depth + 1, names);
    }
  }
}

// The values one node reads: its inputs and, for a node with subgraphs, every name they read
// (outer values among them stay alive until the node has run).
std::set<std::string> NodeReads(const ::onnx::NodeProto& n, bool* has_subgraph) {
  std::set<std::string> names(n.input().begin(), n.input().end());
  for (const auto& a : n.attribute()) {
    if (a.has_g() || a.graphs_size() > 0) *has_subgraph = true;
    if (a.has_g()) SubgraphReads(a.g(), 1, &names);
    for (const auto& sub : a.graphs()) SubgraphReads(sub, 1, &names);
  }
  names.erase("");
  return names;
}

// The sizes of the graph's values and what is unknown about them.
class ValueSizes {
 public:
  explicit ValueSizes(const std::vector<InferredValue>& values) {
    for (const auto& v : values) {
      bytes_[v.name] = v.rank_known ? TensorBytes(v.dims, OnnxElementSize(v.elem_type)) : -1;
    }
  }
  // The known size of `name`; 0 (noted as unknown, once) when shape inference gives none.
  std::int64_t Known(const std::string& name, RunMemoryEstimate* e) {
    auto it = bytes_.find(name);
    if (it != bytes_.end() && it->second >= 0) return it->second;
    if (unknown_.insert(name).second) {
      ++e->unknown_values;
      if (first_unknown_.empty()) first_unknown_ = name;
    }
    return 0;
  }
  const std::string& first_unknown() const { return first_unknown_; }

 private:
  std::map<std::string, std::int64_t> bytes_;
  std::set<std::string> unknown_;
  std::string first_unknown_;
};

struct Walk {
  std::int64_t peak = 0;
  bool sorted = true;
  bool has_subgraph = false;
};

// The liveness walk of the file comment. `live` starts at the inputs' bytes.
Walk LivenessPeak(const ::onnx::GraphProto& g, const std::set<std::string>& available_at_start,
                  const std::set<std::string>& outputs, std::int64_t live, ValueSizes& sizes,
                  RunMemoryEstimate* e) {
  Walk w;
  std::vector<std::set<std::string>> reads;
  std::map<std::string, int> last_use;
  for (int i = 0; i < g.node_size(); ++i) {
    reads.push_back(NodeReads(g.node(i), &w.has_subgraph));
    for (const auto& r : reads.back()) last_use[r] = i;
  }
  std::set<std::string> available = available_at_start;
  auto release = [&](const std::string& name) {
    if (live < kSaturatedBytes) live -= sizes.Known(name, e);
  };
  w.peak = live;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    for (const auto& in : n.input()) w.sorted = w.sorted && (in.empty() || available.count(in));
    std::vector<std::string> made;
    for (const auto& o : n.output()) {
      if (o.empty() || !available.insert(o).second) continue;
      made.push_back(o);
      live = SaturatingAdd(live, sizes.Known(o, e));
    }
    w.peak = std::max(w.peak, live);
    for (const auto& o : made) {
      if (last_use.count(o) == 0 && outputs.count(o) == 0) release(o);  // never read
    }
    for (const auto& r : reads[i]) {
      const bool produced = available.count(r) && !available_at_start.count(r);
      if (produced && last_use[r] == i && outputs.count(r) == 0) release(r);
    }
  }
  return w;
}

}  // namespace

Result<RunMemoryEstimate> EstimateRunMemory(
    const OnnxModel& model, const std::map<std::string, std::vector<std::int64_t>>& input_dims) {
  TG_ASSIGN_OR_RETURN(auto values, model.InferShapes(input_dims));
  const ::onnx::GraphProto& g = OnnxModelAccess::Proto(model).graph();
  RunMemoryEstimate e;
  ValueSizes sizes(values);
  std::set<std::string> start;  // graph inputs and initializers: there before the first node
  for (const auto& t : g.initializer()) start.insert(t.name());
  for (const auto& name : model.InputNames()) {
    start.insert(name);
    e.input_bytes = SaturatingAdd(e.input_bytes, sizes.Known(name, &e));
  }
  std::set<std::string> outputs;
  for (const auto& o : g.output()) {
    if (outputs.insert(o.name()).second && !start.count(o.name()))
      e.output_bytes = SaturatingAdd(e.output_bytes, sizes.Known(o.name(), &e));
  }
  std::set<std::string> seen = start;
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) {
      if (o.empty() || outputs.count(o) || !seen.insert(o).second) continue;
      e.intermediate_bytes = SaturatingAdd(e.intermediate_bytes, sizes.Known(o, &e));
    }
  }
  e.sum_bytes = SaturatingAdd(SaturatingAdd(e.input_bytes, e.output_bytes), e.intermediate_bytes);
  const Walk w = LivenessPeak(g, start, outputs, e.input_bytes, sizes, &e);
  e.peak_bytes = w.sorted ? std::min(w.peak, e.sum_bytes) : e.sum_bytes;
  std::vector<std::string> why;
  if (e.unknown_values > 0) {
    why.push_back("shape inference gives no size for " + std::to_string(e.unknown_values) +
                  " value(s) (first: '" + sizes.first_unknown() + "'), counted as 0");
  }
  if (w.has_subgraph) why.push_back("the activations inside subgraphs are not counted");
  e.complete = why.empty();
  for (const auto& s : why) e.incomplete_reason += (e.incomplete_reason.empty() ? "" : "; ") + s;
  if (!w.sorted) {
    e.incomplete_reason += std::string(e.incomplete_reason.empty() ? "" : "; ") +
                           "the nodes are not in topological order: the peak is the loose bound";
  }
  return e;
}

}  // namespace tg::runtime
