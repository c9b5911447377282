#include "common/yaml_check.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <sstream>

#include "common/config.h"
#include "common/file_util.h"
#include "common/json_offset_internal.h"

namespace tg::common {
namespace {

// Documents in one multi-document YAML file (a manifest stream).
constexpr int kMaxYamlDocuments = 10000;

// Thrown by YamlGuard to stop the event parser at the first violation.
struct YamlGuardError {
  YAML::Mark mark;
  std::string message;
};

// Checks a YAML stream's events before any node tree is built, so every consumer (matrix, policy,
// k8s manifests, YamlToJson) sees only documents that are bounded and unambiguous:
//   - nesting depth, counted through aliases, at most kMaxYamlDepth;
//   - an alias never refers to a node that is still open (that is a cycle: `&L [*L]`);
//   - aliases add at most kMaxYamlAliasNodes nodes when expanded (billion laughs);
//   - no mapping has the same scalar key twice;
//   - at most kMaxYamlDocumentNodes nodes in each document (yaml-cpp spends 450 to 700 bytes a
//     node, so a 4 MB list of tiny entries would otherwise cost a gigabyte before any field is
//     checked);
//   - single-document mode: no second document.
// Anchors are numbered per document by yaml-cpp, so the tables reset at each document.
// The cap: the largest real Kubernetes CRDs are far below it (prometheus-operator's 833 KB
// Prometheus CRD is 16 164 nodes), and the largest configuration files admitted elsewhere fit
// (10 000 suppressions of four fields are 90 003 nodes; 1000 logscan patterns stop at 16 000).
constexpr std::uint64_t kMaxYamlDocumentNodes = 100000;

class YamlGuard : public YAML::EventHandler {
 public:
  // `starts`, when given, receives the mark of each document's first token.
  // `pending`, when given, is reset at each node (see GuardedSlice).
  YamlGuard(bool single_document, std::vector<YAML::Mark>* starts, std::uint64_t* pending = nullptr)
      : single_(single_document), starts_(starts), pending_(pending) {}

  int documents() const { return documents_; }
  int document_line() const { return document_line_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1 && single_) {
      throw YamlGuardError{mark,
                           "a second YAML document starts here; this file must hold "
                           "exactly one document"};
    }
    // Counted in this event pass, before any node is built: each document costs a node tree.
    if (documents_ > kMaxYamlDocuments) {
      throw YamlGuardError{mark, "more than " + std::to_string(kMaxYamlDocuments) +
                                     " YAML documents in one file; split the input"};
    }
    anchors_.clear();
    nodes_ = 0;
    document_line_ = mark.line + 1;
    if (starts_ != nullptr) starts_->push_back(mark);
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Leaf(mark, anchor, "~", 1, 1);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end() || it->second.open) {
      throw YamlGuardError{mark, "alias refers to a node that contains it (a cycle)"};
    }
    alias_nodes_ += it->second.nodes;
    if (alias_nodes_ > kMaxYamlAliasNodes) {
      throw YamlGuardError{mark, "aliases expand to more than " +
                                     std::to_string(kMaxYamlAliasNodes) +
                                     " nodes (limit on alias expansion)"};
    }
    // An alias used as a key is not compared: only plain scalar keys can be duplicates.
    Leaf(mark, YAML::NullAnchor, "", it->second.nodes, it->second.depth, /*comparable=*/false);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    Leaf(mark, anchor, value, 1, 1);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor, false);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor, true);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Anchor {
    bool open = true;
    std::uint64_t nodes = 1;
    int depth = 1;
  };
  struct Frame {
    bool is_map = false;
    bool next_is_key = true;
    YAML::anchor_t anchor = YAML::NullAnchor;
    std::uint64_t nodes = 1;
    int depth = 1;  // of the subtree so far, this node included
    std::set<std::string, std::less<>> keys;
  };

  // Current depth of the open path (1 for a child of the root).
  int OpenDepth() const { return static_cast<int>(stack_.size()); }

  // One more node of the tree yaml-cpp will build for this document.
  void CountNode(const YAML::Mark& mark) {
    if (pending_ != nullptr) *pending_ = 0;
    if (++nodes_ <= kMaxYamlDocumentNodes) return;
    const std::string cap = std::to_string(kMaxYamlDocumentNodes);
    throw YamlGuardError{
        mark, "more than " + cap + " YAML nodes in one document " +
                  (single_ ? std::string("(the limit of a configuration file)")
                           : "(document " + std::to_string(documents_) + ", which starts at line " +
                                 std::to_string(document_line_) + "; at most " + cap +
                                 " nodes are read per document)")};
  }

  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor, const std::string& value,
            std::uint64_t nodes, int depth, bool comparable = true) {
    CountNode(mark);
    if (OpenDepth() + depth > kMaxYamlDepth) {
      throw YamlGuardError{mark, "nesting deeper than " + std::to_string(kMaxYamlDepth) +
                                     " levels (limit on depth, aliases included)"};
    }
    if (anchor != YAML::NullAnchor) anchors_[anchor] = Anchor{false, nodes, depth};
    Child(mark, &value, comparable, nodes, depth);
  }

  void Child(const YAML::Mark& mark, const std::string* key, bool comparable, std::uint64_t nodes,
             int depth) {
    if (stack_.empty()) return;
    Frame& f = stack_.back();
    f.nodes += nodes;
    f.depth = std::max(f.depth, depth + 1);
    if (!f.is_map) return;
    if (f.next_is_key && comparable && key != nullptr) {
      if (!f.keys.insert(*key).second) {
        std::string shown = key->substr(0, 80) + (key->size() > 80 ? "..." : "");
        throw YamlGuardError{
            mark, "duplicate key '" + shown + "' (each key may appear once in a mapping)"};
      }
    }
    f.next_is_key = !f.next_is_key;
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, bool is_map) {
    CountNode(mark);
    if (OpenDepth() + 1 > kMaxYamlDepth) {
      throw YamlGuardError{mark, "nesting deeper than " + std::to_string(kMaxYamlDepth) +
                                     " levels (limit on depth, aliases included)"};
    }
    if (anchor != YAML::NullAnchor) anchors_[anchor] = Anchor{};
    Frame f;
    f.is_map = is_map;
    f.anchor = anchor;
    marks_.push_back(mark);
    stack_.push_back(std::move(f));
  }

  void Close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    YAML::Mark mark = marks_.back();
    marks_.pop_back();
    if (f.anchor != YAML::NullAnchor) anchors_[f.anchor] = Anchor{false, f.nodes, f.depth};
    Child(mark, nullptr, false, f.nodes, f.depth);
  }

  bool single_;
  std::vector<YAML::Mark>* starts_;
  std::uint64_t* pending_;
  int documents_ = 0;
  std::uint64_t nodes_ = 0;  // in the current document
  int document_line_ = 0;    // 1-based line of the current document's start
  std::uint64_t alias_nodes_ = 0;
  std::map<YAML::anchor_t, Anchor> anchors_;
  std::vector<Frame> stack_;
  std::vector<YAML::Mark> marks_;
};

// Flow indicators ('[', ']', '{', '}', ',') yaml-cpp may read past its last event. A flow
// collection nested in another is queued token by token until it closes (it might yet be a key),
// about 125 bytes a token, before any event reaches the guard; a collection of the document
// node cap has at most three indicators a node ("{},"), and one 4 KiB piece is read ahead.
constexpr std::uint64_t kMaxPendingFlowIndicators = 3 * kMaxYamlDocumentNodes + 4096;

// Serves the text to the parser in 4 KiB pieces, counting the flow indicators served since the
// guard last saw a node; past kMaxPendingFlowIndicators it ends the stream early, so yaml-cpp's
// token queue stays bounded (about 40 MB) whatever the input's size.
class GuardedSlice : public std::streambuf {
 public:
  explicit GuardedSlice(const std::string& text) : text_(text) {}
  // Reset by the guard at each node.
  std::uint64_t* pending() { return &pending_; }
  bool stopped() const { return stopped_; }
  std::size_t served() const { return next_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (stopped_ || next_ >= text_.size()) return traits_type::eof();
    const std::size_t n = std::min<std::size_t>(4096, text_.size() - next_);
    char* first = const_cast<char*>(text_.data()) + next_;
    pending_ += static_cast<std::uint64_t>(std::count_if(first, first + n, [](char c) {
      return c == ',' || c == '[' || c == ']' || c == '{' || c == '}';
    }));
    if (pending_ > kMaxPendingFlowIndicators) {
      stopped_ = true;
      return traits_type::eof();
    }
    setg(first, first, first + n);
    next_ += n;
    return traits_type::to_int_type(*first);
  }

 private:
  const std::string& text_;
  std::size_t next_ = 0;
  std::uint64_t pending_ = 0;
  bool stopped_ = false;
};

// Whether `text` is one JSON value with more than kMaxYamlDocumentNodes nodes; if so, `offset` is
// where the node over the cap starts. yaml-cpp queues every token of a flow collection before it
// reports the first event (a key could follow it), about 125 bytes a token: 113 MB for a 0.9 MB
// list of empty objects before the guard would see node 100 001. JSON is counted without it.
bool JsonNodesOverCap(const std::string& text, std::size_t* offset);

Status CheckYaml(const std::string& text, const std::string& source, bool single_document,
                 std::vector<YAML::Mark>* starts) {
  const std::size_t lead = text.find_first_not_of(" \t\r\n");
  if (std::size_t at = 0; lead != std::string::npos && (text[lead] == '{' || text[lead] == '[') &&
                          JsonNodesOverCap(text, &at)) {
    const TextPosition p = PositionOfOffset(text, at);
    YAML::Mark mark;
    mark.pos = static_cast<int>(at);
    mark.line = static_cast<int>(p.line) - 1;
    mark.column = static_cast<int>(p.column) - 1;
    const std::string cap = std::to_string(kMaxYamlDocumentNodes);
    return YamlError(
        source, mark,
        "more than " + cap + " YAML nodes in one document " +
            (single_document ? std::string("(the limit of a configuration file)")
                             : "(document 1, which starts at line " +
                                   std::to_string(PositionOfOffset(text, lead).line) +
                                   "; at most " + cap + " nodes are read per document)"));
  }
  GuardedSlice slice(text);
  YamlGuard guard(single_document, starts, slice.pending());
  try {
    std::istream in(&slice);
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(guard) && !slice.stopped()) {
    }
  } catch (const YamlGuardError& e) {
    if (!slice.stopped()) return YamlError(source, e.mark, e.message);
  } catch (const YAML::Exception& e) {
    if (!slice.stopped()) return YamlError(source, e.mark, e.msg);
  }
  if (slice.stopped()) {
    const TextPosition p = PositionOfOffset(text, slice.served());
    YAML::Mark mark;
    mark.pos = static_cast<int>(slice.served());
    mark.line = static_cast<int>(p.line) - 1;
    mark.column = static_cast<int>(p.column) - 1;
    return YamlError(source, mark,
                     "more than " + std::to_string(kMaxPendingFlowIndicators) +
                         " brackets and commas before the parser's next node (document " +
                         std::to_string(guard.documents()) + ", which starts at line " +
                         std::to_string(guard.document_line()) +
                         "): a flow collection larger than the " +
                         std::to_string(kMaxYamlDocumentNodes) +
                         " nodes a document may have (three indicators a node at most)");
  }
  return Status::Ok();
}

}  // namespace

namespace {

// Counts the nodes of a JSON text as yaml-cpp would build them (every key is a node too) and
// stops the parse at the first one over the cap. No value is kept.
class JsonNodeCounter : public nlohmann::json_sax<Json> {
 public:
  explicit JsonNodeCounter(const std::size_t* offset) : offset_(offset) {}
  bool null() override { return Count(); }
  bool boolean(bool) override { return Count(); }
  bool number_integer(number_integer_t) override { return Count(); }
  bool number_unsigned(number_unsigned_t) override { return Count(); }
  bool number_float(number_float_t, const string_t&) override { return Count(); }
  bool string(string_t&) override { return Count(); }
  bool binary(binary_t&) override { return Count(); }
  bool start_object(std::size_t) override { return Count(); }
  bool key(string_t&) override { return Count(); }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return Count(); }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
  bool over() const { return over_; }
  std::size_t at() const { return at_; }

 private:
  bool Count() {
    if (++nodes_ <= kMaxYamlDocumentNodes) return true;
    // The lexer has just read this node's first token: its last character is the one before.
    at_ = *offset_ > 0 ? *offset_ - 1 : 0;
    over_ = true;
    return false;
  }
  const std::size_t* offset_;
  std::uint64_t nodes_ = 0;
  std::size_t at_ = 0;  // within the token of the node over the cap
  bool over_ = false;
};

}  // namespace

namespace {

bool JsonNodesOverCap(const std::string& text, std::size_t* offset) {
  std::size_t read = 0;
  CountingIterator first{text.data(), text.data(), &read};
  CountingIterator last{text.data() + text.size(), text.data(), nullptr};
  JsonNodeCounter counter(&read);
  try {
    Json::sax_parse(first, last, &counter);
  } catch (const std::exception&) {
    return false;  // not JSON after all: the YAML parser judges it
  }
  if (!counter.over()) return false;
  *offset = std::min(counter.at(), text.size() - 1);
  return true;
}

}  // namespace

Status YamlError(const std::string& source, const YAML::Mark& mark, const std::string& what) {
  return Status::InvalidArg(source + ":" + std::to_string(mark.line + 1) + ":" +
                            std::to_string(mark.column + 1) + ": invalid YAML: " + what);
}

Status CheckYamlDocument(const std::string& text, const std::string& source) {
  return CheckYaml(text, source, /*single_document=*/true, /*starts=*/nullptr);
}

Status CheckYamlDocuments(const std::string& text, const std::string& source,
                          std::vector<YAML::Mark>* starts) {
  return CheckYaml(text, source, /*single_document=*/false, starts);
}

}  // namespace tg::common
