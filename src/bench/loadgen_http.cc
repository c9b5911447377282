#include "bench/loadgen_http.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "common/strings.h"

namespace tg::bench {
namespace {

constexpr std::size_t kMaxChunkLine = 4096;  // chunk-size line with extensions

// ASCII only (header names and tokens are ASCII); `lower` must be lowercase. Not std::tolower:
// that is a locale-aware libc call per byte on the hot path.
bool EqualsNoCase(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

// HTTP optional whitespace (RFC 9110 OWS): space and tab only.
std::string_view Trim(std::string_view s) { return common::Trim(s, " \t"); }

// Calls f(token) for each comma-separated, trimmed token of a header value.
template <typename F>
void ForEachToken(std::string_view v, F f) {
  while (!v.empty()) {
    std::size_t comma = v.find(',');
    f(Trim(v.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

void ResponseReader::Reset() {
  phase_ = Phase::kHeaders;
  header_.clear();  // keeps the capacity: no allocation per response after the first
  remaining_ = body_ = chunk_size_ = 0;
  size_digits_ = 0;
  in_extension_ = saw_cr_ = false;
  line_len_ = 0;
  status_ = 0;
  keep_alive_ = true;
  started_ = false;
  error_.clear();
}

ResponseReader::State ResponseReader::Fail(std::string message) {
  error_ = std::move(message);
  return State::kError;
}

ResponseReader::State ResponseReader::Feed(const char* data, std::size_t n, std::size_t* consumed) {
  if (n > 0) started_ = true;
  std::size_t pos = 0;
  State s = State::kNeedMore;
  // Every pass consumes at least one byte or leaves the loop, so this terminates.
  while (pos < n && s == State::kNeedMore) {
    std::size_t c = 0;
    switch (phase_) {
      case Phase::kHeaders:
        s = FeedHeaders(data + pos, n - pos, &c);
        break;
      case Phase::kLength:
        c = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, n - pos));
        remaining_ -= c;
        if (remaining_ == 0) s = State::kDone;
        break;
      case Phase::kClose:
        c = n - pos;
        body_ += c;
        if (body_ > max_body_) s = Fail(fmt::format("body over {} bytes", max_body_));
        break;
      default:
        s = FeedChunked(data + pos, n - pos, &c);
        break;
    }
    pos += c;
  }
  *consumed = pos;
  return s;
}

ResponseReader::State ResponseReader::Eof() {
  if (phase_ == Phase::kClose) return State::kDone;
  return Fail(started_ ? "connection closed in the middle of a response"
                       : "connection closed before a response");
}

ResponseReader::State ResponseReader::FeedHeaders(const char* data, std::size_t n,
                                                  std::size_t* consumed) {
  std::size_t old = header_.size();
  std::size_t take = std::min(n, kMaxHeaderBytes - old);
  header_.append(data, take);
  // The terminator may straddle the previous and this read: look back three bytes.
  std::size_t end = header_.find("\r\n\r\n", old >= 3 ? old - 3 : 0);
  if (end == std::string::npos) {
    *consumed = take;
    if (header_.size() >= kMaxHeaderBytes) {
      return Fail(fmt::format("response header block over {} bytes", kMaxHeaderBytes));
    }
    return State::kNeedMore;
  }
  end += 4;
  *consumed = end - old;
  header_.resize(end);
  return ParseHeaderBlock();
}

ResponseReader::State ResponseReader::ParseHeaderBlock() {
  std::string_view block(header_);
  std::size_t eol = block.find("\r\n");
  std::string_view line = block.substr(0, eol);
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || !digit(line[7]) || line[8] != ' ' ||
      !digit(line[9]) || !digit(line[10]) || !digit(line[11]) ||
      (line.size() > 12 && line[12] != ' ')) {
    return Fail(fmt::format("malformed status line \"{}\"", line.substr(0, 80)));
  }
  status_ = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  keep_alive_ = line[7] != '0';  // HTTP/1.0 closes unless it says keep-alive
  bool chunked = false, has_length = false, other_coding = false;
  std::uint64_t length = 0;
  block.remove_prefix(eol + 2);
  while (!block.empty()) {
    eol = block.find("\r\n");
    line = block.substr(0, eol);
    block.remove_prefix(eol + 2);
    if (line.empty()) break;
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // tolerated, as browsers do
    std::string_view name = line.substr(0, colon), value = Trim(line.substr(colon + 1));
    if (EqualsNoCase(name, "content-length")) {
      if (value.empty() || value.size() > 18 ||
          value.find_first_not_of("0123456789") != std::string_view::npos) {
        return Fail(fmt::format("invalid Content-Length \"{}\"", value.substr(0, 40)));
      }
      std::uint64_t v = 0;  // at most 18 digits: cannot overflow
      for (char ch : value) v = v * 10 + static_cast<std::uint64_t>(ch - '0');
      if (has_length && v != length) return Fail("conflicting Content-Length headers");
      has_length = true;
      length = v;
    } else if (EqualsNoCase(name, "transfer-encoding")) {
      ForEachToken(value, [&](std::string_view t) {
        chunked = EqualsNoCase(t, "chunked");  // only a final "chunked" frames the body
        other_coding = !chunked;
      });
    } else if (EqualsNoCase(name, "connection")) {
      ForEachToken(value, [&](std::string_view t) {
        if (EqualsNoCase(t, "close")) keep_alive_ = false;
        if (EqualsNoCase(t, "keep-alive")) keep_alive_ = true;
      });
    }
  }
  if (status_ >= 100 && status_ < 200) {
    header_.clear();  // an interim response (100 Continue): the real one follows
    return State::kNeedMore;
  }
  if (status_ == 204 || status_ == 304) return State::kDone;
  if (chunked) {
    phase_ = Phase::kChunkSize;
    return State::kNeedMore;
  }
  if (has_length && !other_coding) {
    if (length > max_body_) return Fail(fmt::format("Content-Length {} over the limit", length));
    if (length == 0) return State::kDone;
    remaining_ = length;
    phase_ = Phase::kLength;
    return State::kNeedMore;
  }
  keep_alive_ = false;  // delimited by the close
  phase_ = Phase::kClose;
  return State::kNeedMore;
}

ResponseReader::State ResponseReader::FeedChunked(const char* data, std::size_t n,
                                                  std::size_t* consumed) {
  std::size_t i = 0;
  while (i < n) {
    if (phase_ == Phase::kChunkData) {
      std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, n - i));
      i += take;
      remaining_ -= take;
      if (remaining_ == 0) {
        phase_ = Phase::kChunkDataEnd;
        saw_cr_ = false;
      }
      continue;
    }
    char ch = data[i++];
    if (phase_ == Phase::kChunkDataEnd) {
      if (ch == '\r' && !saw_cr_) {
        saw_cr_ = true;
      } else if (ch == '\n') {
        phase_ = Phase::kChunkSize;
        chunk_size_ = 0;
        size_digits_ = 0;
        in_extension_ = false;
        line_len_ = 0;
      } else {
        *consumed = i;
        return Fail("missing CRLF after chunk data");
      }
    } else if (phase_ == Phase::kChunkSize) {
      if (++line_len_ > kMaxChunkLine) return Fail("chunk size line too long");
      int d = HexDigit(ch);
      if (ch == '\n') {
        if (size_digits_ == 0) return Fail("chunk size line without a size");
        body_ += chunk_size_;
        if (body_ > max_body_) return Fail(fmt::format("body over {} bytes", max_body_));
        phase_ = chunk_size_ == 0 ? Phase::kTrailer : Phase::kChunkData;
        remaining_ = chunk_size_;
        line_len_ = 0;
      } else if (d >= 0 && !in_extension_) {
        if (++size_digits_ > 15) return Fail("chunk size too large");
        chunk_size_ = chunk_size_ * 16 + static_cast<std::uint64_t>(d);
      } else if (ch == ';' || ch == ' ' || ch == '\t' || ch == '\r') {
        in_extension_ = true;
      } else if (!in_extension_) {
        return Fail(fmt::format("invalid character 0x{:02x} in a chunk size",
                                static_cast<unsigned char>(ch)));
      }
    } else {  // kTrailer: header lines until an empty one
      if (ch == '\n') {
        if (line_len_ == 0) {
          *consumed = i;
          return State::kDone;
        }
        line_len_ = 0;
      } else if (ch != '\r') {
        if (++line_len_ > kMaxHeaderBytes) return Fail("trailer line too long");
      }
    }
  }
  *consumed = i;
  return State::kNeedMore;
}

}  // namespace tg::bench
