// SIGINT as a request to stop early: while a SigintScope lives, Ctrl-C sets one process-wide flag
// instead of ending the process, and the long loops (a benchmark sweep, a generation's steps)
// poll that flag and finish with what they have. The one SIGINT mechanism of the commands; the
// server takes SIGINT/SIGTERM synchronously through a signalfd instead (server/server.h).
#pragma once

#include <atomic>

namespace tg::common {

// Installs the flag-setting SIGINT handler and clears the flag; the destructor restores the
// disposition that was there before. Scopes nest (the inner one restores the outer handler).
// Construct and destroy on the same thread; the handler itself only stores to a lock-free atomic,
// so it is async-signal-safe. Never fails (std::signal cannot fail for SIGINT).
class SigintScope {
 public:
  SigintScope();
  ~SigintScope();
  SigintScope(const SigintScope&) = delete;
  SigintScope& operator=(const SigintScope&) = delete;

  // The flag SIGINT sets: lives for the whole process, never null, safe to read from any thread.
  static const std::atomic<bool>* Flag();
  // Whether SIGINT arrived since the innermost live scope was created.
  static bool Interrupted() { return Flag()->load(); }

 private:
  void (*previous_)(int);
};

}  // namespace tg::common
