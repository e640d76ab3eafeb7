#pragma once
// envlock/snapshot_deploy.hpp — using a snapshot on a target: whether the target can run one of
// its environments (check_compatibility, as `envlock install` sees the target), bundles that hold
// everything a deploy needs offline, and redeploying an environment into a prefix. The snapshot
// itself and capture are envlock/snapshot.hpp.

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "envlock/host.hpp"
#include "envlock/host_facts.hpp"
#include "envlock/result.hpp"
#include "envlock/snapshot.hpp"

namespace envlock {

// ---------------------------------------------------------------------------------------------
// Compatibility of a target
// ---------------------------------------------------------------------------------------------

/// One requirement the target does not meet.
struct FailedRequirement {
  std::string requirement;  ///< "__glibc >=2.34", "platform linux-64", "libstdc++ GLIBCXX_3.4.30"
  std::string needed_by;    ///< package ("pytorch 2.3.1"), "pip:<name> <version>" or "snapshot"
  std::string target_has;   ///< what the target offers ("2.31", "none")
  friend bool operator==(const FailedRequirement&, const FailedRequirement&) = default;
  /// "pytorch 2.3.1 needs __cuda >=12.0; the target has 11.8"
  [[nodiscard]] std::string to_string() const;
};

/// `target` as `envlock install` sees it: its kernel, glibc, CPU level (`cpu_level`, the
/// __archspec build) and CUDA version (`nvidia->cuda_version`) replaced by the virtual packages
/// detect_virtual_packages() makes of them, so CONDA_OVERRIDE_LINUX/GLIBC/ARCHSPEC/CUDA apply as they
/// do for install (a removed package leaves the fact empty; an overridden CUDA without a driver
/// adds an `nvidia` section with no driver version). Errors: ErrorKind::Parse naming the
/// CONDA_OVERRIDE_* variable whose value is not valid.
Result<HostFacts> as_install_sees(const HostFacts& target);

/// Checks whether `target` (taken through as_install_sees()) can run environment `env` of
/// `snapshot`: platform; each record's `__glibc`, `__cuda`, `__linux`, `__archspec` dependencies
/// (and constrains on them); the CPU level a `_x86_64-microarch-level` record (version N: built for
/// x86_64_vN) or a depends on it needs; manylinux tags of pip wheels against glibc; the system
/// libstdc++ when the environment ships none (libstdcxx/libstdcxx-ng absent) against the capture
/// host's. Empty: compatible. An invalid CONDA_OVERRIDE_* value is one failed requirement naming it.
std::vector<FailedRequirement> check_compatibility(const Snapshot& snapshot, const CapturedEnvironment& env,
                                                   const HostFacts& target);

// ---------------------------------------------------------------------------------------------
// Redeploy
// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// Bundles: a snapshot with everything needed to deploy it offline
// ---------------------------------------------------------------------------------------------

/// Knobs for write_bundle().
struct BundleOptions {
  /// Local folders searched first for each package archive, by its file name (the envlock
  /// package cache, conda's pkgs_dirs). After them: `<prefix>/pkgs/` and, for a prefix in
  /// `<root>/envs/`, `<root>/pkgs/` (host paths, read through the seam).
  std::vector<std::filesystem::path> package_dirs;
  int zstd_level = 3;  ///< 1-19
};

/// What write_bundle() put into the bundle.
struct BundleReport {
  std::size_t archives = 0;            ///< package archives found and copied as they were
  std::vector<std::string> repacked;   ///< "<env>: <dist>" re-packed from installed files, sorted
  std::size_t pip_files = 0;           ///< pip-installed files
  Snapshot snapshot;                   ///< the snapshot as the bundle holds it (repacked_sha256 set)
};

/// Writes a bundle (a zstd-compressed tar, written atomically) of `snapshot` as captured through
/// `seam`:
///   snapshot.yaml                        the snapshot, with CapturedPackage::repacked_sha256 set;
///   pkgs/<file name>                     each record's archive (shadowed ones too), found in
///                                        BundleOptions::package_dirs or the prefix's pkgs/ folders
///                                        and checked against the record's sha256 (md5);
///   repacked/<env>/<dist>.conda          when no archive is found: a .conda re-packed from the
///                                        installed files conda-meta lists (pyc files and entry
///                                        point executables made at link time left out, and the
///                                        files a pip RECORD lists or, of a shadowed record, pip's
///                                        uninstall removed), each file checked against its
///                                        conda-meta sha256 first; relocated files carry the
///                                        captured prefix as their placeholder;
///   pip/<env>/<prefix-relative path>     every file a pip distribution's RECORD lists (no .pyc).
/// Errors name the package or file: an installed file that changed or is gone where a package
/// must be re-packed (ErrorKind::Integrity / Io; hint: put the archive into the package cache),
/// a prefix that cannot be read, a bundle that cannot be written (nothing is left at `bundle`).
Result<BundleReport> write_bundle(const Host& seam, const Snapshot& snapshot, const std::filesystem::path& bundle,
                                  const BundleOptions& options);

/// Unpacks `bundle` into the existing empty folder `into` (extract_tar_zst_into: no entry may
/// leave it) and reads its snapshot.yaml. Errors: ErrorKind::Integrity for a corrupt bundle or one
/// without snapshot.yaml; snapshot parse errors (where prefixed with the bundle path).
Result<Snapshot> open_bundle(const std::filesystem::path& bundle, const std::filesystem::path& into);

/// Knobs for deploy_snapshot().
struct DeployOptions {
  std::string environment;              ///< which captured environment; empty: the only one
  std::filesystem::path package_cache;  ///< empty: the default package cache (package_cache.hpp)
  /// Where the pip-installed files are read from: the captured prefix on this machine (a
  /// redeploy on the same host or a host tree with the prefix mounted). Empty: `prefix` of the
  /// snapshot as a path of this machine.
  std::filesystem::path pip_source;
  bool without_pip = false;             ///< install the conda part only; pip installs go to the checklist
  /// A pip install from a local source (editable, local folder, file: archive) whose source is not
  /// on this host is left out and named in the checklist, instead of refusing the deploy.
  bool skip_missing_sources = false;
  /// A bundle unpacked by open_bundle(): every archive comes from it (nothing is downloaded; a
  /// record whose archive it lacks is an error) and pip files from its pip/<env>/ folder.
  std::filesystem::path bundle_dir;
  /// The bundle file as the user named it: errors about a member say "<bundle_name>: pkgs/<file>"
  /// (never the temporary bundle_dir). Empty: bundle_dir's path is used.
  std::string bundle_name;
  /// Deploy an environment capture could not read every conda-meta record of (a problem under
  /// `<prefix>/conda-meta/`) even when its packages depend on packages it does not hold: they
  /// are named in the checklist instead of refused (ErrorKind::Incompatible).
  bool allow_partial = false;
  /// The snapshot (or bundle) file as the user named it, without its folders: the deployed tree's
  /// conda-meta/history records `envlock snapshot deploy <snapshot_name> -e <env>` and its
  /// conda-meta/envlock names it as the lockfile. Empty: "snapshot".
  std::string snapshot_name;
  /// The snapshot file's bytes (a bundle's snapshot.yaml): their sha256 is the deployed tree's
  /// lockfile hash, and they are kept with its generation as its lockfile (a snapshot reads as
  /// a lockfile: `envlock install -l` and `envlock gc` take it). Empty: no copy is kept.
  std::string snapshot_text;
};

/// The dependencies of `env`'s conda packages that no package of `env` satisfies: one line
/// each, "<dist name> needs <MatchSpec>", sorted. Virtual packages (`__glibc`, `__cuda`) are the
/// target's and left out (check_compatibility); a pip distribution of the same project counts
/// (pip replaced the conda one). A depend that does not parse as a MatchSpec is listed too.
std::vector<std::string> unmet_dependencies(const CapturedEnvironment& env);

/// What a deploy did, and what a person still has to do.
struct DeployReport {
  std::string environment;
  std::vector<std::string> installed;     ///< conda dist names the prefix holds (linked, or kept from the one replaced), sorted
  std::vector<std::string> pip_restored;  ///< "name version", sorted
  /// Never done by envlock: system packages and drivers that differ from the capture host,
  /// drift not reproduced, pip installs left out. One human-readable line each.
  std::vector<std::string> checklist;
  /// The generation the deployed tree is (envlock/generations.hpp); `previous`: the one it
  /// replaced, kept (0 when the prefix held no environment, or the same packages).
  std::uint64_t generation = 0;
  std::uint64_t previous = 0;
  std::vector<std::string> warnings;  ///< the installer's (a generation that could not be kept, ...)
};

/// The differences between the capture host and `target` (taken through as_install_sees()) a
/// person must handle by hand: the NVIDIA driver, glibc, a CPU level (x86-64 psABI) lower than the
/// capture host's, OS release, system packages missing or at another version (same package manager
/// only). One line each, in that order.
std::vector<std::string> host_checklist(const HostFacts& captured, const HostFacts& target);

/// Redeploys environment `options.environment` of `snapshot` into `prefix` on this machine:
///  1. check_compatibility() against `target` — any failed requirement refuses the deploy
///     (ErrorKind::Incompatible, each requirement in `detail`);
///  2. every pip-installed file is read from the captured prefix (DeployOptions::pip_source) and
///     checked against its RECORD sha256 into a staging folder beside `prefix`, before anything
///     is installed (ErrorKind::Integrity naming the file when one no longer matches; ErrorKind::Io
///     when the source is gone: use without_pip);
///  3. every recorded conda record, shadowed ones included (the capture host had them installed
///     under pip's files), goes through the package cache (download, sha256 check, extract) and
///     install_packages() — the installer of `envlock install`, which builds the prefix in a
///     staging directory and renames it into place;
///  4. unless without_pip: the files of shadowed records that the capture found missing (pip's
///     uninstall of the conda package removed them; Drift::missing) are removed, then the staged
///     pip files are moved into the new prefix, over the conda files pip had overwritten.
/// DeployReport::checklist counts the modified, unowned and missing files (those of records pip
/// did not shadow) that are not reproduced.
/// Steps 3 and 4 build one tree: the pip files go into the installer's staging folder
/// (InstallOptions::finish_stage), so the deployed environment comes in with its one swap.
/// `prefix` must not exist, be an empty folder or hold an environment envlock made (replaced as
/// `envlock install` replaces it: the tree it held is kept as a generation, which `envlock
/// rollback` makes current again), and pass check_install_prefix() (not a link, not inside
/// another environment at any depth, ...), checked first (ErrorKind::Io otherwise, naming it; an
/// environment the snapshot does not hold is ErrorKind::Usage). On any failure the prefix is left
/// as it was.
Result<DeployReport> deploy_snapshot(const Snapshot& snapshot, const std::filesystem::path& prefix, const HostFacts& target,
                                     const DeployOptions& options);

}  // namespace envlock
