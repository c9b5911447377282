// The JSON lexer's read offset, shared by the JSON readers of common (json_limits.cc builds the
// document, yaml_check.cc counts a JSON text's nodes before yaml-cpp sees it). Not for use outside
// common/.
#pragma once

#include <cstddef>
#include <iterator>

namespace tg::common {

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

}  // namespace tg::common
