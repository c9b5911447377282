// The bench stub server as a process, for the A/B orchestration test:
//   bench_stub_server --port N [--delay-ms MS]
// Serves on 127.0.0.1:N until SIGTERM or SIGINT, then exits 0.
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/bench_stub_server.h"

int main(int argc, char** argv) {
  int port = 0, delay_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--port") == 0) port = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--delay-ms") == 0) delay_ms = std::atoi(argv[i + 1]);
  }
  if (port <= 0) return 2;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts, so all inherit it
  tg::testing::StubServer server(delay_ms, port);
  int sig = 0;
  sigwait(&set, &sig);
  server.Stop();
  return 0;
}
