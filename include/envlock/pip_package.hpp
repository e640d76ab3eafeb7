#pragma once
// envlock/pip_package.hpp — a pip package as the lockfile model carries it: what manifests
// (environment.yml `pip:`), envlock.lock, conda-lock/pixi.lock readers, prefixes (dist-info) and
// `envlock diff` all speak. Names are PEP 503-normalisable project names (envlock/pypi_name.hpp).

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
  /// Core metadata (PEP 566) when the source records it (pixi.lock `requires_dist` /
  /// `requires_python`, a prefix's METADATA `Requires-Dist` / `Requires-Python`); envlock.lock does
  /// not. `envlock diff` compares them only when both sides record them.
  std::vector<std::string> requires_dist;
  std::string requires_python;
  /// An editable install (pixi.lock `editable: true`, PEP 610 `dir_info.editable`, `*.egg-link`,
  /// `__editable__*.pth`): a working tree, never a pin.
  bool editable = false;
  friend bool operator==(const PipPackage&, const PipPackage&) = default;
};

}  // namespace envlock
