#include "common/yaml_stream.h"

#include <yaml-cpp/parser.h>

#include <algorithm>
#include <sstream>
#include <vector>

#include "common/yaml_check.h"

namespace tg::common {

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
  TG_RETURN_IF_ERROR(CheckYamlDocuments(text, source, &starts));
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

}  // namespace tg::common
