#pragma once
// The shared corpus (../shared/corpus, see shared_dir.hpp) for the suites whose tests read real
// files from it, and the skip when it is absent. Header-only.
#include <gtest/gtest.h>

#include <filesystem>

namespace envlock::testing {

inline std::filesystem::path corpus_dir() { return std::filesystem::path(ENVLOCK_SHARED_DIR) / "corpus"; }
inline bool have_corpus() { return std::filesystem::is_directory(corpus_dir() / "prefix"); }

}  // namespace envlock::testing

#define SKIP_WITHOUT_CORPUS()                                                                 \
  if (!::envlock::testing::have_corpus())                                                     \
  GTEST_SKIP() << "the shared corpus is absent (looked in " << ::envlock::testing::corpus_dir().string() \
               << "; set ENVLOCK_SHARED_DIR): corpus-based snapshot tests need it"
