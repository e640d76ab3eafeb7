#pragma once
// tests/snapshot/fake_host.hpp — host trees assembled in a temporary folder for capture tests:
// real files from this machine (libc.so.6, libstdc++.so.6) and from ../shared/corpus (conda-meta
// records, pip dist-info, a dpkg status file, nvidia-smi XML), laid out as on a Debian host.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "envlock/hash.hpp"
#include "envlock/snapshot.hpp"
#include "support/corpus.hpp"

namespace envlock::testing {

namespace fs = std::filesystem;

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The corpus folder of the real osx-arm64 python 3.13t prefix (conda's env_metadata tests).
inline const char* kPy313Prefix = "conda__conda/tests__data__env_metadata__envpy313tosx_whl__";

class FakeHost {
 public:
  FakeHost() {
    static int n = 0;
    root_ = fs::temp_directory_path() / ("envlock-fakehost-" + std::to_string(getpid()) + "-" + std::to_string(n++));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~FakeHost() { fs::remove_all(root_); }
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  [[nodiscard]] const fs::path& root() const { return root_; }
  [[nodiscard]] fs::path local(const fs::path& host_path) const { return root_ / host_path.relative_path(); }

  void write(const fs::path& host_path, const std::string& content) const {
    fs::create_directories(local(host_path).parent_path());
    std::ofstream(local(host_path), std::ios::binary) << content;
  }
  void copy(const fs::path& host_path, const fs::path& from) const {
    fs::create_directories(local(host_path).parent_path());
    fs::copy_file(from, local(host_path), fs::copy_options::overwrite_existing);
  }

  /// A Debian-like base: /lib -> usr/lib (relative link), this machine's libc.so.6 and
  /// libstdc++ (soname link to the versioned file, as Debian ships it), os-release, /proc files.
  void base_system() const {
    fs::create_directories(root_ / "usr/lib/x86_64-linux-gnu");
    fs::create_directory_symlink("usr/lib", root_ / "lib");
    copy("/usr/lib/x86_64-linux-gnu/libc.so.6", fs::canonical("/lib/x86_64-linux-gnu/libc.so.6"));
    const fs::path cxx = fs::canonical("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
    copy("/usr/lib/x86_64-linux-gnu" / cxx.filename(), cxx);
    // An absolute link target: must resolve inside the tree, not on this machine.
    fs::create_symlink("/usr/lib/x86_64-linux-gnu" / cxx.filename(), local("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"));
    write("/etc/os-release",
          "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\n"
          "VERSION=\"12 (bookworm)\"\nVERSION_CODENAME=bookworm\nID=debian\n");
    write("/proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
    write("/proc/cpuinfo",
          "processor\t: 0\nflags\t\t: fpu sse sse2 pni ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt xsave avx f16c "
          "lahf_lm abm bmi1 avx2 bmi2\n\n");
    write("/proc/self/smaps", "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/dbus-daemon\nKernelPageSize:        4 kB\n");
  }

  /// NVIDIA facts: the kernel module's version file and a saved `nvidia-smi -q -x` (returned
  /// path, for CaptureOptions::command_outputs).
  fs::path nvidia(const std::string& proc_line, const std::string& smi_corpus_file) const {
    write("/proc/driver/nvidia/version", proc_line + "\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
    return corpus_dir() / "gpu" / smi_corpus_file;
  }

  /// The GPUs of complete_gpu_host(): a GeForce GT 1030 under driver 470.74, an A100 under 535.54.03.
  enum class Gpu { Gt1030Driver470, A100Driver535 };

  /// A Debian host whose capture is complete: base_system(), trivy's dpkg status from the corpus,
  /// and an NVIDIA driver (the kernel module's version file and a saved `nvidia-smi -q -x` of
  /// `gpu`). Returns the saved output's path (--nvidia-smi-xml, CaptureOptions::command_outputs).
  fs::path complete_gpu_host(Gpu gpu) const {
    base_system();
    dpkg_status("pkg__fanal__analyzer__pkg__dpkg__testdata__dpkg");
    if (gpu == Gpu::Gt1030Driver470)
      return nvidia("NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.74  Mon Sep 13 23:09:15 UTC 2021",
                    "influxdata__telegraf/plugins__inputs__nvidia_smi__testdata__gt-1030.xml");
    return nvidia("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023",
                  "influxdata__telegraf/plugins__inputs__nvidia_smi__testdata__a100-sxm4-v12.xml");
  }

  void dpkg_status(const std::string& corpus_file) const {
    copy("/var/lib/dpkg/status", corpus_dir() / "hostinfo/aquasecurity__trivy" / corpus_file);
  }

  /// The real python 3.13t prefix from the corpus at `host_prefix`: its conda-meta records and
  /// history, and the dist-info files that survive in the corpus (imagesize installed by pip,
  /// pip's own dist-info as the conda package `pip` installed it).
  void corpus_prefix(const fs::path& host_prefix) const {
    const fs::path dir = corpus_dir() / "prefix";
    const std::string tag = std::string(kPy313Prefix);
    for (const auto& entry : fs::directory_iterator(dir / "conda__conda")) {
      const std::string n = entry.path().filename().string();
      if (!n.starts_with(tag.substr(tag.find('/') + 1))) continue;
      std::string rel = n.substr(tag.size() - tag.find('/') - 1);
      for (std::size_t at; (at = rel.find("__")) != std::string::npos;) rel.replace(at, 2, "/");
      copy(host_prefix / rel, entry.path());
    }
    // RECORD lists INSTALLER with the sha256 of "pip\n": pip installed imagesize.
    write(host_prefix / "lib/python3.13t/site-packages/imagesize-1.4.1.dist-info/INSTALLER", "pip\n");
  }

 private:
  fs::path root_;
};

/// A captured conda record for compatibility, check and diff tests: `name` `version`, build
/// `build`, subdir linux-64, with `depends` and `constrains`.
inline CapturedPackage captured_package(const std::string& name, const std::string& version, std::vector<std::string> depends,
                                        std::vector<std::string> constrains = {}, const std::string& build = "h0_0") {
  CapturedPackage p;
  p.record.name = name;
  p.record.version = *Version::parse(version);
  p.record.build = build;
  p.record.subdir = "linux-64";
  p.record.depends = std::move(depends);
  p.record.constrains = std::move(constrains);
  return p;
}

/// A RECORD row's hash encoding (PEP 376/627): urlsafe base64 of the raw sha256 digest, no padding.
inline std::string b64_sha256(const std::string& bytes) {
  // RECORD's encoding: urlsafe base64 of the raw digest, no padding.
  Hasher h(HashAlgorithm::Sha256);
  h.update(bytes);
  const std::string hex = h.hex_digest();
  std::string raw;
  for (std::size_t i = 0; i < hex.size(); i += 2) raw += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < raw.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(raw[i]) << 16) | (static_cast<unsigned char>(raw[i + 1]) << 8) |
                       static_cast<unsigned char>(raw[i + 2]);
    out += tbl[v >> 18];
    out += tbl[(v >> 12) & 63];
    out += tbl[(v >> 6) & 63];
    out += tbl[v & 63];
  }
  const unsigned v = (static_cast<unsigned char>(raw[i]) << 16) | (static_cast<unsigned char>(raw[i + 1]) << 8);
  out += tbl[v >> 18];
  out += tbl[(v >> 12) & 63];
  out += tbl[(v >> 6) & 63];
  return out;  // 32 bytes -> 43 characters
}

/// Installs a pip distribution `name` `version` into site-packages folder `site` as pip does:
/// each (RECORD path, bytes) of `files` written at site/path (`../../../bin/x` climbs out of it;
/// a file already there is replaced, never written through a hard link to the package cache),
/// then the dist-info with INSTALLER "pip", METADATA and a RECORD listing every file with its
/// sha256 and size (RECORD itself without).
inline void pip_install(const fs::path& site, const std::string& name, const std::string& version,
                        const std::vector<std::pair<std::string, std::string>>& files) {
  const std::string info = name + "-" + version + ".dist-info";
  std::vector<std::pair<std::string, std::string>> all = files;
  all.emplace_back(info + "/INSTALLER", "pip\n");
  all.emplace_back(info + "/METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n");
  fs::create_directories(site / info);
  std::string record;
  for (const auto& [path, bytes] : all) {
    const fs::path at = (site / path).lexically_normal();
    fs::create_directories(at.parent_path());
    fs::remove(at);
    std::ofstream(at, std::ios::binary) << bytes;
    record += path + ",sha256=" + b64_sha256(bytes) + "," + std::to_string(bytes.size()) + "\n";
  }
  std::ofstream(site / info / "RECORD", std::ios::binary) << record << info << "/RECORD,,\n";
}

}  // namespace envlock::testing
