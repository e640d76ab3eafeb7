#pragma once
// The PyPI step of lock_manifest (src/lock/pypi.cpp).
#include <set>
#include <string>
#include <vector>

#include "envlock/lock.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/manifest.hpp"
#include "envlock/repodata.hpp"

namespace envlock {

/// Resolves `env`'s pypi_dependencies for the python of `solution` on `platform` and appends the
/// pins to `out.pip` (sorted by name); nothing when it has none. `previous` (the last lock of this
/// environment x platform) gives the pins kept unless named in `update` (PEP 503 normalised).
/// Errors: Usage (no python in the solution), Parse (a requirement that is not PEP 508, at its line), those of resolve_pypi.
Status lock_pypi(const Manifest& manifest, const ManifestEnvironment& env, const std::string& platform,
                 const std::vector<VirtualPackage>& vps, const std::vector<const RepoDataRecord*>& solution,
                 const LockedPlatform* previous, const std::set<std::string>& update, const RepodataOptions& repodata,
                 LockedPlatform& out);

/// Whether `name` (as `--update` spells it) is a PyPI name, PEP 503 normalised: a pip pin of
/// `previous` or a `pypi-dependencies` requirement of `manifest`.
bool pypi_name_known(const Manifest& manifest, const Lockfile* previous, const std::string& name);

/// The `file://` URL a find-links folder is recorded by (a pin's `index`, the folder of its
/// wheel's URL): file_url_from_path() of the absolute folder, without a trailing '/'; any other
/// location (an http(s) or file URL) as it is.
std::string find_links_location_url(const std::string& location);

/// The find-links folders of `manifest` written as relative paths (`./wheels`, `wheels`), as
/// find_links_location_url() gives them: they travel with the checkout as local channels do,
/// so lock_manifest lists them in Lockfile::relative_channels and the lockfile writes them and
/// their wheels' URLs relative to its own folder (docs/lockfile.md, "Local channels").
std::vector<std::string> relative_find_links_urls(const Manifest& manifest);

/// lock --check for PyPI requirements (check_lockfile's last step), per requirement and with no
/// network, as the conda specs are checked: for each environment x platform that is locked, with
/// markers evaluated for the locked python (PypiTarget::for_conda):
///   * each `pypi-dependencies` requirement that applies is met by a pip pin of its name, or by
///     the conda record that provides it (conda_pypi_provides), of a version its specifier
///     contains — else spec-not-satisfied, naming the requirement, where it is written and the pin;
///   * each `requires_dist` entry of a pin that applies (with the extras its dependents ask for)
///     is met likewise — else dependency-missing / dependency-not-satisfied;
///   * a pin the lock made for a manifest requirement (`required_by` holds `(manifest)`) whose
///     name the manifest no longer requires — manifest-hash, naming it.
/// The reasons are appended to `out`. The package of a reason is `pypi:<name>`.
void check_pypi_requirements(const Manifest& manifest, const Lockfile& lockfile, std::vector<StaleReason>& out);

}  // namespace envlock
