#include "server/http.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace tg::server {
namespace {

// One request over a fresh connection; returns everything the server sent until it closed.
std::string RoundTrip(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string got;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buf[65536];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) got.append(buf, n);
  }
  ::close(fd);
  return got;
}

// The drain's wait: a request with the handler keeps WaitForResponses from returning true; the
// answer, written in full (a body larger than a socket buffer), releases it.
TEST(HttpServerTest, WaitForResponsesHoldsUntilTheLastAnswerIsWritten) {
  std::mutex mu;
  std::optional<Responder> held;
  HttpServer http(
      Limits{},
      [&](HttpRequest, Responder respond) {
        std::lock_guard<std::mutex> l(mu);
        held = std::move(respond);
      },
      nullptr);
  auto port = http.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status().message();
  http.Start(1);
  EXPECT_TRUE(http.WaitForResponses(std::chrono::milliseconds(0))) << "nothing asked yet";

  std::string reply;
  std::thread client(
      [&] { reply = RoundTrip(*port, "GET /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"); });
  bool with_handler = false;
  for (int i = 0; i < 2000 && !with_handler; ++i) {
    {
      std::lock_guard<std::mutex> l(mu);
      with_handler = held.has_value();
    }
    if (!with_handler) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(with_handler);
  EXPECT_FALSE(http.WaitForResponses(std::chrono::milliseconds(20))) << "a request is unanswered";

  HttpResponse r;
  r.status = 200;
  r.content_type = "application/octet-stream";
  r.body.assign(8 << 20, 'x');  // 8 MiB: written over many sends, partly by the I/O thread
  std::thread answer([&] { (*held)(std::move(r)); });
  EXPECT_TRUE(http.WaitForResponses(std::chrono::seconds(60)));
  answer.join();
  client.join();
  held.reset();  // the Responder keeps its connection alive: released before the server goes
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply.substr(0, 80);
  EXPECT_GE(reply.size(), std::size_t{8} << 20);
  http.Stop();
}

// Stop right after StopAccepting, with the accept loop re-armed on another I/O thread's context
// (after one connection): the server goes without touching a context already destroyed (ASan).
TEST(HttpServerTest, StopsAndGoesWithAnAcceptStillPending) {
  for (int round = 0; round < 3; ++round) {
    HttpServer http(
        Limits{}, [](HttpRequest, Responder respond) { respond(HttpResponse()); }, nullptr);
    auto port = http.Listen("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.status().message();
    http.Start(2);
    const std::string reply =
        RoundTrip(*port, "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
    http.StopAccepting();
    http.Stop();
  }
}

}  // namespace
}  // namespace tg::server
