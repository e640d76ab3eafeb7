#pragma once
// envlock/repodata_index.hpp — a channel subdir's repodata.json indexed by package name, with
// records parsed lazily, one name at a time.
//
// Loading a conda-forge-sized repodata.json (500k records, 200+ MB) eagerly costs seconds and
// hundreds of MB; a solve needs the records of a few hundred names. RepodataIndex therefore does
// one pass over the JSON (a dedicated AVX2 scanner, with simdjson's on-demand pass as fallback
// and for errors; docs/solving.md) that only notes, per record of `packages.conda` and
// `packages`, where its file name and its record object lie in the text, and groups them by the
// package name read from the file name (`<name>-<version>-<build>.conda|.tar.bz2`, cut at the
// second-to-last '-', lower-cased). records(name) parses that name's records on first use, in
// the same way parse_repodata (envlock/repodata.hpp) always has — the design rattler's
// SparseRepoData uses.
//
// Rules, identical to parse_repodata:
//   - the `.conda` record of a package wins over the `.tar.bz2` of the same stem;
//   - `url` is `<base>/<file name>` with CEP-15's `info.base_url` (absolute, or relative to the
//     subdir URL), else `<channel>/<subdir>`; `channel` and `subdir` come from the caller
//     (a record's own `subdir` field does not override the subdir it was read from);
//   - a version conda cannot read: the record is skipped with a warning;
//   - timestamps in seconds become milliseconds.
// Rules of the lazy form (each also a warning and a skipped record in records(); parse_repodata
// turns the ones marked "error" into its ErrorKind::Parse error):
//   - a record whose `name` disagrees with the name of its file name is skipped (warning);
//   - a record lacking `name` or `version` (error), or whose JSON is malformed (error, named
//     `source:line:col` of the whole file).
//
// The index cache: open_file() and from_text() with a cache folder keep a small binary file
// (`<cache>/<key>.idx`, key: sha256 of the JSON's absolute path) that holds the index itself —
// names, and per record the (offset, length) of its object and of its file name in the JSON —
// stamped with what identifies the JSON bytes: the identity file's size, mtime (ns), inode and
// device, the JSON text's size, and a 64-bit fingerprint of its first and last 4 KiB. A reload
// maps the JSON without reading it and is ready after reading the index file. A cache file that
// does not match (stale, truncated, damaged: a checksum covers it) is rebuilt, never fatal; it is
// written through a temporary file and a rename.
//
// Thread safety: every const member may be called from several threads (records() serialises
// its parsing internally).

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/package_record.hpp"
#include "envlock/record_source.hpp"
#include "envlock/result.hpp"

namespace envlock {

/// Where a RepodataIndex comes from and where its index cache lives.
struct RepodataIndexOptions {
  std::string source;       ///< names the JSON in messages (credential-free URL or path)
  std::string channel_url;  ///< fills records' `channel` (credentials are stripped)
  std::string subdir;       ///< fills records' `subdir` and the default base URL
  /// Folder of the index cache; empty disables it (the index is built from the JSON each time).
  std::filesystem::path cache_dir;
  /// The file whose identity (size, mtime, inode, device) keys the cache for from_text(): the
  /// compressed file the text was decompressed from. Empty: from_text() is never cached.
  std::filesystem::path identity_file;
  /// Index with simdjson's generic on-demand pass only, never the dedicated repodata scanner
  /// (both give the same index; tests compare them). Default false: the scanner, which hands
  /// anything it does not read exactly as simdjson would to the generic pass.
  bool generic_scan = false;
};

/// Where a sharded RepodataIndex (RepodataIndex::from_shards) gets the repodata of one name:
/// CEP-16's per-name shards (src/channel/shards.cpp implements it over HTTP with a
/// content-addressed cache). Implementations must be thread-safe.
class RepodataShardSource {
 public:
  virtual ~RepodataShardSource() = default;
  /// Every name the shard index lists, sorted ascending (bytewise), without duplicates.
  [[nodiscard]] virtual const std::vector<std::string_view>& names() const = 0;
  /// The repodata.json text (`info`, `packages`, `packages.conda`) of the shard of `name`, which
  /// names() holds: fetched (or read from the cache) on first use. Errors: ErrorKind::Network
  /// (the shard cannot be downloaded), ErrorKind::Integrity (its bytes do not match the hash the
  /// index names it by), ErrorKind::Parse (not zstd-compressed msgpack of the CEP-16 form).
  [[nodiscard]] virtual Result<std::string> shard_json(std::string_view name) const = 0;
  /// Makes the shards of `names` (those names() holds) available to shard_json() in one
  /// parallel batch of downloads. Errors as shard_json(), for the first shard that failed.
  [[nodiscard]] virtual Status prefetch(const std::vector<std::string>& names) const = 0;
  /// Credential-free URL of the shard index, for messages.
  [[nodiscard]] virtual const std::string& source() const = 0;
  /// "sha256:<hex>" of the shard index as downloaded (compressed).
  [[nodiscard]] virtual const std::string& index_hash() const = 0;
};

/// A repodata.json indexed by package name; records are parsed lazily and kept at stable
/// addresses for the index's lifetime. The solver reads it as a RecordSource.
class RepodataIndex : public RecordSource {
 public:
  /// An index over CEP-16 sharded repodata: names() are the shard index's, records(name)
  /// fetches and parses that name's shard on first use (exactly as a repodata.json holding the
  /// same records would be parsed: every rule above applies). A shard that cannot be obtained
  /// gives no records and becomes first_error() (and a warning). entry_count() and
  /// parsed_records() count the records of the shards parsed so far; content_hash() is the
  /// shard index's hash; from_cache() and scanned_fast() are false.
  static std::unique_ptr<RepodataIndex> from_shards(std::shared_ptr<const RepodataShardSource> shards,
                                                    const RepodataIndexOptions& options);
  /// True for an index made by from_shards().
  [[nodiscard]] bool sharded() const;
  /// Parses the records of `names` (a sharded index first fetches the shards it has not parsed
  /// yet in one parallel batch, RepodataShardSource::prefetch) and returns the names their
  /// records depend on, as the solver reads them (`depends` entries cut at the first space or
  /// operator, channel prefix dropped, lower-cased), sorted and without duplicates. Errors: a
  /// sharded index's first shard that could not be obtained.
  /// Maps `json_path` (read-only, never copied) and indexes it, or reloads the index cache.
  /// Errors: ErrorKind::Io (the file cannot be opened or mapped), ErrorKind::Parse (malformed
  /// JSON named `source:line:col`; the top level is not an object; a record that is not an
  /// object, named by its file name key).
  static Result<std::unique_ptr<RepodataIndex>> open_file(const std::filesystem::path& json_path,
                                                          const RepodataIndexOptions& options);
  /// Indexes JSON text the index then owns (a decompressed .zst, an HTTP body). Errors as
  /// open_file() (ErrorKind::Parse only).
  static Result<std::unique_ptr<RepodataIndex>> from_text(std::string text, const RepodataIndexOptions& options);

  ~RepodataIndex() override;
  RepodataIndex(const RepodataIndex&) = delete;
  RepodataIndex& operator=(const RepodataIndex&) = delete;

  [[nodiscard]] const std::string& channel() const;  ///< credential-free channel URL
  [[nodiscard]] const std::string& subdir() const;
  [[nodiscard]] const std::string& source() const;   ///< credential-free
  /// Every package name (from file names), sorted ascending (bytewise), without duplicates.
  [[nodiscard]] const std::vector<std::string_view>& names() const override;
  /// True when some record's file name carries this name.
  [[nodiscard]] bool contains(std::string_view name) const;
  /// Entries of `packages.conda` plus `packages` (before .conda/.tar.bz2 deduplication).
  [[nodiscard]] std::size_t entry_count() const;
  /// The records of `name` (lower-case), parsed on first use: .conda first, then .tar.bz2, each
  /// in file order, duplicates of a stem dropped. An unknown name gives an empty vector. The
  /// vector and its records stay valid and unchanged for the index's lifetime.
  [[nodiscard]] const std::vector<RepoDataRecord>& records(std::string_view name) const override;
  /// How many names records() has parsed so far (laziness is observable).
  [[nodiscard]] std::size_t parsed_names() const;
  /// How many record objects have been parsed so far.
  [[nodiscard]] std::size_t parsed_records() const;
  /// Warnings of the records parsed so far (skipped records with the reason), in file order.
  [[nodiscard]] std::vector<std::string> warnings() const;
  /// The first (in file order) problem of the records parsed so far that parse_repodata treats
  /// as an error: a record lacking name/version, or malformed record JSON.
  [[nodiscard]] std::optional<Error> first_error() const;
  /// "sha256:<hex>" of the JSON text, computed on the first call only (it reads every byte).
  [[nodiscard]] std::string content_hash() const;
  /// True when the index came from the index cache rather than a pass over the JSON.
  [[nodiscard]] bool from_cache() const;
  /// True when the dedicated repodata scanner built the index; false when simdjson's generic
  /// pass did (RepodataIndexOptions::generic_scan, a text the scanner declines, a CPU without
  /// AVX2) or the index came from the cache.
  [[nodiscard]] bool scanned_fast() const;
  /// Parses every name (as parse_repodata does) and returns every record in file order:
  /// `packages.conda` first, then `packages`. Fails with first_error() when there is one.
  [[nodiscard]] Result<std::vector<RepoDataRecord>> all_records() const;

  [[nodiscard]] Result<std::vector<std::string>> load_names(const std::vector<std::string>& names) const;

  struct Impl;

 private:
  explicit RepodataIndex(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace envlock
