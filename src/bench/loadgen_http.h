// The load generator's HTTP/1.1 response framer: finds where each response on a keep-alive
// connection ends, and reads its status code and keep-alive flag, without storing the body.
//
// The generator only needs the status and the response boundary, so bodies (base64 images of
// several MB at large batch) are counted and dropped instead of being copied; only the header
// block is kept (at most kMaxHeaderBytes). Framing follows RFC 9112: 1xx interim responses are
// skipped, 204/304 have no body, `Transfer-Encoding: chunked` wins over Content-Length, and a
// response with neither is delimited by the connection closing (then it is not keep-alive).
//
// Bad input (malformed status line or chunk size, conflicting Content-Length, header block or
// body over the limit) puts the reader in the error state with a message; it never throws and
// never reads outside the bytes it is given. One reader per connection; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tg::bench {

class ResponseReader {
 public:
  static constexpr std::size_t kMaxHeaderBytes = 64 * 1024;
  enum class State { kNeedMore, kDone, kError };

  explicit ResponseReader(std::uint64_t max_body_bytes) : max_body_(max_body_bytes) {}

  // Consumes bytes of the current response from `data` and stores how many in `*consumed` (bytes
  // after the end of a complete response are not consumed). After kDone or kError, call Reset()
  // before feeding the next response.
  State Feed(const char* data, std::size_t n, std::size_t* consumed);
  // The peer closed the connection: completes a close-delimited body, otherwise an error.
  State Eof();
  void Reset();  // ready for the next response on the same connection
  // The current response's status code, keep-alive decision and, after kError, the reason.
  int status() const { return status_; }
  bool keep_alive() const { return keep_alive_; }
  // True once some byte of the current response arrived (an idle connection closed by the peer
  // is not a failed response).
  bool started() const { return started_; }
  const std::string& error() const { return error_; }

 private:
  enum class Phase { kHeaders, kLength, kChunkSize, kChunkData, kChunkDataEnd, kTrailer, kClose };

  State FeedHeaders(const char* data, std::size_t n, std::size_t* consumed);
  State ParseHeaderBlock();
  State FeedChunked(const char* data, std::size_t n, std::size_t* consumed);
  State Fail(std::string message);

  std::uint64_t max_body_;
  Phase phase_ = Phase::kHeaders;
  std::string header_;  // the header block so far; its capacity is reused across responses
  std::size_t scanned_ = 0;
  std::uint64_t remaining_ = 0;  // bytes left of the Content-Length body or current chunk
  std::uint64_t body_ = 0;       // body bytes so far (limit check)
  std::uint64_t chunk_size_ = 0;
  int size_digits_ = 0;
  bool in_extension_ = false;
  bool saw_cr_ = false;
  std::size_t line_len_ = 0;  // trailer: characters on the current line
  int status_ = 0;
  bool keep_alive_ = true;
  bool started_ = false;
  std::string error_;
};

}  // namespace tg::bench
