#pragma once
// Small file helpers the test suites share: read a whole file, write one (its folders made), and
// quote a path for the shell command lines the CLI tests run. Header-only.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace envlock::testing {

/// The whole file as bytes; empty when it cannot be read.
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Writes `data` to `p`, making the folders above it.
inline void spit(const std::filesystem::path& p, const std::string& data) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << data;
}

/// `p` in single quotes for a shell command line (test paths hold no single quote).
inline std::string q(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

}  // namespace envlock::testing
