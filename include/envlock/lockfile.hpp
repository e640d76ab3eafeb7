#pragma once
// envlock/lockfile.hpp — the lockfile model: environment x platform -> locked records.
//
// This is also the one in-memory model that every reader of the ecosystem's lockfiles produces
// (conda-lock.yml, pixi.lock, @EXPLICIT, conda-meta prefixes, snapshots), so `diff`, `list`,
// `install` and `snapshot` speak one shape. The envlock.lock file format (YAML, version 1) is
// documented in docs/lockfile.md; write() is deterministic: fixed key order, environments,
// platforms and packages sorted, no clocks, host or user names, credential-free URLs.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envlock/package_record.hpp"
#include "envlock/result.hpp"
#include "envlock/virtual_packages.hpp"

namespace envlock {

/// A record pinned in a lockfile, with the layer (environment name) whose solve introduced it.
struct LockedPackage : RepoDataRecord {
  std::string layer;  ///< e.g. "base" for a pin inherited from the base layer
  friend bool operator==(const LockedPackage&, const LockedPackage&) = default;
};

/// A pip requirement carried through unresolved (environment.yml `pip:` lists, pixi/conda-lock
/// pypi entries): name, version when known, url and hash when the source format gives them.
struct PipPackage {
  std::string name;
  std::string version;
  std::string url;
  std::string sha256;
  std::string requirement;  ///< the original requirement text when unresolved
  friend bool operator==(const PipPackage&, const PipPackage&) = default;
};

struct LockedPlatform {
  std::string platform;                          ///< subdir, e.g. "linux-64"
  std::vector<std::string> channels;             ///< credential-free channel URLs, priority order
  std::vector<VirtualPackage> virtual_packages;  ///< assumed when solving for this platform
  std::vector<LockedPackage> packages;           ///< sorted by name
  std::vector<PipPackage> pip;                   ///< sorted by name
};

/// The manifest's `reference: {command, metric, tolerance}` and, once recorded, its value.
struct ReferenceRun {
  std::string command;
  std::string metric;       ///< a JSON key path (`json:loss` / `a.b`) or `regex:<re with one group>`
  double tolerance = 0.0;   ///< absolute tolerance
  std::optional<double> recorded_value;
  std::map<std::string, std::string> recorded_host;  ///< probe facts of the recording host
};

struct LockedEnvironment {
  std::string name;
  std::string base;                       ///< the base layer's environment name, or empty
  std::vector<std::string> requested;     ///< the manifest's specs, as written
  std::map<std::string, LockedPlatform> platforms;  ///< key: subdir
  std::optional<ReferenceRun> reference;
};

struct Lockfile {
  static constexpr int kFormatVersion = 1;
  int version = kFormatVersion;
  std::string manifest_hash;                          ///< "sha256:<hex>" of the manifest inputs
  std::map<std::string, LockedEnvironment> environments;

  /// Parses envlock.lock text; `source` names the file in errors (`file:line:col`). A newer
  /// `version` is refused naming both versions (ErrorKind::Parse).
  static Result<Lockfile> parse(const std::string& text, const std::string& source);
  static Result<Lockfile> read(const std::filesystem::path& path);

  /// The deterministic YAML text of this lockfile.
  [[nodiscard]] std::string to_yaml() const;
  /// Writes atomically (temporary file in the same directory, fsync, rename): an existing
  /// lockfile is never truncated or half-written.
  [[nodiscard]] Status write(const std::filesystem::path& path) const;
};

}  // namespace envlock
