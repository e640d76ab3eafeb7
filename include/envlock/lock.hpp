#pragma once
// envlock/lock.hpp — locking a manifest: every environment x platform solved into a Lockfile.
//
// lock_manifest() is what `envlock lock` runs and what `envlock create` calls when no lockfile
// exists. For each environment, in layer order (a base before the environments built on it),
// and each of its platforms:
//   1. the repodata of the environment's channels for the platform's subdir and `noarch` is
//      loaded lazily (envlock/repodata.hpp, RepodataOptions::lazy: indexed by name, with the
//      index cache under `<repodata cache>/index`), once per channel list and platform;
//   2. the specs that apply to the platform are solved (envlock/solver.hpp) with the virtual
//      packages assumed for that platform (see lock_virtual_packages), the base layer's locked
//      records pinned, and — for a re-lock — the previous lock's records preferred;
//   3. the answer becomes a LockedPlatform; each package records its layer (the environment
//      whose solve introduced it; base pins keep the base's layer).
// The lock never depends on the machine that runs it: no host detection enters the result.
//
// Staleness: check_lockfile() tells, without network or solving, whether a lockfile still
// satisfies its manifest (`envlock lock --check`, `envlock create` before it installs).
//
// Minimal updates: with LockOptions::previous set, every previously locked record that still fits
// is kept; `update` names packages that are solved afresh (they and whatever must move with
// them); `update_all` ignores the previous lock.

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "envlock/lockfile.hpp"
#include "envlock/manifest.hpp"
#include "envlock/repodata.hpp"
#include "envlock/result.hpp"
#include "envlock/solver.hpp"
#include "envlock/virtual_packages.hpp"

namespace envlock {

/// Findings of a lock that are not the lockfile itself.
struct LockDiagnostics {
  /// Advice for the user, e.g. that this host has a GPU but no `__cuda` is declared.
  std::vector<std::string> hints;
  /// Non-fatal findings of the lock itself (repodata records skipped; a framework locked as a
  /// CPU build where `__cuda` is assumed, or a record moved from its CUDA build to its CPU
  /// build since the previous lock, each naming both builds and the solver's reason:
  /// docs/solving.md rule 6); the manifest's own warnings stay in Manifest::warnings.
  std::vector<std::string> warnings;
  /// Set when the lock failed because a request cannot be satisfied.
  struct Conflict {
    std::string environment;
    std::string platform;
    Explanation explanation;
  };
  std::optional<Conflict> conflict;
};

struct LockOptions {
  /// The existing lockfile, for minimal updates; nullopt locks afresh.
  std::optional<Lockfile> previous;
  /// Package names to solve afresh although `previous` locks them (`--update NAME...`).
  std::vector<std::string> update;
  /// Ignore `previous` entirely (`--update-all`).
  bool update_all = false;
  /// Offline mode, cache folder and netrc for repodata.
  RepodataOptions repodata;
  /// The machine the lock asks, through the one host seam (envlock/host.hpp): its environment
  /// lookup for CONDA_OVERRIDE_* (lock_virtual_packages) and its cuda_driver_version for the GPU
  /// hint, asked only when some linux or win platform declares no `__cuda`; an empty part reads
  /// as nothing set, no driver. Null: Host::system(), the process environment and the driver
  /// `install` detects. Nothing the host answers enters the lockfile but the overrides.
  const Host* host = nullptr;
  /// Receives hints, warnings and the structured conflict; may be null.
  LockDiagnostics* diagnostics = nullptr;
  /// The lockfile this lock is for (`envlock lock -o`), where a chain of bases that leads back to
  /// it is a loop (walk_base_chain); empty: envlock.lock beside the manifest.
  std::filesystem::path lockfile;
};

/// Why a lockfile no longer satisfies its manifest (`envlock lock --check`).
struct StaleReason {
  enum class Kind {
    ManifestHash,          ///< the manifest's solve inputs changed since the lock
    MissingEnvironment,    ///< an environment of the manifest is not in the lockfile
    ExtraEnvironment,      ///< the lockfile has an environment the manifest no longer has
    MissingPlatform,       ///< an environment lacks one of its platforms
    ExtraPlatform,         ///< an environment is locked for a platform no longer requested
    SpecNotSatisfied,      ///< a requested spec matches no locked record (or the wrong one)
    DependencyMissing,     ///< a locked record depends on a name absent from the set
    DependencyNotSatisfied,///< ... on a name whose locked record does not match the spec
    ConstraintViolated,    ///< a locked record's `constrains` excludes another locked record
    BaseChanged,           ///< the environment's base layer differs from the manifest's
    BasePinMoved,          ///< a base-layer pin differs between the base and the project
    BaseLockfileChanged,   ///< the base lockfile's sha256 differs from the one recorded (issue 18)
    BaseChainChanged,      ///< a base lockfile's own base changed since that base was locked
    ChannelsChanged,       ///< the channels (URLs or order) differ from the manifest's
    VirtualPackagesChanged,///< the assumed virtual packages differ from the manifest's
  };
  Kind kind = Kind::ManifestHash;
  std::string environment;  ///< empty for file-wide reasons
  std::string platform;     ///< empty for environment-wide reasons
  std::string package;      ///< the package concerned, when one is
  std::string message;      ///< one line, e.g. "numpy >=2 (envlock.yaml line 9) is not
                            ///< satisfied by locked numpy 1.26.4"
};

/// The channels of every environment of `manifest` that are named by a relative directory
/// (Channel::relative_directory), as credential-free URLs, sorted and unique: the value of
/// Lockfile::relative_channels for a lock of this manifest, so `lock` and `create` write the same
/// location-independent file.
std::vector<std::string> relative_channel_urls(const Manifest& manifest);

/// One warning for each local channel of `manifest` that is not named by a relative directory and
/// lies under the home folder (home_folder()): the lockfile keeps it as `~/…` (docs/lockfile.md,
/// "Local channels"), which names a folder of whoever installs, not of the project. Sorted by
/// first appearance, one per folder; the text names the folder by its `~/…` spelling only.
std::vector<std::string> home_channel_warnings(const Manifest& manifest);

/// Stable kebab-case name of a kind ("manifest-hash", "spec-not-satisfied", ...), for --json.
std::string_view to_string(StaleReason::Kind kind);

/// Checks, without network or solving, that `lockfile` still satisfies `manifest`: manifest hash,
/// environments and platforms present (and no extra ones), base layer names and base pins
/// identical, channels unchanged, virtual packages unchanged, every requested spec matched by a
/// locked record, every `depends` of every locked record satisfied inside the set (virtual
/// packages by the locked virtual_packages), `constrains` respected. Returns every reason found,
/// in a deterministic order (environment, platform, then check order); empty means fresh.
std::vector<StaleReason> check_lockfile(const Manifest& manifest, const Lockfile& lockfile);

/// Virtual packages envlock assumes for a platform when the manifest declares none, chosen as
/// the oldest systems the mainstream channels still build for (as pixi does):
///   linux-*   __unix=0=0, __linux=4.18=0, __glibc=2.28=0, __archspec=1=<x86_64|aarch64|ppc64le|...>
///   osx-64    __unix=0=0, __osx=13.0=0, __archspec=1=x86_64
///   osx-arm64 __unix=0=0, __osx=13.0=0, __archspec=1=arm64
///   win-*     __win=0=0, __archspec=1=<x86_64|arm64|...>
///   noarch    none
/// Never `__cuda`: a GPU must be declared (`virtual-packages: {linux-64: [__cuda=12.4]}`).
std::vector<VirtualPackage> default_virtual_packages(const std::string& platform);

/// The virtual packages a lock assumes for `platform`: the defaults, replaced name by name by
/// the manifest's `virtual-packages` for the platform, then by CONDA_OVERRIDE_CUDA (linux, win),
/// CONDA_OVERRIDE_GLIBC and CONDA_OVERRIDE_LINUX (linux), CONDA_OVERRIDE_OSX (osx),
/// CONDA_OVERRIDE_WIN (win) and CONDA_OVERRIDE_ARCHSPEC (the __archspec build): a non-empty value
/// sets the version, an empty one removes the package. Sorted by name.
/// Errors: ErrorKind::Parse naming the variable when an override is not a conda version.
/// When `origins` is given, it receives for each returned name where its value came from:
/// "CONDA_OVERRIDE_CUDA=11.8", "declared in the manifest for linux-64" or
/// "assumed for linux-64" (what unsatisfiable explanations name).
Result<std::vector<VirtualPackage>> lock_virtual_packages(
    const Manifest& manifest, const std::string& platform,
    const std::function<std::optional<std::string>(const std::string&)>& getenv,
    std::map<std::string, std::string>* origins = nullptr);

/// The virtual packages each platform of `lockfile` records against those a lock of `manifest`
/// would assume now (lock_virtual_packages with `getenv`): one StaleReason of kind
/// VirtualPackagesChanged per environment x platform whose sets differ and that `reasons` does
/// not already name for that kind, appended to `reasons`. This is what makes a lock taken with
/// CONDA_OVERRIDE_CUDA=11.8 stale for a check run without it, as conda-lock's content hash
/// (which covers its virtual-package spec) does: the lockfile holds what that lock would not pin.
/// Errors: ErrorKind::Parse when an override is not a conda version (lock_virtual_packages).
Status check_assumed_virtual_packages(
    const Manifest& manifest, const Lockfile& lockfile,
    const std::function<std::optional<std::string>(const std::string&)>& getenv,
    std::vector<StaleReason>& reasons);

/// A base lockfile as read for a lock or a check (ExternalBase, envlock/manifest.hpp; issue 18).
struct BaseLockfile {
  ExternalBase base;        ///< as the manifest writes it
  std::string sha256;       ///< lower-case hex sha256 of the bytes read
  Lockfile lockfile;        ///< those bytes, parsed
  std::filesystem::path directory;  ///< the absolute folder of a base on this machine; empty for https://
  /// The environment the project builds on (an entry of lockfile.environments).
  [[nodiscard]] const LockedEnvironment& environment() const;
  /// "the base ../platform/base.lock (environment cuda12)": how messages name it.
  [[nodiscard]] std::string describe() const;
  /// The base's channels that travel with the project's checkout, as `file://` URLs: for a base
  /// named by a relative path, the channels its own lockfile names relative to its folder
  /// (Lockfile::relative_channels, resolved against that folder). The project's lockfile writes
  /// them, and the URLs of the pins under them, relative to its own folder, as it writes the
  /// manifest's relative channels (docs/lockfile.md, "Local channels"), so a moved or CI-cloned
  /// checkout holding both still installs. None for a base named by a URL: a `file://` base is an
  /// absolute place, and an https:// base's relative channels have no folder.
  [[nodiscard]] std::vector<std::string> relative_channels() const;
};

/// Reads the base lockfile of `env` (env.base_lockfile must be set): a path is read relative to
/// manifest.directory; a `file://` or `https://` URL is fetched through fetch_to_file into
/// `<repodata cache>/base-lockfiles/<sha256 of the URL>.lock` (with options.offline an https
/// base is read from that copy only, as repodata is). Its sha256 is checked against the pin.
/// Errors, each with `where` = the manifest's file:line:col of the `base:` map:
/// ErrorKind::Io (missing or unreadable file), ErrorKind::Network (fetch failures; offline without
/// a copy), ErrorKind::Integrity (sha256 differs from the pin, naming both), ErrorKind::Parse (not
/// an envlock.lock, with the base's own file:line:col in `detail`), ErrorKind::Usage (the
/// lockfile has no such environment, naming those it has).
Result<BaseLockfile> load_base_lockfile(const Manifest& manifest, const ManifestEnvironment& env,
                                        const RepodataOptions& options = {});

/// The most base lockfiles a chain may hold below a project (its base, that base's base, ...):
/// walk_base_chain refuses a longer chain rather than leave its end unchecked.
inline constexpr int kMaxBaseChain = 8;

/// A chained base (issue 18, attack finding 5). The model: a lockfile locked on a base lockfile
/// records which one (LockedEnvironment::base_lockfile: the file or URL as its manifest wrote it,
/// the environment, the sha256 of the bytes it was locked on), so the chain below a project is
/// the one its base recorded, followed link by link: a relative path against the folder of the
/// lockfile naming it, a URL fetched as load_base_lockfile fetches (the cached copy with
/// options.offline). No manifest of another project is read. Each link's sha256 is compared with
/// the one the link above recorded; the first that changed gives one line: "the base
/// ../vision/envlock.lock (environment default) is built on ../platform/envlock.lock (environment
/// runtime), which changed since ../vision/envlock.lock was locked (sha256 A then, B now)";
/// nullopt when every link is unchanged. A link that cannot be read (not checked out here, a
/// relative path in an https:// base) ends the walk unchecked: the project's own check does not
/// depend on files it does not name.
/// Errors (ErrorKind::Usage at the project's `base:` map, naming the whole chain, each link by
/// its file or URL as written and its environment): a loop, i.e. a link that is a lockfile the
/// walk has already passed or `own_lockfile` itself (a file by where it resolves through links
/// and `..`, a file:// URL as its path, any other URL as written; the project's base naming
/// itself, A on B on A, A on B on C on B): each lock in a loop changes the file the next was
/// locked on, so none could stay up to date; a chain of more than kMaxBaseChain base lockfiles.
/// `environment` is the project's environment on `base`; `own_lockfile` the lockfile being
/// locked or checked (empty: envlock.lock beside the manifest). `unchecked`, when given, receives
/// the link the walk ended at without reading it and why ("" when it read every link), for a
/// warning: "up to date" must not read the same for a chain checked and one cut short (attack 24,
/// A1). check_base_lockfiles walks with options.offline: a URL link is read from the cache only,
/// so a line in another team's lockfile cannot make every project's `lock --check` wait on the
/// network (docs/manifest.md: a path base is checked with no network).
Result<std::optional<std::string>> walk_base_chain(const Manifest& manifest, const std::string& environment,
                                                   const BaseLockfile& base, const std::filesystem::path& own_lockfile,
                                                   const RepodataOptions& options = {}, std::string* unchecked = nullptr);

/// The platforms an environment on a base lockfile is locked for: the base environment's, or the
/// subset the manifest names (the environment's `platforms`, else the manifest's when written).
/// Errors: ErrorKind::Usage at the `base:` map naming the platform and the base's platforms when
/// the manifest names one the base is not locked for.
Result<std::vector<std::string>> base_platforms_for(const Manifest& manifest, const ManifestEnvironment& env,
                                                    const BaseLockfile& base);

/// Fails when an environment's base lockfile (a path, or a file:// URL) is `lockfile_path`
/// itself, the lockfile this project's lock writes or checks: each lock would then take the file
/// it wrote last as its new base, so `lock --check` could never pass. The same file is found
/// through links and `..` (a file that does not exist yet is compared by its normalised absolute
/// path). Errors: Usage, at the `base:` map, naming the environment and the file.
Status check_base_is_not_the_lockfile(const Manifest& manifest, const std::filesystem::path& lockfile_path);

/// The base lockfiles' part of `lock --check` (issue 18 point 2), which check_lockfile() cannot
/// do since it reads no file: for each environment of `manifest` on a base lockfile, reads the
/// base (load_base_lockfile with `options`: a path base needs no network) and appends to
/// `reasons` a BaseLockfileChanged reason when its sha256 differs from the one `lockfile`
/// records, naming the base and each base pin added, removed or changed per platform; a BaseChanged
/// reason when the recorded lockfile or environment is not the manifest's; MissingPlatform /
/// ExtraPlatform against base_platforms_for(); BaseChainChanged from walk_base_chain() with
/// `lockfile_path` (empty: envlock.lock beside the manifest). Errors: those of
/// load_base_lockfile and walk_base_chain (a loop of bases, a chain too long). `warnings`, when
/// given, receives one line per chain whose walk ended at a link it could not read (the
/// `unchecked` of walk_base_chain): no reason to fail, but "up to date" then covers less.
Status check_base_lockfiles(const Manifest& manifest, const Lockfile& lockfile, const RepodataOptions& options,
                            std::vector<StaleReason>& reasons, const std::filesystem::path& lockfile_path = {},
                            std::vector<std::string>* warnings = nullptr);

/// Locks every environment of `manifest` for each of its platforms. The result's
/// relative_channels are relative_channel_urls(manifest) and each base's
/// BaseLockfile::relative_channels(), so that to_yaml() writes every local channel that travels
/// with the checkout relative to the lockfile's folder.
/// An environment on a base lockfile (ExternalBase) is locked for base_platforms_for(), with the
/// base platform's virtual packages, every record of the base environment pinned (same record,
/// URL and hash; layer `base:<its layer in the base>`), and LockedEnvironment::base_lockfile set.
/// A conflict with such a pin names the base lockfile, its environment, the pinned record and the
/// project spec, and suggests changing the spec or asking for a new base.
/// Errors: those of load_base_lockfile, walk_base_chain, load_repodata (channels), ErrorKind::Unsatisfiable naming the environment and
/// platform with the explanation tree as `detail` (also in diagnostics->conflict),
/// ErrorKind::Usage for an `update` name that is neither locked nor requested, or a base layer
/// not locked for a platform its project needs.
Result<Lockfile> lock_manifest(const Manifest& manifest, const LockOptions& options);

}  // namespace envlock
