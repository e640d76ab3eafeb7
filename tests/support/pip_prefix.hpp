#pragma once
// tests/support/pip_prefix.hpp — a small conda prefix with a pip side, built in a temporary
// folder for the readers and diff tests: conda-meta records for python and six (six's own
// dist-info, INSTALLER "conda", listed by its record) and pip dist-info folders written on demand.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace envlock::testing {

class PipPrefix {
 public:
  static constexpr const char* kSite = "lib/python3.11/site-packages";

  PipPrefix() {
    static int n = 0;
    root_ = std::filesystem::temp_directory_path() /
            ("envlock-pip-prefix-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    std::filesystem::remove_all(root_);
    record("python", "3.11.9", "h2b9c1f2_0_cpython", "linux-64", "\"bin/python3.11\"");
    record("six", "1.16.0", "pyhd8ed1ab_1", "noarch",
           "\"" + std::string(kSite) + "/six.py\", \"" + kSite + "/six-1.16.0.dist-info/METADATA\", \"" + kSite +
               "/six-1.16.0.dist-info/INSTALLER\"");
    dist_info("six", "1.16.0", "conda");
  }
  ~PipPrefix() { std::filesystem::remove_all(root_); }
  PipPrefix(const PipPrefix&) = delete;
  PipPrefix& operator=(const PipPrefix&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return root_; }

  /// `<site>/<name>-<version>.dist-info` with METADATA (Name as given), INSTALLER and a RECORD.
  /// Returns the folder.
  std::filesystem::path dist_info(const std::string& name, const std::string& version, const std::string& installer) const {
    const auto dir = root_ / kSite / (name + "-" + version + ".dist-info");
    std::filesystem::create_directories(dir);
    write(dir / "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n\nbody\n");
    write(dir / "INSTALLER", installer + "\n");
    write(dir / "RECORD", name + "-" + version + ".dist-info/METADATA,,\n");
    return dir;
  }

  void write(const std::filesystem::path& path, const std::string& text) const {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }

 private:
  void record(const std::string& name, const std::string& version, const std::string& build, const std::string& subdir,
              const std::string& files) const {
    const std::string dist = name + "-" + version + "-" + build;
    write(root_ / "conda-meta" / (dist + ".json"),
          "{\"name\": \"" + name + "\", \"version\": \"" + version + "\", \"build\": \"" + build +
              "\", \"build_number\": 0, \"subdir\": \"" + subdir +
              "\", \"channel\": \"https://conda.anaconda.org/conda-forge\", \"url\": "
              "\"https://conda.anaconda.org/conda-forge/" + subdir + "/" + dist + ".conda\", \"files\": [" + files +
              "]}\n");
  }

  std::filesystem::path root_;
};

}  // namespace envlock::testing
