#include "common/process_args.h"

#include <cstring>

#include "common/strings.h"

namespace tg::common {

std::string HideCommandLineFromProcfs(int argc, char** argv) {
  if (argc < 1 || argv == nullptr || argv[0] == nullptr) return "";
  // The kernel lays the arguments out back to back; only that contiguous run is ours to rewrite.
  char* begin = argv[0];
  char* end = argv[0] + std::strlen(argv[0]) + 1;
  for (int i = 1; i < argc && argv[i] == end; ++i) end = argv[i] + std::strlen(argv[i]) + 1;
  const std::size_t area = static_cast<std::size_t>(end - begin);

  std::string title(Basename(argv[0]));
  if (argc > 1 && std::strlen(argv[1]) <= 32) title += std::string(" ") + argv[1];
  if (title.size() > kMaxProcessTitle) title.resize(kMaxProcessTitle);
  if (area < 2) return "";
  if (title.size() > area - 2) title.resize(area - 2);

  // Layout: title, NUL, then newlines up to and including the last byte. A non-NUL last byte puts
  // the kernel in its setproctitle mode (the file ends at the first NUL: just the title); were a
  // kernel to return the whole area, the newlines still end every "line" a regex would scan.
  std::memcpy(begin, title.data(), title.size());
  begin[title.size()] = '\0';
  std::memset(begin + title.size() + 1, '\n', area - title.size() - 1);
  return title;
}

}  // namespace tg::common
