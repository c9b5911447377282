#include "runtime/attention_rewrite.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

#include "runtime/onnx_model_internal.h"
#include "runtime/tensor.h"

namespace tg::runtime {
namespace {

using common::Result;
using common::Status;
using Perm = std::vector<std::int64_t>;

// The graph as the matcher reads it: producers, consumer counts, constants and inferred shapes.
class GraphView {
 public:
  GraphView(::onnx::GraphProto* g, const std::vector<InferredValue>& shapes) : g_(g) {
    for (int i = 0; i < g->node_size(); ++i) {
      const auto& n = g->node(i);
      for (const auto& o : n.output()) producer_[o] = i;
      for (const auto& in : n.input()) {
        ++uses_[in];
        consumers_[in].push_back(i);
      }
      if (n.op_type() == "Constant" && n.output_size() == 1) {
        for (const auto& a : n.attribute()) {
          if (a.name() == "value" && a.has_t()) consts_[n.output(0)] = &a.t();
        }
      }
      for (const auto& o : n.output()) names_.insert(o);
    }
    for (const auto& o : g->output()) ++uses_[o.name()];
    for (const auto& t : g->initializer()) {
      consts_[t.name()] = &t;
      names_.insert(t.name());
    }
    for (const auto& v : g->input()) names_.insert(v.name());
    for (const auto& v : shapes) shapes_[v.name] = v;
  }

  const ::onnx::NodeProto* Producer(const std::string& t) const {
    auto it = producer_.find(t);
    return it == producer_.end() ? nullptr : &g_->node(it->second);
  }
  // The nodes reading `t` (indices into the graph's node list).
  std::vector<int> Consumers(const std::string& t) const {
    auto it = consumers_.find(t);
    return it == consumers_.end() ? std::vector<int>{} : it->second;
  }
  const ::onnx::NodeProto& Node(int i) const { return g_->node(i); }
  int IndexOf(const std::string& produced) const { return producer_.at(produced); }
  int Uses(const std::string& t) const {
    auto it = uses_.find(t);
    return it == uses_.end() ? 0 : it->second;
  }
  const InferredValue* Shape(const std::string& t) const {
    auto it = shapes_.find(t);
    return it == shapes_.end() || !it->second.rank_known ? nullptr : &it->second;
  }
  // The rank inference found, else the rank of the data input of an op that keeps it (Slice of
  // a constant: the causal mask cut to the sequence length).
  int Rank(const std::string& t, int depth = 0) const {
    const InferredValue* v = Shape(t);
    if (v != nullptr) return static_cast<int>(v->dims.size());
    const ::onnx::NodeProto* p = Producer(t);
    if (p == nullptr || depth > 8 || p->input_size() < 1) return -1;
    const std::string& op = p->op_type();
    if (op == "Slice" || op == "Cast" || op == "Identity" || op == "Neg") {
      return Rank(p->input(0), depth + 1);
    }
    return -1;
  }
  std::int64_t Dim(const std::string& t, int i) const {
    const InferredValue* v = Shape(t);
    if (v == nullptr || i < 0 || i >= static_cast<int>(v->dims.size())) return -1;
    return v->dims[i];
  }
  int ElemType(const std::string& t) const {
    auto it = shapes_.find(t);
    return it == shapes_.end() ? 0 : it->second.elem_type;
  }
  // A one-element floating-point constant (initializer or Constant node).
  std::optional<double> Scalar(const std::string& t) const;
  // A fresh tensor name.
  std::string Fresh(const std::string& base) {
    std::string n = base;
    for (int i = 1; names_.count(n) > 0; ++i) n = base + "_" + std::to_string(i);
    names_.insert(n);
    return n;
  }

 private:
  ::onnx::GraphProto* g_;
  std::map<std::string, int> producer_;
  std::map<std::string, int> uses_;
  std::map<std::string, std::vector<int>> consumers_;
  std::map<std::string, const ::onnx::TensorProto*> consts_;
  std::map<std::string, InferredValue> shapes_;
  std::set<std::string> names_;
};

std::optional<double> GraphView::Scalar(const std::string& t) const {
  auto it = consts_.find(t);
  if (it == consts_.end()) return std::nullopt;
  const ::onnx::TensorProto& p = *it->second;
  for (auto d : p.dims()) {
    if (d != 1) return std::nullopt;
  }
  if (p.data_location() == ::onnx::TensorProto::EXTERNAL) return std::nullopt;
  const std::string& raw = p.raw_data();
  switch (p.data_type()) {
    case ::onnx::TensorProto::FLOAT:
      if (raw.size() == 4) {
        float f;
        std::memcpy(&f, raw.data(), 4);
        return f;
      }
      if (p.float_data_size() == 1) return p.float_data(0);
      return std::nullopt;
    case ::onnx::TensorProto::FLOAT16: {
      std::uint16_t h = 0;
      if (raw.size() == 2)
        std::memcpy(&h, raw.data(), 2);
      else if (p.int32_data_size() == 1)
        h = static_cast<std::uint16_t>(p.int32_data(0));
      else
        return std::nullopt;
      return HalfToFloat(h);
    }
    case ::onnx::TensorProto::DOUBLE:
      if (raw.size() == 8) {
        double d;
        std::memcpy(&d, raw.data(), 8);
        return d;
      }
      if (p.double_data_size() == 1) return p.double_data(0);
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

bool Is(const ::onnx::NodeProto* n, const char* op) {
  return n != nullptr && n->op_type() == op && (n->domain().empty() || n->domain() == "ai.onnx");
}

Perm PermOf(const ::onnx::NodeProto& n) {
  for (const auto& a : n.attribute()) {
    if (a.name() == "perm") return Perm(a.ints().begin(), a.ints().end());
  }
  return {};
}

bool IsTranspose(const ::onnx::NodeProto* n, const Perm& perm) {
  return Is(n, "Transpose") && n->input_size() == 1 && PermOf(*n) == perm;
}

// x scaled by one scalar constant (Mul either way round, Div by it): the unscaled input and the
// factor; nullopt when `t` is not produced so.
std::optional<std::pair<std::string, double>> StripScale(const GraphView& v, const std::string& t) {
  const ::onnx::NodeProto* p = v.Producer(t);
  if (p == nullptr || p->input_size() != 2) return std::nullopt;
  if (Is(p, "Mul")) {
    if (auto c = v.Scalar(p->input(1))) return std::make_pair(p->input(0), *c);
    if (auto c = v.Scalar(p->input(0))) return std::make_pair(p->input(1), *c);
  }
  if (Is(p, "Div")) {
    if (auto c = v.Scalar(p->input(1)); c && *c != 0.0)
      return std::make_pair(p->input(0), 1.0 / *c);
  }
  return std::nullopt;
}

// One attention chain, as matched.
struct Chain {
  const ::onnx::NodeProto* softmax = nullptr;
  std::string qh, kt, vh;  // the MatMuls' operands (scales stripped from qh and kt)
  std::string mask;        // additive mask ("" none)
  std::string out;         // the PV MatMul's output
  double scale = 1.0;
  int rank = 0;        // 4 (heads split) or 3
  bool found = false;  // a chain, whether or not its form is handled
};

// Softmax over the last axis of the scores (`rank`: the QK product's).
bool LastAxisSoftmax(const ::onnx::NodeProto& s, std::int64_t opset, int rank) {
  std::int64_t axis = opset >= 13 ? -1 : 1;
  for (const auto& a : s.attribute()) {
    if (a.name() == "axis") axis = a.i();
  }
  return rank > 0 && (axis == -1 || axis == rank - 1);
}

// Matches the chain around Softmax `s`: c->found when it is one (a QK MatMul before, through a
// scalar scale and an additive mask, and a PV MatMul after); then "" or why its form is not
// handled.
std::string MatchChain(const GraphView& v, const ::onnx::NodeProto& s, std::int64_t opset,
                       Chain* c) {
  if (s.input_size() != 1 || s.output_size() != 1) return "Softmax with unexpected arity";
  for (int i : v.Consumers(s.output(0))) {
    const ::onnx::NodeProto& n = v.Node(i);
    if (Is(&n, "MatMul") && n.input(0) == s.output(0) && n.output_size() == 1) {
      c->vh = n.input(1);
      c->out = n.output(0);
    }
  }
  if (c->out.empty()) return "no MatMul (PV) after Softmax";
  std::string t = s.input(0);
  const ::onnx::NodeProto* p = v.Producer(t);
  if (Is(p, "Add") && p->input_size() == 2) {
    for (int i = 0; i < 2 && c->mask.empty(); ++i) {
      if (Is(v.Producer(p->input(i)), "MatMul") || StripScale(v, p->input(i))) {
        t = p->input(i);
        c->mask = p->input(1 - i);
      }
    }
  }
  if (auto sc = StripScale(v, t)) {
    c->scale *= sc->second;
    t = sc->first;
  }
  const ::onnx::NodeProto* qk = v.Producer(t);
  if (!Is(qk, "MatMul")) return "no MatMul (QK) before Softmax through a scale and a mask";
  c->found = true;
  c->softmax = &s;
  c->qh = qk->input(0);
  c->kt = qk->input(1);
  for (std::string* side : {&c->qh, &c->kt}) {
    if (auto sc = StripScale(v, *side)) {
      c->scale *= sc->second;
      *side = sc->first;
    }
  }
  c->rank = v.Rank(c->qh);
  if (!LastAxisSoftmax(s, opset, v.Rank(qk->output(0)))) {
    return "Softmax not over the last axis (or the scores' rank unknown)";
  }
  if (c->rank != 3 && c->rank != 4) {
    return "Q of rank " + std::to_string(c->rank) + " (3 or 4 handled)";
  }
  if (v.Rank(c->kt) != c->rank || v.Rank(c->vh) != c->rank) return "K or V of another rank than Q";
  const int et = v.ElemType(c->qh);
  if (et != ::onnx::TensorProto::FLOAT && et != ::onnx::TensorProto::FLOAT16) {
    return "Q is neither float nor float16";
  }
  return "";
}

// Writes the MultiHeadAttention nodes (and the few Transpose/Reshape/Unsqueeze they need) for
// matched chains; the graph itself is changed in Finish.
class Writer {
 public:
  Writer(GraphView* v, ::onnx::GraphProto* g, std::int64_t opset) : v_(*v), g_(g), opset_(opset) {}

  // The rewrite of one chain, or the reason there is none (nothing written then).
  std::string Rewrite(const Chain& c, int index);
  // Drops the replaced nodes and those left unused, adds the new ones, sorts the graph.
  void Finish();
  bool wrote() const { return !added_.empty(); }

 private:
  std::string Const(const std::string& base, const std::vector<std::int64_t>& values);
  std::string Add(const std::string& op, std::vector<std::string> inputs, const std::string& base,
                  const Perm& perm = {});
  bool IsSplit(const ::onnx::NodeProto* r) const;
  std::string Merged(const std::string& bnsh, std::int64_t heads, const std::string& base);
  std::string KeyMerged(const std::string& kt, std::int64_t heads, const std::string& base);
  std::string Bias(const Chain& c, std::int64_t heads, const std::string& base, std::string* why);
  std::string AbsorbedOutput(const Chain& c, std::int64_t heads) const;

  GraphView& v_;
  ::onnx::GraphProto* g_;
  std::int64_t opset_;
  std::vector<::onnx::NodeProto> pending_;  // this chain's nodes until it succeeds
  std::vector<::onnx::TensorProto> pending_consts_;
  std::vector<::onnx::NodeProto> added_;
  std::set<int> replaced_;  // indices of nodes whose output a new node now produces
};

std::string Writer::Const(const std::string& base, const std::vector<std::int64_t>& values) {
  ::onnx::TensorProto t;
  t.set_name(v_.Fresh(base));
  t.set_data_type(::onnx::TensorProto::INT64);
  t.add_dims(static_cast<std::int64_t>(values.size()));
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * 8));
  pending_consts_.push_back(t);
  return t.name();
}

std::string Writer::Add(const std::string& op, std::vector<std::string> inputs,
                        const std::string& base, const Perm& perm) {
  ::onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(v_.Fresh(base + "/" + op));
  for (auto& i : inputs) n.add_input(std::move(i));
  n.add_output(v_.Fresh(base + "/" + op + "_out"));
  if (!perm.empty()) {
    auto* a = n.add_attribute();
    a->set_name("perm");
    a->set_type(::onnx::AttributeProto::INTS);
    for (auto p : perm) a->add_ints(p);
  }
  pending_.push_back(n);
  return n.output(0);
}

// A Reshape that splits the last dim of a [B, S, N*H] tensor into [B, S, N, H].
bool Writer::IsSplit(const ::onnx::NodeProto* r) const {
  if (!Is(r, "Reshape") || r->input_size() < 1) return false;
  const std::string &x = r->input(0), &y = r->output(0);
  if (v_.Rank(x) != 3 || v_.Rank(y) != 4) return false;
  const std::int64_t n = v_.Dim(y, 2), h = v_.Dim(y, 3);
  if (n <= 0 || h <= 0 || v_.Dim(x, 2) != n * h) return false;
  return v_.Dim(x, 0) < 0 || v_.Dim(y, 0) < 0 || v_.Dim(x, 0) == v_.Dim(y, 0);
}

// [B, N, S, H] as [B, S, N*H]: the tensor before the export's Reshape + Transpose when there is
// one, else Transpose + Reshape inserted.
std::string Writer::Merged(const std::string& bnsh, std::int64_t heads, const std::string& base) {
  const ::onnx::NodeProto* t = v_.Producer(bnsh);
  if (IsTranspose(t, {0, 2, 1, 3})) {
    const ::onnx::NodeProto* r = v_.Producer(t->input(0));
    if (IsSplit(r) && v_.Dim(r->output(0), 2) == heads) return r->input(0);
  }
  const std::string bsnh = Add("Transpose", {bnsh}, base, {0, 2, 1, 3});
  return Add("Reshape", {bsnh, Const(base + "/merge_shape", {0, 0, -1})}, base);
}

// K^T as [B, N, H, L] -> [B, L, N*H].
std::string Writer::KeyMerged(const std::string& kt, std::int64_t heads, const std::string& base) {
  const ::onnx::NodeProto* t = v_.Producer(kt);
  if (IsTranspose(t, {0, 2, 3, 1})) {
    const ::onnx::NodeProto* r = v_.Producer(t->input(0));
    if (IsSplit(r) && v_.Dim(r->output(0), 2) == heads) return r->input(0);
  }
  if (IsTranspose(t, {0, 1, 3, 2})) return Merged(t->input(0), heads, base);
  const std::string blnh = Add("Transpose", {kt}, base, {0, 3, 1, 2});
  return Add("Reshape", {blnh, Const(base + "/merge_shape", {0, 0, -1})}, base);
}

// The mask as attention_bias [1, 1|N, S, L]; "" with *why set when its form is not handled.
std::string Writer::Bias(const Chain& c, std::int64_t heads, const std::string& base,
                         std::string* why) {
  if (c.mask.empty()) return "";
  if (v_.ElemType(c.mask) != v_.ElemType(c.qh)) {
    *why = "mask of another element type than Q";
    return "";
  }
  const int r = v_.Rank(c.mask);
  if (r == 4 && v_.Dim(c.mask, 0) == 1 && (v_.Dim(c.mask, 1) == 1 || v_.Dim(c.mask, 1) == heads)) {
    return c.mask;
  }
  if (r != 2) {
    *why = "mask of rank " + std::to_string(r) + " (2, or 4 as [1, 1|N, S, L], handled)";
    return "";
  }
  if (opset_ >= 13) return Add("Unsqueeze", {c.mask, Const(base + "/axes", {0, 1})}, base);
  const std::string out = Add("Unsqueeze", {c.mask}, base);
  auto* a = pending_.back().add_attribute();
  a->set_name("axes");
  a->set_type(::onnx::AttributeProto::INTS);
  a->add_ints(0);
  a->add_ints(1);
  return out;
}

// The export's Transpose [0,2,1,3] + Reshape to [B, S, N*H] after the PV product, when the
// MultiHeadAttention output can take the Reshape's place: its output name, else "".
std::string Writer::AbsorbedOutput(const Chain& c, std::int64_t heads) const {
  const std::vector<int> after = v_.Consumers(c.out);
  if (after.size() != 1 || v_.Uses(c.out) != 1) return "";
  const ::onnx::NodeProto& t = v_.Node(after[0]);
  if (!IsTranspose(&t, {0, 2, 1, 3}) || v_.Uses(t.output(0)) != 1) return "";
  const std::vector<int> next = v_.Consumers(t.output(0));
  if (next.size() != 1) return "";
  const ::onnx::NodeProto& r = v_.Node(next[0]);
  if (!Is(&r, "Reshape") || v_.Rank(r.output(0)) != 3) return "";
  const std::int64_t hv = v_.Dim(c.out, 3);
  if (hv <= 0 || v_.Dim(r.output(0), 2) != heads * hv) return "";
  return r.output(0);
}

std::string Writer::Rewrite(const Chain& c, int index) {
  pending_.clear();
  pending_consts_.clear();
  const std::string base = "truegreen_mha_" + std::to_string(index);
  std::int64_t heads = 1;
  std::string q3 = c.qh, k3, v3 = c.vh, out = c.out;
  if (c.rank == 4) {
    heads = v_.Dim(c.qh, 1);
    if (heads <= 0) return "head count (dim 1 of Q) unknown";
    if (v_.Dim(c.vh, 1) > 0 && v_.Dim(c.vh, 1) != heads) return "V's head count differs from Q's";
    q3 = Merged(c.qh, heads, base + "/q");
    k3 = KeyMerged(c.kt, heads, base + "/k");
    v3 = Merged(c.vh, heads, base + "/v");
  } else {
    const ::onnx::NodeProto* t = v_.Producer(c.kt);
    k3 = IsTranspose(t, {0, 2, 1}) ? t->input(0) : Add("Transpose", {c.kt}, base + "/k", {0, 2, 1});
  }
  std::string why;
  const std::string bias = Bias(c, heads, base, &why);
  if (!why.empty()) return why;
  ::onnx::NodeProto mha;
  mha.set_op_type("MultiHeadAttention");
  mha.set_domain("com.microsoft");
  mha.set_name(v_.Fresh(base));
  for (const std::string& in : {q3, k3, v3}) mha.add_input(in);
  if (!bias.empty()) {
    for (const std::string& in : {std::string(), std::string(), bias}) mha.add_input(in);
  }
  auto* nh = mha.add_attribute();
  nh->set_name("num_heads");
  nh->set_type(::onnx::AttributeProto::INT);
  nh->set_i(heads);
  auto* sc = mha.add_attribute();
  sc->set_name("scale");
  sc->set_type(::onnx::AttributeProto::FLOAT);
  sc->set_f(static_cast<float>(c.scale));
  const std::string absorbed = c.rank == 4 ? AbsorbedOutput(c, heads) : "";
  if (c.rank == 3 || !absorbed.empty()) {
    out = c.rank == 3 ? c.out : absorbed;
    mha.add_output(out);
    pending_.push_back(mha);
  } else {
    // Back to [B, N, S, H] for whatever reads the PV product.
    mha.add_output(v_.Fresh(base + "/out"));
    pending_.push_back(mha);
    const std::int64_t hv = v_.Dim(c.out, 3);
    const std::string split =
        Add("Reshape",
            {mha.output(0), Const(base + "/split_shape", {0, 0, heads, hv > 0 ? hv : -1})}, base);
    ::onnx::NodeProto t;
    t.set_op_type("Transpose");
    t.set_name(v_.Fresh(base + "/heads"));
    t.add_input(split);
    t.add_output(c.out);
    auto* a = t.add_attribute();
    a->set_name("perm");
    a->set_type(::onnx::AttributeProto::INTS);
    for (auto p : {0, 2, 1, 3}) a->add_ints(p);
    pending_.push_back(t);
  }
  replaced_.insert(v_.IndexOf(out));
  for (auto& n : pending_) added_.push_back(std::move(n));
  for (auto& t : pending_consts_) *g_->add_initializer() = std::move(t);
  return "";
}

// Every tensor a node reads, its subgraphs' reads included (outer-scope values they use).
void NodeReads(const ::onnx::NodeProto& n, std::vector<std::string>* out) {
  for (const auto& i : n.input()) out->push_back(i);
  for (const auto& a : n.attribute()) {
    std::vector<const ::onnx::GraphProto*> subs;
    if (a.has_g()) subs.push_back(&a.g());
    for (const auto& g : a.graphs()) subs.push_back(&g);
    for (const auto* g : subs) {
      for (const auto& sn : g->node()) NodeReads(sn, out);
    }
  }
}

// The nodes that some graph output needs, in an order where each node follows its producers
// (original order kept where it already was; an iterative depth-first walk).
std::vector<::onnx::NodeProto> LiveInOrder(std::vector<::onnx::NodeProto> nodes,
                                           const ::onnx::GraphProto& g) {
  std::map<std::string, std::size_t> producer;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& o : nodes[i].output()) producer[o] = i;
  }
  std::vector<std::vector<std::size_t>> deps(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::vector<std::string> reads;
    NodeReads(nodes[i], &reads);
    for (const auto& r : reads) {
      auto it = producer.find(r);
      if (it != producer.end() && it->second != i) deps[i].push_back(it->second);
    }
  }
  std::vector<char> live(nodes.size(), 0), state(nodes.size(), 0);  // 1 open, 2 emitted
  std::vector<std::size_t> stack;
  for (const auto& o : g.output()) {
    auto it = producer.find(o.name());
    if (it != producer.end()) stack.push_back(it->second);
  }
  while (!stack.empty()) {
    const std::size_t i = stack.back();
    stack.pop_back();
    if (live[i]) continue;
    live[i] = 1;
    for (auto d : deps[i]) stack.push_back(d);
  }
  std::vector<::onnx::NodeProto> out;
  std::vector<std::pair<std::size_t, std::size_t>> walk;  // (node, next dep)
  for (std::size_t root = 0; root < nodes.size(); ++root) {
    if (!live[root] || state[root] == 2) continue;
    walk.push_back({root, 0});
    state[root] = 1;
    while (!walk.empty()) {
      auto& [i, k] = walk.back();
      if (k < deps[i].size()) {
        const std::size_t d = deps[i][k++];
        if (state[d] == 0) {
          state[d] = 1;
          walk.push_back({d, 0});
        }
        continue;
      }
      state[i] = 2;
      out.push_back(std::move(nodes[i]));
      walk.pop_back();
    }
  }
  return out;
}

void Writer::Finish() {
  if (added_.empty()) return;
  std::vector<::onnx::NodeProto> nodes;
  for (int i = 0; i < g_->node_size(); ++i) {
    if (replaced_.count(i) == 0) nodes.push_back(std::move(*g_->mutable_node(i)));
  }
  for (auto& n : added_) nodes.push_back(std::move(n));
  std::vector<::onnx::NodeProto> sorted = LiveInOrder(std::move(nodes), *g_);
  g_->clear_node();
  std::vector<std::string> reads;
  for (auto& n : sorted) {
    NodeReads(n, &reads);
    *g_->add_node() = std::move(n);
  }
  // Initializers no node reads any more (the scales, the heads' shapes): ONNX Runtime would warn
  // about each. Those that are also graph inputs stay (they can be fed).
  std::set<std::string> used(reads.begin(), reads.end());
  for (const auto& o : g_->output()) used.insert(o.name());
  for (const auto& i : g_->input()) used.insert(i.name());
  auto* inits = g_->mutable_initializer();
  inits->erase(
      std::remove_if(inits->begin(), inits->end(),
                     [&](const ::onnx::TensorProto& t) { return used.count(t.name()) == 0; }),
      inits->end());
}

}  // namespace

Result<AttentionRewriteReport> RewriteAttention(OnnxModel* model) {
  AttentionRewriteReport rep;
  rep.ops_before = model->OpCounts();
  auto shapes = model->InferShapes({});
  if (!shapes.ok()) return shapes.status();
  ::onnx::ModelProto& proto = OnnxModelAccess::Proto(*model);
  ::onnx::GraphProto* g = proto.mutable_graph();
  const std::int64_t opset = model->OpsetVersion("");
  GraphView view(g, *shapes);
  Writer writer(&view, g, opset);
  for (int i = 0; i < g->node_size(); ++i) {
    const ::onnx::NodeProto& s = g->node(i);
    if (!Is(&s, "Softmax")) continue;
    Chain c;
    std::string why = MatchChain(view, s, opset, &c);
    if (!c.found) continue;
    ++rep.chains;
    if (why.empty()) why = writer.Rewrite(c, rep.rewritten);
    if (why.empty()) {
      ++rep.rewritten;
    } else {
      rep.skipped.push_back((s.name().empty() ? "Softmax #" + std::to_string(i) : s.name()) + ": " +
                            why);
    }
  }
  writer.Finish();
  if (writer.wrote() && model->OpsetVersion("com.microsoft") == 0) {
    auto* o = proto.add_opset_import();
    o->set_domain("com.microsoft");
    o->set_version(1);
  }
  rep.ops_after = model->OpCounts();
  return rep;
}

}  // namespace tg::runtime
