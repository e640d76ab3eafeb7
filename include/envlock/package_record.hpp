#pragma once
// envlock/package_record.hpp — one type per stage of a package's life (as rattler does):
//   PackageRecord   what the archive declares (info/index.json) and repodata lists per file;
//   RepoDataRecord  + where it comes from: url, file name, channel;
//   PrefixRecord    + what it installed: conda-meta/<name>-<version>-<build>.json.
// JSON (de)serialisation follows the conda layout: repodata.json entries (CEP-15/CEP-16 keys),
// info/index.json, and conda's PrefixRecord (conda/models/records.py). Unknown keys are ignored
// on read; writing emits keys in a fixed (sorted) order so output is byte-stable.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "envlock/result.hpp"
#include "envlock/version.hpp"

namespace envlock {

/// conda's `noarch` field: absent, `generic`, or `python` (legacy `noarch: true` is generic).
enum class NoArchKind { None, Generic, Python };

struct PackageRecord {
  std::string name;                          ///< lower-case package name
  Version version;
  std::string build;                         ///< build string, e.g. "py312h1234567_0"
  std::uint64_t build_number = 0;
  std::string subdir;                        ///< linux-64, noarch, ...
  std::vector<std::string> depends;          ///< MatchSpec strings, as written
  std::vector<std::string> constrains;       ///< MatchSpec strings (conda's run_constrained)
  std::vector<std::string> track_features;   ///< split from the space/comma separated string
  std::string features;                      ///< legacy `features` string, kept verbatim
  std::string license;
  std::string license_family;
  std::string md5;                           ///< lower-case hex, may be empty
  std::string sha256;                        ///< lower-case hex, may be empty
  std::optional<std::uint64_t> size;         ///< archive size in bytes
  std::optional<std::uint64_t> timestamp;    ///< milliseconds since epoch; JSON values up to
                                             ///< 253402300799 are seconds and are scaled (conda)
  NoArchKind noarch = NoArchKind::None;
  std::string arch;                          ///< legacy field, kept when present
  std::string platform;                      ///< legacy field, kept when present
  std::string python_site_packages_path;     ///< CEP-17, when present

  /// "name-version-build", conda's dist name (also the package cache folder name).
  [[nodiscard]] std::string dist_name() const;

  /// Reads one record from a repodata.json entry or info/index.json object.
  /// Errors name the missing or mistyped key. `timestamp` given in seconds is scaled to ms.
  static Result<PackageRecord> from_json(const nlohmann::json& j);
  /// Writes the record in repodata/index.json shape (empty optional fields omitted).
  void to_json(nlohmann::json& j) const;

  friend bool operator==(const PackageRecord&, const PackageRecord&) = default;
};

struct RepoDataRecord : PackageRecord {
  std::string url;        ///< full download URL (credential-free when written anywhere)
  std::string file_name;  ///< e.g. numpy-1.26.4-py312h_0.conda
  std::string channel;    ///< channel URL (credential-free), e.g. https://conda.anaconda.org/conda-forge

  /// Reads a record with `url`, `fn` and `channel` keys (as conda-meta and lockfiles hold them);
  /// missing keys stay empty, and `fn` defaults to the last segment of `url`.
  static Result<RepoDataRecord> from_json(const nlohmann::json& j);
  /// Writes the PackageRecord keys plus `url`, `fn`, `channel` (when not empty).
  void to_json(nlohmann::json& j) const;
  friend bool operator==(const RepoDataRecord&, const RepoDataRecord&) = default;
};

/// One file a package installed, as in conda-meta `paths_data.paths` (paths.json v1).
struct PathEntry {
  /// conda's PathType (conda/models/enums.py): files from the archive are HardLink/SoftLink/
  /// Directory; the others are files conda made while linking noarch python packages
  /// (`pyc_file`, `unix_python_entry_point`, `windows_python_entry_point_script`,
  /// `windows_python_entry_point_exe`, `linked_package_record`).
  enum class Type {
    HardLink,
    SoftLink,
    Directory,
    PycFile,
    UnixPythonEntryPoint,
    WindowsPythonEntryPointScript,
    WindowsPythonEntryPointExe,
    LinkedPackageRecord
  };
  enum class PlaceholderMode { None, Text, Binary };
  std::string path;                  ///< relative to the prefix, '/'-separated
  Type type = Type::HardLink;
  std::string sha256;                ///< of the file as installed in the prefix (after relocation);
                                     ///< read from `sha256_in_prefix`, else from `sha256`
  std::string sha256_in_package;     ///< of the file inside the archive (paths.json `sha256`) when
                                     ///< it differs from `sha256` (a relocated file); else empty
  std::optional<std::uint64_t> size_in_bytes;
  std::string prefix_placeholder;    ///< non-empty when the file was relocated
  PlaceholderMode file_mode = PlaceholderMode::None;
  bool no_link = false;
  friend bool operator==(const PathEntry&, const PathEntry&) = default;
};

/// conda's spelling of a path type in paths.json and conda-meta (`hardlink`, `softlink`,
/// `directory`, `pyc_file`, ...: conda/models/enums.py PathType).
std::string_view to_string(PathEntry::Type type);

/// The path type conda spells `name`; an empty name is `hardlink` (paths.json may leave the
/// field out). nullopt for a name conda does not have.
std::optional<PathEntry::Type> path_type_from_string(std::string_view name);

/// The placeholder mode of a `file_mode` field: `text`, `binary`, or empty (None; no placeholder).
/// nullopt for anything else.
std::optional<PathEntry::PlaceholderMode> placeholder_mode_from_string(std::string_view mode);

struct PrefixRecord : RepoDataRecord {
  std::vector<std::string> files;        ///< every installed path, relative, sorted
  std::vector<PathEntry> paths;          ///< paths_data (paths_version 1)
  std::string package_tarball_full_path; ///< the archive in the package cache
  std::string extracted_package_dir;     ///< the extracted folder in the package cache
  std::string requested_spec;            ///< the spec the user asked for, if any
  std::string link_type = "hardlink";   ///< "hardlink" | "softlink" | "copy" (conda: link.type 1/2/3)

  /// Reads conda-meta/<dist>.json as conda writes it: the RepoDataRecord keys plus `files`,
  /// `paths_data` (paths_version 1), `package_tarball_full_path`, `extracted_package_dir`,
  /// `requested_spec` and `link` ({source, type: 1 hardlink, 2 softlink, 3 copy}).
  static Result<PrefixRecord> from_json(const nlohmann::json& j);
  /// Writes conda-meta JSON: the RepoDataRecord keys, `files`, `paths_data` (paths_version 1),
  /// `link` {source: extracted_package_dir, type}, and the cache paths and requested spec when set.
  void to_json(nlohmann::json& j) const;
  friend bool operator==(const PrefixRecord&, const PrefixRecord&) = default;
};

/// Splits a `track_features` / `features` string into feature names as conda does
/// (conda.models.records FeaturesField and conda.models.match_spec FeatureMatch): the names are
/// separated by spaces or commas, surrounding white space (space, tab, CR, LF) is trimmed off each
/// name, and empty names are dropped. Order and repeats are kept as written; "mkl, blas" and
/// "mkl blas" both give {"mkl", "blas"}, "" gives {}. Never fails.
std::vector<std::string> split_features(std::string_view text);

/// Splits `name-version-build.conda` / `.tar.bz2` into its parts (conda: rsplit('-', 2) after the
/// extension); nullopt when the name does not have that shape (no extension, fewer than three
/// non-empty parts, a '/' in it). The extension is returned with its dot.
struct ArchiveName {
  std::string name, version, build, extension;
};
std::optional<ArchiveName> parse_archive_name(std::string_view file_name);

/// The most bytes of one `conda-meta/*.json` record envlock reads: 64 MiB, as for a lockfile
/// (kMaxLockfileBytes). The largest real records (a package of 100,000 files, paths_data for
/// each) are a few tens of MB; a prefix is another user's or a pull request's bundle at times.
inline constexpr std::uintmax_t kMaxCondaMetaRecordBytes = 64u << 20;

/// The text of the conda-meta record `file`, read as every input is (read_input_file,
/// envlock/input_file.hpp: a regular file, not on proc or sysfs, at most
/// kMaxCondaMetaRecordBytes; a record that is a link must not lead into /proc, /sys or /dev,
/// while one that is a file is read wherever its prefix is, `/dev/shm` included): else an error
/// at `file` saying why (ErrorKind::Io), nothing of its text quoted.
Result<std::string> read_conda_meta_record_text(const std::filesystem::path& file);

/// Reads every `conda-meta/*.json` of an environment prefix (conda, mamba, pixi or envlock made),
/// sorted by name. A record that cannot be read is an error naming the file (ErrorKind::Parse;
/// ErrorKind::Io for what read_conda_meta_record_text() refuses).
Result<std::vector<PrefixRecord>> read_conda_meta(const std::filesystem::path& prefix);

}  // namespace envlock
