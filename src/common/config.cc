#include "common/config.h"
#include "common/json_limits.h"
#include "common/yaml_check.h"
#include "common/yaml_stream.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <iterator>
#include <set>
#include <sstream>

namespace tg::common {
namespace {

std::string Quote(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 80)) out.push_back(c);
  if (s.size() > 80) out += "...";
  out += "'";
  return out;
}

bool ParseInt(const std::string& s, std::int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ParseDouble(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

bool ParseBool(const std::string& s, bool* out) {
  if (s == "true" || s == "True" || s == "TRUE" || s == "yes" || s == "on") {
    *out = true;
    return true;
  }
  if (s == "false" || s == "False" || s == "FALSE" || s == "no" || s == "off") {
    *out = false;
    return true;
  }
  return false;
}

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

Status YamlError(const std::string& source, const YAML::Mark& mark, const std::string& what) {
  return Status::InvalidArg(source + ":" + std::to_string(mark.line + 1) + ":" +
                            std::to_string(mark.column + 1) + ": invalid YAML: " + what);
}

// Whether `text` is one JSON value with more than kMaxYamlDocumentNodes nodes; if so, `offset` is
// where the node over the cap starts. yaml-cpp queues every token of a flow collection before it
// reports the first event (a key could follow it), about 125 bytes a token: 113 MB for a 0.9 MB
// list of empty objects before the guard would see node 100 001. JSON is counted without it.
bool JsonNodesOverCap(const std::string& text, std::size_t* offset);

Status CheckYaml(const std::string& text, const std::string& source, bool single_document,
                 std::vector<YAML::Mark>* starts = nullptr) {
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

// Forward iterator over the text that records how far the JSON lexer has read, so errors found in
// the parser callback (duplicate key, depth) can name a line and column.
struct CountingIterator {
  using iterator_category = std::forward_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;
  const char* p = nullptr;
  const char* base = nullptr;
  std::size_t* offset = nullptr;
  reference operator*() const { return *p; }
  CountingIterator& operator++() {
    ++p;
    if (offset != nullptr) *offset = static_cast<std::size_t>(p - base);
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator t = *this;
    ++*this;
    return t;
  }
  bool operator==(const CountingIterator& o) const { return p == o.p; }
  bool operator!=(const CountingIterator& o) const { return p != o.p; }
};

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

// nlohmann's message names the token it read ("last read: '...'"): a piece of the file. Keep the
// reason only, and say in plain words what the common non-JSON spellings are.
std::string JsonReason(const std::string& what, const std::string& text, std::size_t offset) {
  std::string detail = what;
  if (auto colon = detail.find("]: "); colon != std::string::npos)
    detail = detail.substr(colon + 3);
  if (auto at = detail.find(": ");
      detail.rfind("syntax error", 0) == 0 && at != std::string::npos) {
    detail = detail.substr(at + 2);
  }
  if (auto last = detail.find("; last read"); last != std::string::npos) detail.resize(last);
  char c = offset < text.size() ? text[offset] : '\0';
  if (offset >= text.size()) return "unexpected end of input (truncated?): " + detail;
  if (c == 'N' || c == 'I' || c == '-') {
    if (text.compare(offset, 3, "NaN") == 0 || text.compare(offset, 8, "Infinity") == 0 ||
        text.compare(offset, 9, "-Infinity") == 0) {
      return "NaN and Infinity are not JSON numbers";
    }
  }
  if (c == '/') return "comments are not allowed in JSON";
  if (detail.find("UTF-8") != std::string::npos || static_cast<unsigned char>(c) >= 0x80) {
    return "invalid UTF-8 in a string";
  }
  return detail;
}

// Builds the document from the parser's events, checking nesting, duplicate keys and the
// element count of each container as it goes (so a cap refuses a huge list before it is built).
// Not nlohmann's callback parser: that one scans the whole enclosing array or object after every
// object it closes, so an array of n objects took n^2 steps (0.04 s at 10k '{}', 2.6 s at 100k).
// Here each event costs O(log k) at most (the key lookup in its object). Without `build` nothing
// is stored but the keys of the open objects (for the duplicate check).
class DomBuilder {
 public:
  DomBuilder(const std::size_t* offset, const JsonLimits& limits)
      : offset_(offset), limits_(limits) {}

  bool null() { return Put(nullptr); }
  bool boolean(bool v) { return Put(v); }
  bool number_integer(Json::number_integer_t v) { return Put(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return Put(v); }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return Put(v); }
  bool string(Json::string_t& v) { return Put(std::move(v)); }
  bool binary(Json::binary_t& v) { return Put(Json::binary(std::move(v))); }
  bool start_object(std::size_t) { return Open(Json::object()); }
  bool start_array(std::size_t) { return Open(Json::array()); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(Json::string_t& k) {
    const bool dup = limits_.build ? stack_.back()->contains(k) : !keys_.back().insert(k).second;
    if (dup) {
      return Fail("duplicate key '" + k.substr(0, 80) + (k.size() > 80 ? "..." : "") +
                  "' (each key may appear once in an object)");
    }
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    syntax_ = e.id >= 100 && e.id < 200;  // parse_error ids; 4xx is out_of_range (1e9999)
    error_ = e.what();
    error_offset_ = position;
    return false;
  }

  Json& root() { return root_; }
  bool failed() const { return !error_.empty(); }
  bool syntax() const { return syntax_; }
  bool guard() const { return guard_; }
  const std::string& error() const { return error_; }
  std::size_t error_offset() const { return error_offset_; }

 private:
  // Counts one more element of the open container against the cap.
  bool Count() {
    if (counts_.empty()) return true;
    if (limits_.max_container_elements != 0 && ++counts_.back() > limits_.max_container_elements) {
      return Fail("an array or object of more than " +
                  std::to_string(limits_.max_container_elements) + " elements (" + limits_.what +
                  ")");
    }
    return true;
  }
  // Stores `v` where the parser is: the root, the next array element or the member `key_`.
  template <typename V>
  Json* Place(V&& v) {
    if (!limits_.build) return nullptr;
    if (stack_.empty()) {
      root_ = Json(std::forward<V>(v));
      return &root_;
    }
    Json* top = stack_.back();
    if (top->is_array()) {
      top->emplace_back(std::forward<V>(v));
      return &top->back();
    }
    Json& slot = (*top)[key_];
    slot = Json(std::forward<V>(v));
    return &slot;
  }
  template <typename V>
  bool Put(V&& v) {
    if (!Count()) return false;
    Place(std::forward<V>(v));
    return true;
  }
  bool Open(Json container) {
    if (stack_.size() >= static_cast<std::size_t>(kMaxJsonDepth)) {
      return Fail("nesting deeper than " + std::to_string(kMaxJsonDepth) +
                  " levels (limit on depth)");
    }
    if (!Count()) return false;
    if (!limits_.build && container.is_object()) keys_.emplace_back();
    objects_.push_back(container.is_object());
    stack_.push_back(Place(std::move(container)));
    counts_.push_back(0);
    return true;
  }
  bool Close() {
    if (!limits_.build && objects_.back()) keys_.pop_back();
    objects_.pop_back();
    stack_.pop_back();
    counts_.pop_back();
    return true;
  }
  bool Fail(std::string message) {
    guard_ = true;
    error_ = std::move(message);
    error_offset_ = *offset_;
    return false;
  }

  const std::size_t* offset_;
  JsonLimits limits_;
  Json root_;
  std::vector<Json*> stack_;
  std::vector<std::size_t> counts_;
  std::vector<bool> objects_;
  std::vector<std::set<std::string>> keys_;
  std::string key_;
  std::string error_;
  std::size_t error_offset_ = 0;
  bool syntax_ = false;
  bool guard_ = false;
};

}  // namespace

Result<Json> ParseJson(const std::string& text, const std::string& source,
                       const JsonLimits& limits) {
  std::size_t offset = 0;
  auto where = [&](std::size_t off) {
    TextPosition pos = PositionOfOffset(text, off);
    return source + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column);
  };
  CountingIterator first{text.data(), text.data(), &offset};
  CountingIterator last{text.data() + text.size(), text.data(), nullptr};
  DomBuilder dom(&offset, limits);
  try {
    Json::sax_parse(first, last, &dom);
  } catch (const std::exception& e) {
    // sax_parse reports through DomBuilder::parse_error; only memory exhaustion is left.
    return Status::InvalidArg(source + ": the JSON document needs more memory than is free (" +
                              e.what() + ")");
  }
  if (!dom.failed()) return std::move(dom.root());
  if (dom.guard())
    return Status::InvalidArg(where(dom.error_offset()) + ": invalid JSON: " + dom.error());
  if (dom.syntax()) {
    const std::size_t at = dom.error_offset() > 0 ? dom.error_offset() - 1 : 0;
    return Status::InvalidArg(where(at) + ": invalid JSON: " + JsonReason(dom.error(), text, at));
  }
  // Not a syntax error but still bad input, e.g. a number too large for a double (found by the
  // snapshot fuzzer: "1111e1111...").
  std::string what = dom.error();
  if (auto colon = what.find("] "); colon != std::string::npos) what = what.substr(colon + 2);
  if (auto quote = what.find(" '"); quote != std::string::npos) what.resize(quote);
  return Status::InvalidArg(where(offset) + ": invalid JSON: " + what);
}

Result<Json> ParseJson(const std::string& text, const std::string& source) {
  return ParseJson(text, source, JsonLimits{});
}

Result<Json> LoadJsonFile(const std::string& path, std::uint64_t max_bytes,
                          const JsonLimits& limits) {
  TG_ASSIGN_OR_RETURN(std::string text, ReadFileLimited(path, max_bytes));
  return ParseJson(text, path, limits);
}

Result<Json> LoadJsonFile(const std::string& path, std::uint64_t max_bytes) {
  return LoadJsonFile(path, max_bytes, JsonLimits{});
}

Status CheckYamlDocument(const std::string& text, const std::string& source) {
  return CheckYaml(text, source, /*single_document=*/true);
}

Result<YAML::Node> ParseYaml(const std::string& text, const std::string& source) {
  TG_RETURN_IF_ERROR(CheckYaml(text, source, /*single_document=*/true));
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArg(source + ":" + std::to_string(e.mark.line + 1) + ":" +
                              std::to_string(e.mark.column + 1) + ": invalid YAML: " + e.msg);
  }
}

Result<std::vector<YAML::Node>> ParseYamlDocuments(const std::string& text,
                                                   const std::string& source) {
  TG_RETURN_IF_ERROR(CheckYaml(text, source, /*single_document=*/false));
  try {
    return YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArg(source + ":" + std::to_string(e.mark.line + 1) + ":" +
                              std::to_string(e.mark.column + 1) + ": invalid YAML: " + e.msg);
  }
}

namespace {

// Documents [first, last) of a stream, parsed from text[offset, end) behind `line` newlines so that
// their nodes carry the lines and columns they have in the whole text.
struct YamlBatch {
  std::size_t first = 0, last = 0;
  std::size_t offset = 0, end = 0;
  std::size_t line = 0;
};

// Cuts the stream before documents whose `---` begins a line: the parser saw a document start
// there, so nothing before it is still open and the rest parses the same on its own. Never cut a
// stream with directives (`%TAG` belongs to the document after it, which a cut would separate) or
// where a mark does not match the text (a byte-order mark shifts positions): one batch, as
// LoadAll. Linear: one pass over the text.
std::vector<YamlBatch> PlanYamlBatches(const std::string& text,
                                       const std::vector<YAML::Mark>& starts, std::size_t target) {
  std::vector<YamlBatch> batches;
  if (starts.empty()) return batches;
  const bool directives = text.starts_with('%') || text.find("\n%") != std::string::npos;
  YamlBatch cur;
  std::size_t scanned = 0, line = 0;  // newlines in text[0, scanned)
  for (std::size_t i = 1; i < starts.size() && !directives; ++i) {
    const YAML::Mark& m = starts[i];
    if (m.column != 0 || m.pos < 0 || m.line < 0) continue;
    const auto pos = static_cast<std::size_t>(m.pos);
    if (pos < scanned || pos > text.size()) continue;
    line += static_cast<std::size_t>(std::count(text.begin() + scanned, text.begin() + pos, '\n'));
    scanned = pos;
    if (line != static_cast<std::size_t>(m.line) || pos == 0 || text[pos - 1] != '\n' ||
        text.compare(pos, 3, "---") != 0 || pos - cur.offset < target) {
      continue;
    }
    cur.last = i;
    cur.end = pos;
    batches.push_back(cur);
    cur = YamlBatch{i, 0, pos, 0, line};
  }
  cur.last = starts.size();
  cur.end = text.size();
  batches.push_back(cur);
  return batches;
}

// Reads `pad` newlines, then text[offset, end), without copying the text. The get area points
// into the text only for reading: putting back a different character fails (pbackfail's default).
class PaddedSlice : public std::streambuf {
 public:
  PaddedSlice(const std::string& text, const YamlBatch& b)
      : text_(text), begin_(b.offset), end_(b.end), pad_(b.line) {
    std::fill(std::begin(newlines_), std::end(newlines_), '\n');
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (pad_ > 0) {
      const std::size_t n = std::min(pad_, sizeof newlines_);
      pad_ -= n;
      setg(newlines_, newlines_, newlines_ + n);
      return traits_type::to_int_type('\n');
    }
    if (begin_ < end_) {
      char* first = const_cast<char*>(text_.data()) + begin_;
      setg(first, first, first + (end_ - begin_));
      begin_ = end_;
      return traits_type::to_int_type(*first);
    }
    return traits_type::eof();
  }

 private:
  const std::string& text_;
  std::size_t begin_, end_, pad_;
  char newlines_[4096];
};

Result<std::vector<YAML::Node>> LoadYamlBatch(const std::string& text, const std::string& source,
                                              const YamlBatch& b) {
  try {
    PaddedSlice slice(text, b);
    std::istream in(&slice);
    return YAML::LoadAll(in);
  } catch (const YAML::Exception& e) {
    return YamlError(source, e.mark, e.msg);
  }
}

}  // namespace

Status ForEachYamlDocument(const std::string& text, const std::string& source,
                           const YamlDocumentVisitor& visit, std::size_t batch_bytes) {
  std::vector<YAML::Mark> starts;
  TG_RETURN_IF_ERROR(CheckYaml(text, source, /*single_document=*/false, &starts));
  // Batches of a sixteenth of the text keep a sixteenth of LoadAll's trees alive. Each batch
  // also costs the newlines in front of it, about half the text's lines on average: batches of
  // at least half the line count keep that total near one pass over the text, however many
  // blank lines the text holds (blank lines build no nodes, so those batches can be longer).
  if (batch_bytes == 0) {
    const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
    batch_bytes = std::max({std::size_t{256} << 10, text.size() / 16, lines / 2});
  }
  for (const YamlBatch& b : PlanYamlBatches(text, starts, batch_bytes)) {
    TG_ASSIGN_OR_RETURN(std::vector<YAML::Node> docs, LoadYamlBatch(text, source, b));
    if (docs.size() != b.last - b.first) {
      // A cut the parser disagrees with: read the rest from the whole text instead (more memory,
      // the same documents).
      TG_ASSIGN_OR_RETURN(docs, LoadYamlBatch(text, source, YamlBatch{0, 0, 0, text.size(), 0}));
      for (std::size_t k = b.first; k < docs.size(); ++k) {
        TG_RETURN_IF_ERROR(visit(docs[k], static_cast<int>(k + 1)));
      }
      return Status::Ok();
    }
    for (std::size_t k = 0; k < docs.size(); ++k) {
      TG_RETURN_IF_ERROR(visit(docs[k], static_cast<int>(b.first + k + 1)));
    }
  }
  return Status::Ok();
}

Result<YAML::Node> LoadYamlFile(const std::string& path, std::uint64_t max_bytes) {
  TG_ASSIGN_OR_RETURN(std::string text, ReadFileLimited(path, max_bytes));
  return ParseYaml(text, path);
}

std::string YamlWhere(const YAML::Node& node, const std::string& source) {
  YAML::Mark m = node.Mark();
  if (m.is_null()) return source;
  return source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

std::string YamlDescribe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsSequence()) return "a sequence";
  if (node.IsMap()) return "a mapping";
  return Quote(node.Scalar());
}

Json YamlToJson(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return nullptr;
  if (node.IsSequence()) {
    Json arr = Json::array();
    for (const auto& n : node) arr.push_back(YamlToJson(n));
    return arr;
  }
  if (node.IsMap()) {
    Json obj = Json::object();
    for (const auto& kv : node) obj[kv.first.Scalar()] = YamlToJson(kv.second);
    return obj;
  }
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // explicitly quoted scalar stays a string
  std::int64_t i;
  double d;
  bool b;
  if (ParseInt(s, &i)) return i;
  if (ParseDouble(s, &d)) return d;
  if (ParseBool(s, &b)) return b;
  return s;
}

Result<YamlMap> YamlMap::From(const YAML::Node& node, std::string source, std::string path) {
  if (!node.IsDefined() || !node.IsMap()) {
    if (path.empty()) {
      // The document root: a file that is not the expected kind at all (say /etc/passwd) is
      // named, never quoted.
      const char* what = !node.IsDefined() || node.IsNull() ? "an empty document"
                         : node.IsSequence()                ? "a sequence"
                                                            : "plain text";
      return Status::InvalidArg(YamlWhere(node, source) +
                                ": document root: expected a mapping, found " + what);
    }
    return Status::InvalidArg(YamlWhere(node, source) + ": field '" + path +
                              "': expected a mapping, found " + YamlDescribe(node));
  }
  return YamlMap(node, std::move(source), std::move(path));
}

bool YamlMap::Has(std::string_view key) const { return node_[std::string(key)].IsDefined(); }

std::string YamlMap::FieldPath(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

Result<YAML::Node> YamlMap::Lookup(std::string_view key, bool required, bool* present) {
  seen_.insert(std::string(key));
  YAML::Node v = node_[std::string(key)];
  *present = v.IsDefined() && !v.IsNull();
  if (!*present && required) {
    return Status::InvalidArg(YamlWhere(node_, source_) + ": missing required field '" +
                              FieldPath(key) + "'");
  }
  return v;
}

Status YamlMap::TypeError(const YAML::Node& value, std::string_view key,
                          std::string_view expected) const {
  return Status::InvalidArg(YamlWhere(value, source_) + ": field '" + FieldPath(key) +
                            "': expected " + std::string(expected) + ", found " +
                            YamlDescribe(value));
}

Status YamlMap::FieldError(std::string_view key, std::string_view expected) const {
  YAML::Node v = node_[std::string(key)];
  return TypeError(v.IsDefined() ? v : node_, key, expected);
}

Status YamlMap::Get(std::string_view key, std::string* out, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return Status::Ok();
  if (!v.IsScalar()) return TypeError(v, key, "a string");
  *out = v.Scalar();
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, std::int64_t* out, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return Status::Ok();
  if (!v.IsScalar() || !ParseInt(v.Scalar(), out)) return TypeError(v, key, "an integer");
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, int* out, bool required) {
  std::int64_t v = *out;
  TG_RETURN_IF_ERROR(Get(key, &v, required));
  if (v < INT32_MIN || v > INT32_MAX) return FieldError(key, "an integer that fits in 32 bits");
  *out = static_cast<int>(v);
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, double* out, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return Status::Ok();
  if (!v.IsScalar() || !ParseDouble(v.Scalar(), out)) return TypeError(v, key, "a number");
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, bool* out, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return Status::Ok();
  if (!v.IsScalar() || !ParseBool(v.Scalar(), out)) return TypeError(v, key, "true or false");
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, std::vector<std::string>* out, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return Status::Ok();
  if (!v.IsSequence()) return TypeError(v, key, "a list of strings");
  out->clear();
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].IsScalar()) {
      return TypeError(v[i], std::string(key) + "[" + std::to_string(i) + "]", "a string");
    }
    out->push_back(v[i].Scalar());
  }
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, std::optional<std::string>* out) {
  std::string s;
  if (!Has(key)) return Get(key, &s, false);
  TG_RETURN_IF_ERROR(Get(key, &s, false));
  if (node_[std::string(key)].IsNull()) return Status::Ok();
  *out = s;
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, std::optional<std::int64_t>* out) {
  std::int64_t v = 0;
  bool present = Has(key) && !node_[std::string(key)].IsNull();
  TG_RETURN_IF_ERROR(Get(key, &v, false));
  if (present) *out = v;
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, std::optional<double>* out) {
  double v = 0;
  bool present = Has(key) && !node_[std::string(key)].IsNull();
  TG_RETURN_IF_ERROR(Get(key, &v, false));
  if (present) *out = v;
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, std::optional<bool>* out) {
  bool v = false;
  bool present = Has(key) && !node_[std::string(key)].IsNull();
  TG_RETURN_IF_ERROR(Get(key, &v, false));
  if (present) *out = v;
  return Status::Ok();
}

Status YamlMap::Get(std::string_view key, std::map<std::string, std::string>* out, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return Status::Ok();
  if (!v.IsMap()) return TypeError(v, key, "a mapping of names to values");
  out->clear();
  for (const auto& kv : v) {
    if (!kv.second.IsScalar()) {
      return TypeError(kv.second, std::string(key) + "." + kv.first.Scalar(), "a scalar value");
    }
    (*out)[kv.first.Scalar()] = kv.second.Scalar();
  }
  return Status::Ok();
}

Result<std::optional<YamlMap>> YamlMap::GetMap(std::string_view key, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return std::optional<YamlMap>();
  if (!v.IsMap()) return TypeError(v, key, "a mapping");
  return std::optional<YamlMap>(YamlMap(v, source_, FieldPath(key)));
}

Result<YAML::Node> YamlMap::GetSequence(std::string_view key, bool required) {
  bool present;
  TG_ASSIGN_OR_RETURN(YAML::Node v, Lookup(key, required, &present));
  if (!present) return YAML::Node();
  if (!v.IsSequence()) return TypeError(v, key, "a list");
  return v;
}

Status YamlMap::Finish() const {
  for (const auto& kv : node_) {
    const std::string& k = kv.first.Scalar();
    if (seen_.count(k)) continue;
    std::string allowed;
    for (const auto& s : seen_) allowed += (allowed.empty() ? "" : ", ") + s;
    return Status::InvalidArg(YamlWhere(kv.first, source_) + ": unknown field '" + FieldPath(k) +
                              "'" + (allowed.empty() ? "" : " (allowed here: " + allowed + ")"));
  }
  return Status::Ok();
}

}  // namespace tg::common
