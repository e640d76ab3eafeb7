#pragma once
// envlock/pip_package.hpp — a pip package as the lockfile model carries it: what manifests
// (environment.yml `pip:`), envlock.lock, conda-lock/pixi.lock readers, prefixes (dist-info) and
// `envlock diff` all speak. Names are PEP 503-normalisable project names (envlock/pypi_name.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace envlock {

/// A pip requirement carried through unresolved (environment.yml `pip:` lists, pixi/conda-lock
/// pypi entries): name, version when known, url and hash when the source format gives them.
struct PipPackage {
  std::string name;
  std::string version;
  std::string url;
  std::string sha256;
  std::string requirement;  ///< the original requirement text when unresolved
  /// Core metadata (PEP 566) when the source records it (envlock.lock and pixi.lock
  /// `requires_dist` / `requires_python`, a prefix's METADATA `Requires-Dist` /
  /// `Requires-Python`). `envlock diff` compares them only when both sides record them.
  std::vector<std::string> requires_dist;
  std::string requires_python;
  /// An editable install (pixi.lock `editable: true`, PEP 610 `dir_info.editable`, `*.egg-link`,
  /// `__editable__*.pth`): a working tree, never a pin.
  bool editable = false;
  /// A wheel `envlock lock` pinned (docs/lockfile.md, "Keys of a pip entry"; uv.lock's `wheels`
  /// and `source.registry`, pixi.lock's url and sha256 record the same): the file name the index
  /// lists (the URL's last segment, percent-decoded; empty when the source records none), its
  /// size in bytes (PEP 700 `size`, a local file's size), the index or find-links location that
  /// listed it (credential-free; a folder as a `file://` URL once read, like a local channel),
  /// and what required it: PEP 503 names (`name[extra]` for an extra's requirement) and
  /// `(manifest)` for a requirement of the manifest, sorted.
  std::string file_name;
  std::optional<std::uint64_t> size;
  std::string index;
  std::vector<std::string> required_by;
  friend bool operator==(const PipPackage&, const PipPackage&) = default;
};

}  // namespace envlock
