#pragma once
// pip_step.hpp — the pip step of install_locked_environment() (envlock/provision.hpp, module
// provision; before, src/cli/pip_install.hpp): the lockfile's pinned wheels (a pip entry with a
// `url` to a `.whl` and its `sha256`) fetched into the wheel cache before the conda transaction,
// installed with install_wheel() (envlock/wheel.hpp) after it. docs/pypi.md.
#include <filesystem>
#include <string>
#include <vector>

#include "envlock/pip_package.hpp"
#include "envlock/result.hpp"
#include "envlock/wheel.hpp"

namespace envlock {

/// A locked wheel, in the wheel cache.
struct FetchedWheel {
  PipPackage package;
  std::filesystem::path path;  ///< <cache_root()>/wheels/<sha256>/<file name>
};

/// The pip entries of a platform, split: wheels install_wheel() can install (a `url` whose last
/// path segment ends in `.whl`, a 64-hex `sha256`, not editable), and the rest (unresolved
/// requirements, VCS and editable sources, pins without a URL), which install names in a warning.
struct PipPlan {
  std::vector<PipPackage> wheels;
  std::vector<PipPackage> others;
};
PipPlan plan_pip(const std::vector<PipPackage>& pip);

/// Two versions of one distribution compared as PEP 440 does (envlock/pypi_version.hpp), as pip
/// and uv compare an installed METADATA `Version` with what is asked for: `1.0` and `1.0.0`, or
/// `2.0-rc1` and `2.0rc1`, are one version. A text that is no PEP 440 version is compared as written.
bool same_pep440_version(const std::string& a, const std::string& b);

/// Brings every wheel of `wheels` into the wheel cache: a cached file is used when its sha256 is
/// the locked one (hashed again on every reuse), else the URL (https://, http://, file://, an
/// absolute path, or a path relative to the lockfile's folder) is downloaded, checked against
/// the locked sha256 while streaming and renamed into place. Errors name the package, the URL
/// (credentials stripped) and the digests, and say that the prefix was not touched.
/// A wheel whose tags `target` does not support (wheel_tags_supported(), envlock/wheel.hpp) is
/// refused first, naming its tags and the target (pip: "is not a supported wheel on this platform").
Result<std::vector<FetchedWheel>> fetch_locked_wheels(const std::vector<PipPackage>& wheels,
                                                      const std::filesystem::path& lockfile_path, const WheelTarget& target);

/// The warnings check_records() gives conda packages from a local folder outside the lockfile's
/// folder, for the locked wheels (attack 23 F16): one per folder, naming its wheels' file names,
/// "N package(s) come from file:///srv/w, a local folder outside the lockfile's folder /p (check
/// that it is the one meant): a-1.0-py3-none-any.whl". A wheel's url is local when it is file://
/// or a path (relative: to the lockfile's folder); downloads are checked by their sha256 only.
std::vector<std::string> outside_wheel_warnings(const std::vector<PipPackage>& wheels, const std::filesystem::path& lockfile_path);

/// What install_fetched_wheels() did.
struct PipInstallReport {
  std::vector<std::string> installed;  ///< "name==version"
  std::vector<std::string> kept;       ///< already there: a dist-info of that name and version
  std::vector<std::string> replaced;   ///< "name==version" of another version a wheel replaced
  std::vector<std::string> warnings;   ///< what a replaced or removed version's RECORD listed and was left in place
  std::vector<std::string> removed;    ///< "name==version" the lockfile no longer holds, removed; sorted
};

/// Removes from `prefix` each distribution an earlier envlock install put there (INSTALLER
/// `envlock`) whose PEP 503 name no entry of `locked` (the platform's pip entries) names, as
/// `pip uninstall` does (uninstall_distribution(), envlock/wheel.hpp: its RECORD's files and their
/// bytecode); distributions pip, uv or conda installed are left alone. Then installs each fetched
/// wheel into `prefix` (which has a python: prefix_python_xy(); with no wheels and no python,
/// nothing is done). A
/// distribution of the same PEP 503 name and version already in site-packages is kept; another
/// version of it is replaced (WheelInstallOptions::replaces: its RECORD's files go, all or nothing,
/// but for what no pip package owns — conda-meta/, .envlock-*, a conda record's file —, left in
/// place and named in the report's warnings);
/// two other versions of it are an error.
/// A wheel from a direct reference (`name @ URL`) gets PEP 610 direct_url.json; a wheel is
/// REQUESTED unless its entry's required_by names dependents only (no `(manifest)`). Each wheel is all or nothing. The
/// wheels unpack in parallel (up to 8 threads), and each moves into the prefix alone
/// (WheelInstallOptions::commit_lock). One that fails is reported, the first in the lockfile's
/// order, after the others have finished. `envlock install` runs this in the installer's stage
/// (InstallOptions::finish_stage), so a failure leaves the prefix as it was; `target_prefix` is
/// then the path the prefix has when it runs (written into shebangs; empty: `prefix`).
Result<PipInstallReport> install_fetched_wheels(const std::filesystem::path& prefix, const std::vector<FetchedWheel>& wheels,
                                                const std::vector<PipPackage>& locked,
                                                const std::filesystem::path& target_prefix = {});

/// Whether install_fetched_wheels() would change `prefix` (an environment already there): a wheel
/// whose PEP 503 name and PEP 440 version no installed distribution has, or a distribution an
/// earlier envlock install put there that `locked` no longer names. Read only. An install that
/// changes only pip packages is then a change of the environment, so it keeps the tree it
/// replaces as a generation (InstallOptions::stage_differs; attack 23 F6). False for a prefix
/// that holds no environment yet.
bool pip_step_changes(const std::filesystem::path& prefix, const std::vector<FetchedWheel>& wheels,
                      const std::vector<PipPackage>& locked);

}  // namespace envlock
