#pragma once
// envlock/virtual_package.hpp — a conda virtual package (`__cuda=12.4=0`) as a value: what
// manifests declare, lockfiles record, the solver offers as installed solvables and install checks
// against the host. Detecting the host's own is envlock/virtual_packages.hpp (the host module).
//
// Spelling: NAME=VERSION[=BUILD], as conda's CONDA_OVERRIDE_* records, pixi's
// system-requirements and conda's virtual package records (`__cuda=12.4=0`); conda's
// conda/plugins/virtual_packages/*, rattler_virtual_packages.

#include <string>
#include <string_view>

#include "envlock/result.hpp"

namespace envlock {

/// One virtual package: name, version and build, each as text.
struct VirtualPackage {
  std::string name;     ///< e.g. "__cuda"
  std::string version;  ///< e.g. "12.4"
  std::string build;    ///< e.g. "0", or the microarchitecture for __archspec

  /// "name=version=build" — the spelling used in manifests and lockfiles.
  [[nodiscard]] std::string to_string() const;
  /// Parses "__cuda=12.4", "__cuda=12.4=0" or "__archspec=1=x86_64_v3"; build defaults to "0".
  static Result<VirtualPackage> parse(std::string_view text);
  friend bool operator==(const VirtualPackage&, const VirtualPackage&) = default;
};

}  // namespace envlock
