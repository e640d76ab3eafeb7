#pragma once
// The PyPI step of lock_manifest (src/lock/pypi.cpp).
#include <set>
#include <string>
#include <vector>

#include "envlock/lockfile.hpp"
#include "envlock/manifest.hpp"
#include "envlock/repodata.hpp"

namespace envlock {

/// Resolves `env`'s pypi_dependencies for the python of `solution` on `platform` and appends the
/// pins to `out.pip` (sorted by name); nothing when it has none. `previous` (the last lock of this
/// environment x platform) gives the pins kept unless named in `update`. Errors: Usage (no python
/// in the solution), Parse (a requirement that is not PEP 508, at its line), those of resolve_pypi.
Status lock_pypi(const Manifest& manifest, const ManifestEnvironment& env, const std::string& platform,
                 const std::vector<VirtualPackage>& vps, const std::vector<const RepoDataRecord*>& solution,
                 const LockedPlatform* previous, const std::set<std::string>& update, const RepodataOptions& repodata,
                 LockedPlatform& out);

}  // namespace envlock
