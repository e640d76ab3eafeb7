#pragma once
// Private helper of envlock_core: conda's glob, where `*` matches any run of characters and
// every other character matches itself (conda: re.escape(value).replace("\\*", ".*"), anchored).
#include <string_view>

namespace envlock::detail {

/// True when `text` matches `pattern` in full. Linear-time wildcard matching with backtracking
/// to the last `*` only (no recursion, no regex).
inline bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace envlock::detail
