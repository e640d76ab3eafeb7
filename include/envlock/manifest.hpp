#pragma once
// envlock/manifest.hpp — what a project asks for: `envlock.yaml`, or a conda `environment.yml`.
//
// The manifest is the input of `envlock lock` and the yardstick of `envlock lock --check`.
// Its reference page is docs/manifest.md. Shape of envlock.yaml:
//
//   name: vision                       # free text, not part of the solve
//   channel-alias: https://conda.anaconda.org   # optional; base URL for channel names
//   channels: [conda-forge, ./local-channel, https://host/chan, file:///srv/chan]
//   platforms: [linux-64, osx-arm64]   # conda subdirs; default: the host's
//   channel-priority: strict           # strict (default) | flexible | disabled
//   dependencies: [python 3.12.*, numpy >=1.26]   # the environment `default`
//   environments:
//     base:  {dependencies: [python 3.12.*, pytorch 2.4.*]}
//     train: {base: base, dependencies: [lightning], channels: [...], platforms: [...]}
//   virtual-packages:
//     linux-64: [__cuda=12.4, __glibc=2.28]
//   variables: {OMP_NUM_THREADS: "4"}  # set by `envlock run` and `shell-hook` (every environment)
//   reference: {command: python train.py --smoke, metric: "json:loss", tolerance: 0.01}
//
// A conda environment.yml (name, channels, dependencies, with an optional `pip:` list inside
// dependencies) is read into the same model: its dependencies form the environment `default`;
// its `pip:` entries are carried as unresolved pip requirements and a warning is recorded.
// conda-lock's extensions (`platforms`, `# [linux64]` selector comments) and mamba's
// `- sel(linux): spec` selectors are understood too.
//
// Errors are envlock::Error values (ErrorKind::Parse or Io) whose `where` is `file:line:col`
// (1-based) and whose `detail` shows the offending line with a caret under the column.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/channel.hpp"
#include "envlock/match_spec.hpp"
#include "envlock/pip_package.hpp"
#include "envlock/reference_run.hpp"
#include "envlock/result.hpp"
#include "envlock/virtual_package.hpp"

namespace envlock {

/// One dependency of an environment as the manifest requested it.
struct RequestedSpec {
  MatchSpec spec;
  std::string text;          ///< exactly as written (trimmed), e.g. "numpy >=2"
  SourceLocation location;   ///< where `text` starts in the manifest
  /// Platform selector from a trailing conda-lock comment `# [linux64]` or a mamba
  /// `sel(linux):` key (`linux`, `linux64`, `osx`, `osx64`, `arm64`, `win`, `win64`, `unix`,
  /// a subdir, ...); empty when the spec applies everywhere.
  std::string selector;

  /// True when the spec applies to `platform` (a subdir): no selector, or the selector names it.
  [[nodiscard]] bool applies_to(std::string_view platform) const;
};

/// A base layer that lives in another project's lockfile (issue 18):
/// `base: {lockfile: ../platform/base.lock, environment: cuda12, sha256: <64 hex>}`. The
/// lockfile is a path relative to the manifest's folder, or a `file://` or `https://` URL (fetched
/// as repodata is, through envlock/fetch.hpp); `sha256` optionally pins its content. The lock
/// keeps every record of that environment fixed and may only add packages (envlock/lock.hpp).
struct ExternalBase {
  std::string lockfile;     ///< as written (a path relative to the manifest, or a URL)
  std::string environment;  ///< the environment of that lockfile the project builds on
  std::string sha256;       ///< the pinned sha256 of the lockfile's bytes, lower-case hex; "" none
  SourceLocation location;  ///< where the `base:` map is written
};

/// A PyPI requirement to resolve (issue 20 point 1): an entry of `pypi-dependencies:`, or a PEP
/// 508 line of a `pip:` list once an index is known for the environment. The text is checked as
/// PEP 508 when the lock parses it (envlock/pypi_version.hpp), which names `location`.
struct PypiRequested {
  std::string text;          ///< as written, trimmed (credential-free: redact_text)
  SourceLocation location;
  bool from_pip_list = false;  ///< written in a `pip:` list (environment.yml, `- pip:`)
};

/// A PyPI index (`pypi-indexes:`, `--index-url`, `--extra-index-url`) or find-links location
/// (`find-links:`, `--find-links`): `url` is what is fetched (credentials kept, a relative folder
/// made absolute against the manifest's folder), `written` what the lockfile and messages show
/// (credential-free, a folder as written).
struct PypiLocation {
  std::string url;
  std::string written;
  friend bool operator==(const PypiLocation&, const PypiLocation&) = default;
};

/// pip's default index, used when an environment has `pypi-dependencies:` and names no index.
inline constexpr std::string_view kDefaultPypiIndex = "https://pypi.org/simple";

/// One environment (layer) of the manifest.
struct ManifestEnvironment {
  std::string name;
  std::vector<RequestedSpec> dependencies;
  std::string base;                                  ///< the base layer's name, or empty
  std::optional<std::vector<Channel>> channels;      ///< overrides Manifest::channels when set
  std::optional<std::vector<std::string>> platforms; ///< overrides Manifest::platforms when set
  std::vector<PipPackage> pip;  ///< unresolved pip requirements (`requirement` holds the text)
  /// PyPI requirements `envlock lock` resolves (docs/pypi.md, "Locking PyPI packages").
  std::vector<PypiRequested> pypi_dependencies;
  /// The environment's own `pypi-indexes:` (primary first) and `find-links:`, with the
  /// `--index-url` / `--extra-index-url` / `--find-links` lines of its `pip:` lists.
  std::optional<std::vector<PypiLocation>> pypi_indexes;
  std::optional<std::vector<PypiLocation>> find_links;
  SourceLocation location;      ///< where the environment is declared
  /// The environment's own `variables:` (name -> value, in the manifest's order); see
  /// Manifest::variables_for() for what activation sets.
  std::vector<std::pair<std::string, std::string>> variables;
  /// Set when `base:` is a map naming another lockfile's environment; `base` is then empty.
  std::optional<ExternalBase> base_lockfile;
};

struct Manifest {
  enum class Format {
    Envlock,           ///< envlock.yaml
    CondaEnvironment,  ///< conda's environment.yml (and conda-lock's extensions of it)
  };
  Format format = Format::Envlock;
  std::filesystem::path path;       ///< the file read (as given); empty for parsed text
  std::filesystem::path directory;  ///< the folder relative channel paths are resolved against
  std::string name;
  std::string channel_alias = std::string(kDefaultChannelAlias);
  std::vector<Channel> channels;    ///< priority order (first = highest)
  std::vector<std::string> platforms;  ///< subdirs, as listed (host's subdir when not given)
  bool platforms_from_host = false;    ///< true when `platforms` was absent
  /// Environments by name; top-level `dependencies` is the environment `default`.
  std::map<std::string, ManifestEnvironment> environments;
  /// platform -> virtual packages assumed when locking for it (sorted by name).
  std::map<std::string, std::vector<VirtualPackage>> virtual_packages;
  ChannelPriority channel_priority = ChannelPriority::Strict;
  std::optional<ReferenceRun> reference;  ///< command, metric, tolerance; no recorded value
  /// Non-fatal findings to show the user (ignored keys, pip requirements left unresolved).
  std::vector<std::string> warnings;
  /// The top-level `variables:` (name -> value, in the manifest's order): every environment's.
  /// A name is a POSIX environment variable name (`[A-Za-z_][A-Za-z0-9_]*`, IEEE Std
  /// 1003.1-2017 8.1) other than PATH and the CONDA_* names activation sets; a value is one line
  /// of text (no newline, carriage return or NUL), taken literally (no `$VAR` expansion).
  /// Variables are not a solve input: they are not in the manifest hash, so editing them never
  /// makes a lockfile stale.
  std::vector<std::pair<std::string, std::string>> variables;

  /// Top-level `pypi-indexes:` and `find-links:` (every environment's unless it names its own).
  std::vector<PypiLocation> pypi_indexes;
  std::vector<PypiLocation> find_links;

  /// The indexes an environment's PyPI requirements resolve against: its own, else the
  /// manifest's, else (when it has pypi_dependencies and no find-links) kDefaultPypiIndex.
  [[nodiscard]] std::vector<PypiLocation> pypi_indexes_for(const ManifestEnvironment& env) const;
  [[nodiscard]] std::vector<PypiLocation> find_links_for(const ManifestEnvironment& env) const;

  /// The environment called `name`, or nullptr.
  [[nodiscard]] const ManifestEnvironment* environment(std::string_view name) const;
  /// The channels an environment solves against: its own, else the manifest's.
  [[nodiscard]] const std::vector<Channel>& channels_for(const ManifestEnvironment& env) const;
  /// The platforms an environment is locked for: its own, else the manifest's.
  [[nodiscard]] const std::vector<std::string>& platforms_for(const ManifestEnvironment& env) const;
  /// The virtual packages declared for `platform` (empty when none are declared).
  [[nodiscard]] const std::vector<VirtualPackage>& virtual_packages_for(std::string_view platform) const;
  /// What activation (`envlock run`, `envlock shell-hook`) sets for the environment `name`: the
  /// top-level variables, then those of its base layers (the farthest base first), then its
  /// own; a later value of a name replaces an earlier one, in its first place. Empty for an
  /// unknown name.
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> variables_for(std::string_view name) const;
  /// Environment names ordered so that every base comes before the environments built on it
  /// (ties by name). Cycles are rejected when loading, so this always succeeds.
  [[nodiscard]] std::vector<std::string> layer_order() const;
};

/// Reads a manifest file. The format is chosen by content: a file with `environments`,
/// `virtual-packages`, `channel-priority`, `reference` or `channel-alias`, or whose file name
/// contains "envlock", is envlock.yaml; anything else is read as a conda environment.yml.
/// Errors: ErrorKind::Io (missing/unreadable file), ErrorKind::Parse (YAML syntax, unknown
/// key in envlock.yaml, wrong type, bad MatchSpec, unknown platform, bad virtual package,
/// unknown base environment, base cycle, a bad `variables:` name or value, a `base:` map without
/// `lockfile` or `environment`, with an unknown key, a sha256 that is not 64 hex digits, or a
/// URL scheme other than file:// and https://), each with `where` =
/// file:line:col.
Result<Manifest> load_manifest(const std::filesystem::path& path);

/// Parses manifest text. `source` names it in errors; `directory` anchors relative channel
/// paths; `format` as for load_manifest when nullopt.
Result<Manifest> parse_manifest(const std::string& text, const std::string& source,
                                const std::filesystem::path& directory,
                                std::optional<Manifest::Format> format = std::nullopt);

/// "sha256:<64 hex>" over the inputs that change a solve, in a canonical form: channel URLs
/// (credential-free) and their order, channel priority, platforms, every environment's
/// canonical specs (MatchSpec::to_string, sorted), selectors, base, channel and platform
/// overrides, pip requirements, and the virtual packages; for a `base:` map its lockfile (as
/// written), environment and sha256 pin (the base lockfile's content is checked by
/// check_base_lockfiles, envlock/lock.hpp). Not included: `name`, `reference`,
/// comments, key order, spacing — editing those does not make a lockfile stale.
std::string manifest_hash(const Manifest& manifest);

}  // namespace envlock
