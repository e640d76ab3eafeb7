#pragma once
// envlock/package_cache.hpp — the package cache shared by every environment on the machine.
//
// Layout (conda's pkgs/ layout, so the folders read as conda's do):
//   <root>/<dist>.conda | <dist>.tar.bz2     the archive as downloaded (sha256 verified)
//   <root>/<dist>/                           the archive extracted; <dist> = file name without
//                                            its extension, i.e. conda's name-version-build
//   <root>/<dist>/info/repodata_record.json  the RepoDataRecord it was made for (as conda writes)
//   <root>/<dist>/info/envlock_cache.json    the completion marker: archive file name, size,
//                                            sha256 (and md5 when known), marker format version
//   <root>/<dist>.lock                       flock(2) lock file, one per entry
//
// Location: $ENVLOCK_PKGS_DIR, else $XDG_CACHE_HOME/envlock/pkgs, else $HOME/.cache/envlock/pkgs.
//
// An entry is reused only when its marker exists and names the same archive (file name and
// sha256 — or md5, or size, whichever the record carries, in that order of preference). The
// extracted folder appears by rename() only after extraction and the marker are complete, so a
// folder without a marker is debris of an older envlock and is replaced. A cached archive is
// re-hashed before it is extracted again; a corrupt one is deleted and downloaded anew.
// Several envlock processes may use one cache at once: each entry is read or changed only while
// holding an exclusive flock on its lock file (taken in sorted order, so batches cannot deadlock).
// A cache hit opens no network connection.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "envlock/extract.hpp"
#include "envlock/fetch.hpp"
#include "envlock/package_record.hpp"
#include "envlock/result.hpp"

namespace envlock {

/// How much an existing entry is checked before reuse.
enum class CacheValidation {
  Marker,  ///< the completion marker matches the record (cheap: two small file reads)
  Files,   ///< also every file of info/paths.json exists with its recorded size (one stat each);
           ///< what `envlock install` uses: a cached file edited through a hard link of an
           ///< environment changes size in most edits, and the package is extracted again
  Hashes,  ///< also every hardlink-type file has its recorded sha256 (reads every byte;
           ///< `envlock install --verify-cache`, like conda's safety_checks)
};

/// The check `envlock install` and `envlock snapshot deploy` make of a cached entry before they
/// link it (one setting for both; `envlock install --verify-cache` raises it to Hashes).
inline constexpr CacheValidation kInstallCacheValidation = CacheValidation::Files;

/// How an entry came to be valid.
enum class CacheOrigin {
  Hit,        ///< already valid: nothing downloaded, nothing extracted
  Extracted,  ///< the archive was cached and verified; extracted now
  Downloaded, ///< downloaded and extracted now
};

/// A valid cache entry for one record.
struct CacheEntry {
  std::string dist_name;                  ///< folder name: archive file name without extension
  std::filesystem::path archive;          ///< <root>/<file name>
  std::filesystem::path extracted_dir;    ///< <root>/<dist_name>
  std::string sha256;                     ///< of the archive, lower-case hex
  std::uint64_t size = 0;                 ///< of the archive, bytes
  CacheOrigin origin = CacheOrigin::Hit;
};

/// Knobs for ensure()/ensure_all().
struct CacheOptions {
  FetchOptions fetch;                                 ///< parallelism, retries, progress of downloads
  ExtractLimits limits;                               ///< bounds for each archive
  CacheValidation validation = CacheValidation::Marker;
  std::size_t extract_threads = 0;                    ///< parallel extractions; 0 = CPU count
};

/// The cache folder from the environment: $ENVLOCK_PKGS_DIR, $XDG_CACHE_HOME/envlock/pkgs or
/// $HOME/.cache/envlock/pkgs (relative values are ignored, as the XDG spec says).
/// ErrorKind::Usage when none of them is set.
Result<std::filesystem::path> default_package_cache_dir();

class PackageCache {
 public:
  /// Uses (and creates, with parents) the folder `root`. ErrorKind::Io when it cannot be created.
  static Result<PackageCache> open(const std::filesystem::path& root);
  /// open(default_package_cache_dir()).
  static Result<PackageCache> open_default();

  [[nodiscard]] const std::filesystem::path& root() const { return root_; }

  /// The valid entry for `record` if the cache holds one (under the entry's lock); never touches
  /// the network and never changes the cache.
  [[nodiscard]] std::optional<CacheEntry> lookup(const RepoDataRecord& record,
                                                 CacheValidation validation = CacheValidation::Marker) const;

  /// Makes the entry for `record` valid: reuses it, extracts a verified cached archive, or
  /// downloads (record.url, checked against record.sha256/md5/size) and extracts.
  /// Errors carry the record's file name in `where`: ErrorKind::Network / Integrity / Io from
  /// fetch and extract (nothing of a failed entry is left in the cache), ErrorKind::Usage for a
  /// record without url or with a file name that is not .conda / .tar.bz2.
  Result<CacheEntry> ensure(const RepoDataRecord& record, const CacheOptions& options = {});

  /// ensure() for many records: the misses are downloaded in parallel (one fetch_all batch), then
  /// extracted on options.extract_threads threads. One result per record, in input order; a
  /// record listed twice gets the same entry twice. One failure does not stop the others.
  std::vector<Result<CacheEntry>> ensure_all(const std::vector<RepoDataRecord>& records,
                                             const CacheOptions& options = {});

  /// Deletes the entry (archive, extracted folder, partial download) for `record`, under its lock.
  Status remove(const RepoDataRecord& record);

 private:
  explicit PackageCache(std::filesystem::path root) : root_(std::move(root)) {}
  std::filesystem::path root_;
};

}  // namespace envlock
