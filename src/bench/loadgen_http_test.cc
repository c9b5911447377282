#include "bench/loadgen_http.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace tg::bench {
namespace {

using State = ResponseReader::State;

struct Fed {
  State state;
  std::size_t consumed;
};

// Feeds `bytes` in pieces of `step` bytes (the whole string when 0), stopping at the first
// terminal state.
Fed FeedAll(ResponseReader& r, const std::string& bytes, std::size_t step = 0) {
  std::size_t pos = 0;
  if (step == 0) step = bytes.size();
  while (pos < bytes.size()) {
    std::size_t n = std::min(step, bytes.size() - pos), used = 0;
    State s = r.Feed(bytes.data() + pos, n, &used);
    pos += used;
    if (s != State::kNeedMore) return {s, pos};
    EXPECT_EQ(used, n) << "a reader that needs more must consume everything it was given";
  }
  return {State::kNeedMore, pos};
}

TEST(ResponseReaderTest, ContentLengthResponseEndsExactlyAtItsBody) {
  const std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
  for (std::size_t step : {0, 1, 2, 3, 7}) {
    ResponseReader r(1 << 20);
    Fed f = FeedAll(r, resp + "HTTP/1.1 404", step);
    EXPECT_EQ(f.state, State::kDone) << "step " << step;
    EXPECT_EQ(f.consumed, resp.size()) << "the next response's bytes are left alone";
    EXPECT_EQ(r.status(), 200);
    EXPECT_TRUE(r.keep_alive());
  }
}

TEST(ResponseReaderTest, EmptyBodiesAndConnectionHeaders) {
  ResponseReader r(1024);
  EXPECT_EQ(FeedAll(r, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").state, State::kDone);
  r.Reset();
  Fed f = FeedAll(r, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(f.state, State::kDone);
  EXPECT_FALSE(r.keep_alive());
  r.Reset();
  f = FeedAll(r, "HTTP/1.0 503 Busy\r\ncOnNeCtIoN: Keep-Alive\r\ncontent-length: 0\r\n\r\n");
  EXPECT_EQ(f.state, State::kDone);
  EXPECT_EQ(r.status(), 503);
  EXPECT_TRUE(r.keep_alive());
  r.Reset();
  EXPECT_EQ(FeedAll(r, "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").state, State::kDone);
  EXPECT_FALSE(r.keep_alive()) << "HTTP/1.0 closes by default";
}

TEST(ResponseReaderTest, ChunkedBodyWithExtensionsAndTrailers) {
  const std::string resp =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n"
      "4;name=value\r\nWiki\r\nA \r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n";
  for (std::size_t step : {0, 1, 5}) {
    ResponseReader r(1 << 20);
    Fed f = FeedAll(r, resp + "next", step);
    EXPECT_EQ(f.state, State::kDone) << "step " << step;
    EXPECT_EQ(f.consumed, resp.size());
  }
}

TEST(ResponseReaderTest, InterimResponseIsSkipped) {
  ResponseReader r(1024);
  Fed f = FeedAll(
      r, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 413 Too Large\r\nContent-Length: 2\r\n\r\nno");
  EXPECT_EQ(f.state, State::kDone);
  EXPECT_EQ(r.status(), 413);
}

TEST(ResponseReaderTest, BodyWithoutLengthEndsAtClose) {
  ResponseReader r(1024);
  EXPECT_EQ(FeedAll(r, "HTTP/1.1 200 OK\r\n\r\nsome bytes").state, State::kNeedMore);
  EXPECT_EQ(r.Eof(), State::kDone);
  EXPECT_FALSE(r.keep_alive());
  r.Reset();
  EXPECT_EQ(FeedAll(r, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc").state, State::kNeedMore);
  EXPECT_EQ(r.Eof(), State::kError) << "a truncated body is an error";
  r.Reset();
  EXPECT_FALSE(r.started());
  EXPECT_EQ(r.Eof(), State::kError);
}

TEST(ResponseReaderTest, MalformedInputIsAnErrorWithAMessage) {
  const char* bad[] = {
      "HTTP/2 200 OK\r\n\r\n",
      "HTTP/1.1 2x0 OK\r\n\r\n",
      "ICY 200 OK\r\n\r\n",
      "HTTP/1.1 200OK\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n",  // over the 1 KiB limit below
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n",  // 2 KiB > limit
  };
  for (const char* b : bad) {
    ResponseReader r(1024);
    Fed f = FeedAll(r, b);
    EXPECT_EQ(f.state, State::kError) << b;
    EXPECT_FALSE(r.error().empty()) << b;
  }
}

TEST(ResponseReaderTest, HeaderBlockIsBounded) {
  ResponseReader r(1024);
  std::string huge = "HTTP/1.1 200 OK\r\nX: " + std::string(ResponseReader::kMaxHeaderBytes, 'a');
  Fed f = FeedAll(r, huge, 4096);
  EXPECT_EQ(f.state, State::kError);
  EXPECT_NE(r.error().find("header block"), std::string::npos) << r.error();
}

// Random bytes and random cuts of valid responses: never a crash, never more consumed than given.
TEST(ResponseReaderTest, RandomInputNeverOverrunsOrLoops) {
  std::mt19937 rng(7);
  const std::string seeds[] = {
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"};
  for (int i = 0; i < 2000; ++i) {
    std::string s = seeds[i % 2];
    for (int k = 0; k < 3; ++k) {
      s[rng() % s.size()] = static_cast<char>(rng() % 256);
    }
    ResponseReader r(1 << 16);
    Fed f = FeedAll(r, s, 1 + rng() % 8);
    EXPECT_LE(f.consumed, s.size());
    if (f.state == State::kError) {
      EXPECT_FALSE(r.error().empty());
    }
  }
}

}  // namespace
}  // namespace tg::bench
