#pragma once
// tests/channel/corpus_channel.hpp — builds channel directories for tests from the shared corpus
// (../shared/corpus/repodata, whose file names flatten paths with "__", see its SOURCES.md), and
// small helpers shared by the channel, solver and lock suites. Header-only.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/files.hpp"

namespace envlock::testing {

/// ../shared/corpus/repodata, or empty when the shared corpus is absent.
inline std::filesystem::path corpus_repodata_dir() {
  std::filesystem::path p = std::filesystem::path(ENVLOCK_SHARED_DIR) / "corpus" / "repodata";
  std::error_code ec;
  return std::filesystem::is_directory(p, ec) ? p : std::filesystem::path{};
}

#define ENVLOCK_REQUIRE_CORPUS()                                                               \
  do {                                                                                         \
    if (::envlock::testing::corpus_repodata_dir().empty())                                     \
      GTEST_SKIP() << "the shared corpus is absent (looked in " << ENVLOCK_SHARED_DIR << "/corpus; set " \
                      "ENVLOCK_SHARED_DIR); this test " \
                      "locks real repodata from it";                                           \
  } while (0)

/// A fresh, empty temporary folder removed when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("envlock-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Copies corpus repodata files into `dest/<subdir>/repodata.json`: `files` pairs a subdir with a
/// path relative to the corpus repodata folder. Returns `dest`.
inline std::filesystem::path make_channel(const std::filesystem::path& dest,
                                          const std::vector<std::pair<std::string, std::string>>& files) {
  for (const auto& [subdir, rel] : files) {
    std::filesystem::create_directories(dest / subdir);
    std::filesystem::copy_file(corpus_repodata_dir() / rel, dest / subdir / "repodata.json",
                               std::filesystem::copy_options::overwrite_existing);
  }
  return dest;
}

/// The conda-forge subset (jaimergp/conda-subchannel-demo) for the given platforms + noarch.
inline std::filesystem::path make_conda_forge_subset(const std::filesystem::path& dest,
                                                     const std::vector<std::string>& platforms) {
  std::vector<std::pair<std::string, std::string>> files{
      {"noarch", "jaimergp__conda-subchannel-demo/noarch__repodata.json"}};
  for (const auto& p : platforms) files.emplace_back(p, "jaimergp__conda-subchannel-demo/" + p + "__repodata.json");
  return make_channel(dest, files);
}

}  // namespace envlock::testing
