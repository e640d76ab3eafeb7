#pragma once
// envlock/pypi_resolve.hpp — resolving PyPI requirements to wheels for one target python
// (issue 20 point 2; docs/pypi.md, "Locking PyPI packages"; the design and its cost:
// docs/design.md, "The PyPI resolver").
//
// A dedicated backtracking resolver in the manner of pip's (resolvelib): requirements become
// criteria per identifier (a project, or `project[extra]`, which depends on the project at the
// same version, as pip's ExtrasCandidate does); the unpinned identifier picked next is the one
// pip 23's `get_preference` would pick among those this resolver knows (pinned `==` first, then
// the depth from the manifest, the order requested, unconstrained last, the name); its
// candidates are tried newest first — PEP 440 order, pre-releases as packaging's
// SpecifierSet.filter admits them, yanked files only when every file is yanked (PEP 592), one
// wheel per version: the compatible one whose tag comes first in the target's tag list (pip's
// `_sort_key`), files whose Requires-Python excludes the target skipped — and a candidate whose
// dependencies contradict a pin is skipped; a dead end backtracks to the last choice.
// Environment markers are evaluated for the target (PyPiTarget::markers), never for the
// machine running the lock. Only wheels are installed: a project with only sdists is an error.
// A project the conda solution already installs (CondaProvided) has that version as its one
// candidate and is not installed again.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envlock/package_record.hpp"
#include "envlock/pypi_index.hpp"
#include "envlock/pypi_version.hpp"
#include "envlock/result.hpp"
#include "envlock/virtual_package.hpp"

namespace envlock {

/// The python a lock resolves for: the conda solution's python on one platform.
struct PypiTarget {
  std::string python_version;          ///< the full version, "3.11.2"
  std::string implementation = "cp";   ///< "cp" (CPython) or "pp" (PyPy)
  std::vector<std::string> abis;       ///< "cp311" (pip's --abi); abi3 and none are added by the tag list
  std::vector<std::string> platforms;  ///< platform tags, best first (pip's --platform, in this order)
  std::vector<std::string> tags;       ///< every supported `python-abi-platform` tag, best first
  MarkerEnvironment markers;           ///< PEP 508 marker values of the target

  /// The target of a conda python record (`version`, `build`) on conda `platform` (a subdir)
  /// with the lock's virtual packages (`__glibc` for the manylinux tags, `__osx` for macOS).
  /// Tags and their order are packaging.tags' (cpython_tags, then compatible_tags), for the
  /// platforms packaging's `_manylinux.platform_tags` / `mac_platforms` give that glibc / macOS.
  /// Errors: ErrorKind::Usage for a platform without wheels (noarch) or a version that is not X.Y[.Z].
  static Result<PypiTarget> for_conda(const std::string& python_version, const std::string& python_build,
                                      const std::string& platform, const std::vector<VirtualPackage>& virtual_packages);
  /// The index of `tag` in `tags` (lower is better); nullopt when not supported. A compressed
  /// tag set (`py2.py3-none-any`) takes its best member.
  [[nodiscard]] std::optional<std::size_t> tag_priority(const std::string& python_tag, const std::string& abi_tag,
                                                        const std::string& platform_tag) const;
};

/// A requirement of the manifest.
struct PypiRequest {
  Pep508Requirement requirement;
  std::string text;    ///< as written
  std::string origin;  ///< where it is written (`envlock.yaml:12:5`), for messages
};

/// A project that the conda solution already installs, as its dist-info names it.
struct CondaProvided {
  std::string name;        ///< PEP 503 normalised PyPI name
  std::string version;     ///< the conda record's version
  std::string conda_name;  ///< the conda record's name (for messages)
};

/// The PyPI project a conda record installs, offline: conda-forge names most Python packages as
/// PyPI does (`numpy`, `requests`), with known exceptions in a table (`pytorch` -> `torch`,
/// `py-opencv` -> `opencv-python`, `matplotlib-base` -> `matplotlib`, `msgpack-python` -> `msgpack`,
/// `python-xxhash` -> `xxhash`, ...). Only a record that is a Python package counts: `noarch:
/// python`, or one that depends on `python`; python itself and the records that are no Python
/// package give nullopt. No web service (pixi's parselmouth mapping is one) is asked.
std::optional<CondaProvided> conda_pypi_provides(const PackageRecord& record);

struct PypiResolveInput {
  std::vector<PypiRequest> requests;
  PypiTarget target;
  std::vector<CondaProvided> conda;
  /// name -> version of a previous lock, tried first when it still fits (`lock` keeps pins).
  std::map<std::string, std::string> preferred;
  /// A cap on candidates tried before the resolver gives up (a pathological backtrack).
  std::size_t max_steps = 20000;
};

/// One pinned project.
struct PypiPin {
  std::string name;          ///< PEP 503 normalised
  std::string version;       ///< as the wheel's file name spells it
  PypiFile file;             ///< the wheel
  CoreMetadata metadata;     ///< its METADATA
  std::vector<std::string> required_by;  ///< normalised names (`name[extra]` for an extra's), "(manifest)" for a request; sorted
};

struct PypiResolution {
  std::vector<PypiPin> pins;                ///< sorted by name
  std::vector<CondaProvided> from_conda;    ///< requirements the conda packages met, sorted by name
};

/// Resolves `input` against `index`. Errors: ErrorKind::Unsatisfiable naming the project, the
/// requirements on it with who asked, and why no candidate fits (no version matches, only sdists
/// — "envlock installs wheels only" —, no wheel for the target's tags, a conda package's version
/// does not fit); ErrorKind::Network / Parse / Integrity from the index.
Result<PypiResolution> resolve_pypi(const PypiResolveInput& input, PypiIndex& index);

}  // namespace envlock
