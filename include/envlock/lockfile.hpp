#pragma once
// envlock/lockfile.hpp — the lockfile model: environment x platform -> locked records.
//
// This is also the one in-memory model that every reader of the ecosystem's lockfiles produces
// (conda-lock.yml, pixi.lock, @EXPLICIT, conda-meta prefixes, snapshots), so `diff`, `list`,
// `install` and `snapshot` speak one shape. The envlock.lock file format (YAML, version 1) is
// documented in docs/lockfile.md; write() is deterministic: fixed key order, environments,
// platforms and packages sorted, no clocks, host or user names, credential-free URLs.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/package_record.hpp"
#include "envlock/pip_package.hpp"
#include "envlock/reference_run.hpp"
#include "envlock/result.hpp"
#include "envlock/virtual_package.hpp"

namespace envlock {

/// A record pinned in a lockfile, with the layer (environment name) whose solve introduced it.
struct LockedPackage : RepoDataRecord {
  std::string layer;  ///< e.g. "base" for a pin inherited from the base layer
  friend bool operator==(const LockedPackage&, const LockedPackage&) = default;
};

struct LockedPlatform {
  std::string platform;                          ///< subdir, e.g. "linux-64"
  std::vector<std::string> channels;             ///< credential-free channel URLs, priority order
  /// Parallel to `channels`: the name the manifest gives each (`{url: URL, name: NAME}`, a mirror
  /// of NAME), "" for one without; empty when no channel has a name (`channel_names:`).
  std::vector<std::string> channel_names;
  std::vector<VirtualPackage> virtual_packages;  ///< assumed when solving for this platform
  /// The PyPI indexes the environment's pip packages were resolved against, primary first
  /// (pixi.lock 4-7's environment `indexes`; envlock.lock's `pypi_indexes`, written by `envlock
  /// lock` for a platform it pinned PyPI packages for), credential-free; empty when the format
  /// records none (an envlock.lock without PyPI pins, or written before it was recorded).
  std::vector<std::string> pypi_indexes;
  std::vector<LockedPackage> packages;           ///< sorted by name
  std::vector<PipPackage> pip;                   ///< sorted by name
};

/// The base lockfile an environment was locked on (issue 18; ExternalBase in envlock/manifest.hpp):
/// written under the environment as `base-lockfile: {lockfile, environment, sha256}`.
struct LockedBase {
  std::string lockfile;     ///< as the manifest writes it (relative path or URL), never resolved
  std::string environment;  ///< the base lockfile's environment
  std::string sha256;       ///< lower-case hex sha256 of the base lockfile's bytes when locked
  friend bool operator==(const LockedBase&, const LockedBase&) = default;
};

struct LockedEnvironment {
  std::string name;
  std::string base;                       ///< the base layer's environment name, or empty
  std::vector<std::string> requested;     ///< the manifest's specs, as written
  std::map<std::string, LockedPlatform> platforms;  ///< key: subdir
  std::optional<ReferenceRun> reference;
  /// Set when the environment was locked on another project's lockfile; the packages it pinned
  /// carry the layer `base:<their layer there>`.
  std::optional<LockedBase> base_lockfile;
};

/// The most bytes envlock reads of one lockfile, whoever reads it: Lockfile::read (install, lock,
/// create, export) and the readers of `envlock diff` and `show` (envlock/readers.hpp: a file, a
/// FIFO, standard input, `git show REV:PATH`). 64 MiB: the largest real lockfile of the corpus
/// (prefix-dev/pixi's examples/ros2-nav2 pixi.lock) is 2.8 MB, the benchmark's 1,000 packages x
/// 5 platforms 4 MB, so the cap is over 20 times the largest seen, and a hostile or mistaken input
/// (a file of GBs, `/dev/zero` through a FIFO) costs at most that much memory before it is
/// refused. One value, so a lockfile `show` prints is one `install` reads (docs/review.md).
inline constexpr std::uintmax_t kMaxLockfileBytes = 64u << 20;

/// The snapshot file format (docs/snapshot.md) this envlock reads and writes. Defined here, below
/// the snapshot module, because Lockfile::parse reads a snapshot file's lockfile part and must
/// refuse the same newer formats Snapshot::parse refuses (Snapshot::kFormatVersion is this value).
inline constexpr int kSnapshotFormatVersion = 1;

/// The virtual packages of a locked platform that was never solved (`envlock snapshot lock` and
/// the lockfile part of a snapshot): only the operating-system family of `platform`, without a
/// version — `__linux=0=0` and `__unix=0=0` for linux-*, `__osx=0=0` and `__unix=0=0` for osx-*,
/// `__unix=0=0` for freebsd-*, `__win=0=0` for win-*, none for anything else; sorted by name.
/// The capture host's facts are not solve assumptions: what each package needs of the target
/// (`__glibc`, `__cuda`, `__archspec`, ...) is its own `depends`, which install checks per package.
std::vector<VirtualPackage> unsolved_virtual_packages(std::string_view platform);

struct Lockfile {
  static constexpr int kFormatVersion = 1;
  int version = kFormatVersion;
  std::string manifest_hash;                          ///< "sha256:<hex>" of the manifest inputs
  std::map<std::string, LockedEnvironment> environments;
  /// Local channels that travel with the project: the manifest names them by a relative directory
  /// (`./channel`, `../fixtures/channel`). Each entry is the channel as LockedPlatform::channels
  /// and LockedPackage::channel hold it: a `file://` URL once resolved, or the relative path as
  /// written when the text was parsed without a directory. The file records such a channel, and
  /// the `channel` and `url` of every package under it, as a path relative to the lockfile's own
  /// directory (docs/lockfile.md, "Local channels"), so a checkout moved elsewhere or cloned by CI
  /// keeps a lockfile that `lock --check` accepts and `install` can fetch from. Sorted, unique.
  std::vector<std::string> relative_channels;

  /// Parses envlock.lock text; `source` names the file in errors (`file:line:col`). A newer
  /// `version` is refused naming both versions (ErrorKind::Parse). A channel or package URL
  /// written as a relative path (`./…`, `../…`, `.`, `..`) is resolved against `directory` (made
  /// absolute) into a `file://` URL: file_url_from_path() of the lexically normalised path, so
  /// `./my chan` becomes `file:///…/my%20chan` (envlock/url.hpp); a package URL under such a
  /// channel is the channel's URL followed by the rest as written (`/linux-64/x.conda`). Each is
  /// listed in relative_channels; with an empty `directory` it is kept as written. A channel, package
  /// URL or pip URL written `~/…` (to_yaml's spelling of a `file://` URL under the home folder), and
  /// a `~/…` reference in a pip requirement (`mylib @ ~/src/mylib`), is resolved against
  /// home_folder() the same way (kept as written when there is none or `directory` is empty) and
  /// not listed.
  /// A snapshot file (docs/snapshot.md: an envlock.lock document followed by a top-level
  /// `snapshot:` block) is read as its envlock.lock part, with line numbers unchanged, so
  /// `diff`, `show`, `list` and `install` read snapshots. Its `snapshot: format:` must be at most
  /// kSnapshotFormatVersion (a newer one is ErrorKind::Parse at `file:line:col`, as
  /// Snapshot::parse refuses it). A snapshot was never solved, so each platform's virtual
  /// packages are read as unsolved_virtual_packages(platform): snapshots written before this
  /// rule carried the capture host's facts there (`__cuda`, `__glibc`, kernel, CPU level).
  static Result<Lockfile> parse(const std::string& text, const std::string& source,
                                const std::filesystem::path& directory = {});
  /// Reads the file at `path` (at most kMaxLockfileBytes, counted while reading: a FIFO has no
  /// size) and parses it with the file's absolute directory as `directory`. Errors: ErrorKind::Io
  /// (cannot open/read), ErrorKind::Parse (as parse(); past the cap, "is larger than 64 MiB, more
  /// than any lockfile; it is not read").
  static Result<Lockfile> read(const std::filesystem::path& path);

  /// The deterministic YAML text of this lockfile, to be stored in `directory`: every
  /// relative_channels entry that is a `file://` URL is written as a path relative to
  /// `directory` (`./channel` or `../…`; the decoded path: `./my chan`, never `./my%20chan`).
  /// An empty `directory` writes them as their URLs. Every other `file://` channel, package URL
  /// or pip URL under home_folder(), and such a URL in a pip requirement, is written `~/…` (its
  /// decoded path), so no lockfile names the home folder of whoever wrote it (issue 17, point 9).
  [[nodiscard]] std::string to_yaml(const std::filesystem::path& directory = {}) const;
  /// `text` with every `file:` URL in it spelled as to_yaml(directory) writes a channel or package
  /// URL: a relative_channels entry, or a URL under one, relative to `directory` (`../channel`,
  /// `../channel/linux-64/x.conda`), any other `file:` URL under the home folder `~/…`; the rest
  /// unchanged. A URL runs from `file:` to the next white space, `,`, `;`, `:` or `)`. For output that
  /// must show locations as the file holds them (`envlock diff`: never resolved against the
  /// folder the file was read from, never the reader's home folder; docs/review.md, "Output").
  [[nodiscard]] std::string written_locations(std::string_view text, const std::filesystem::path& directory) const;
  /// Writes to_yaml(absolute directory of `path`) atomically (temporary file in the same
  /// directory, fsync, rename): an existing lockfile is never truncated or half-written.
  [[nodiscard]] Status write(const std::filesystem::path& path) const;

  /// The locked platform `platform` of environment `environment`, or nullptr.
  [[nodiscard]] const LockedPlatform* find(std::string_view environment,
                                           std::string_view platform) const;
};

/// The packages of one locked platform in install order: every package after the packages its
/// `depends` name (dependencies first), ties broken by name, so the order is deterministic.
/// Dependencies outside the set (virtual packages, unlocked names) are ignored; a dependency
/// cycle is broken at the alphabetically first package still waiting.
std::vector<const LockedPackage*> install_order(const LockedPlatform& platform);

/// conda's explicit spec file for one locked platform:
///     # This file may be used to create an environment using:
///     # $ conda create --name <env> --file <this file>
///     # platform: linux-64
///     @EXPLICIT
///     <url>#sha256:<hex>      (one line per package, install order; `#<md5>` when no sha256)
/// URLs are credential-free. Errors: ErrorKind::Integrity when a package has no url.
Result<std::string> to_explicit(const LockedPlatform& platform);

}  // namespace envlock
