#pragma once
// envlock/repodata.hpp — channel repodata (the channel module): reading
// `<channel>/<subdir>/repodata.json` into RepoDataRecords, from local directories, file:// and
// http(s):// channels, with a cache.
//
// Channels themselves (names, URLs, directories) are values of envlock/channel.hpp
// (resolve_channel); this header loads what they serve.
//
// Repodata format: conda's repodata.json (`info`, `packages` for .tar.bz2, `packages.conda` for
// .conda, `removed`), with CEP-15 `info.base_url` (repodata_version 2) deciding where package
// files are downloaded from. When one package exists as both `.tar.bz2` and `.conda`, only the
// `.conda` record is kept (conda and libsolv do the same; it is the faster format to extract).
//
// Sources, per channel and subdir (the platform's subdir and `noarch`):
//   local directory / file://   `<dir>/<subdir>/repodata.json.zst`, else `repodata.json`; read in
//                               place, never cached.
//   http(s)://                  lazy loads: CEP-16 `repodata_shards.msgpack.zst` first (the
//                               shard index; shards are fetched per name, see below), then
//                               `repodata.json.zst`, then `repodata.json`, each tried when the
//                               server answers 404 for the one before; stored under the repodata
//                               cache (`<cache>/repodata/<key>.json` or `<key>.shards.msgpack.zst`
//                               + `<key>.state.json`), revalidated with If-None-Match /
//                               If-Modified-Since (a 304 reuses the copy). A cached copy whose
//                               bytes no longer hash to the state's `content_hash` is ignored
//                               and fetched again in full. All subdirs of all channels are
//                               fetched in parallel. Eager loads skip the shards.
// Sharded subdirs (CEP-16): the subdir's RepodataIndex is RepodataIndex::from_shards(); a
// shard is fetched when its name is first asked for, or in parallel batches by
// prefetch_shards(), into `<cache>/repodata/shards/<sha256>.msgpack.zst` (content-addressed:
// verified against its name while downloading and when read back, never revalidated).
// repodata.json is never downloaded for a sharded subdir.
// Credentials come from ~/.netrc (or $NETRC) or from `user:pass@` / `/t/<token>/` in the channel
// URL; they are used for the transfer only: records, cache state, errors and messages carry
// redact_url() URLs.

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/channel.hpp"
#include "envlock/fetch.hpp"
#include "envlock/package_record.hpp"
#include "envlock/repodata_index.hpp"
#include "envlock/result.hpp"

namespace envlock {

/// The parsed repodata of one channel subdir.
struct SubdirRepodata {
  std::string channel;       ///< credential-free channel URL (records' `channel`)
  std::string subdir;        ///< linux-64, noarch, ...
  std::string source;        ///< credential-free URL or path the bytes were read from
  /// "sha256:<hex>" of the JSON text (after decompression); empty when loaded lazily (then
  /// index->content_hash() computes it on demand).
  std::string content_hash;
  bool present = true;       ///< false when the channel has no such subdir (records empty)
  std::vector<RepoDataRecord> records;  ///< in file order (.conda preferred over .tar.bz2); empty when lazy
  std::vector<std::string> warnings;    ///< records skipped, with the reason; empty when lazy
                                        ///< (index->warnings() lists those parsed so far)
  /// Set when loaded with RepodataOptions::lazy (and present): the records by name, parsed on
  /// demand (envlock/repodata_index.hpp).
  std::shared_ptr<const RepodataIndex> index;
  /// Set for a CEP-16 sharded subdir: the shard source behind `index`, which prefetch_shards()
  /// asks for every sharded subdir's shards of one walk step in one batch.
  std::shared_ptr<const RepodataShardSource> shards;
};

/// Parses repodata.json text. `source` names it in errors and `channel_url` (credential-free)
/// and `subdir` fill each record's `channel`/`subdir`; `url` is `<base>/<file name>` where base
/// is CEP-15's `info.base_url` (absolute, or relative to the subdir URL) or
/// `<channel_url>/<subdir>`.
/// Errors (ErrorKind::Parse): malformed JSON, named as `source:line:col`; a record that is not an
/// object or lacks `name`/`version` (naming the file name key). A record whose version conda
/// cannot read is skipped with a warning, as conda does.
Result<SubdirRepodata> parse_repodata(std::string_view json, const std::string& source,
                                      const std::string& channel_url, const std::string& subdir);

/// How repodata is obtained.
struct RepodataOptions {
  bool offline = false;              ///< http(s) channels: use the cache only, never the network
  std::filesystem::path cache_dir;   ///< empty: repodata_cache_dir() (envlock/paths.hpp)
  std::filesystem::path netrc_file;  ///< empty: $NETRC, else ~/.netrc
  unsigned max_retries = 3;          ///< retries of a transient HTTP failure (500, 503, reset)
  /// Lazy loading: each present subdir gets a RepodataIndex (records parsed per name on demand)
  /// instead of `records`; local repodata.json and cached HTTP copies are mapped, not read.
  bool lazy = false;
  /// Lazy loading only: keep the index cache (envlock/repodata_index.hpp) in
  /// `<cache_dir>/index`, so that a second load skips the pass over the JSON.
  bool index_cache = true;
  /// Lazy loading only: use CEP-16 sharded repodata when an http(s) channel serves it.
  bool shards = true;
  /// Transfer settings (timeouts, parallelism, progress, credentials file); netrc_file and
  /// max_retries above take precedence over the same fields here. Without fetch.session,
  /// load_repodata() makes one, which the subdirs' shard sources keep: the repodata requests and
  /// every shard batch after them reuse the same connections.
  FetchOptions fetch;
};

/// Loads `subdirs` (each given subdir and `noarch`, deduplicated) of every channel, in channel
/// order then subdir order. A subdir the channel lacks is returned with present = false.
/// With options.lazy, records are left to each subdir's `index`; a damaged record then surfaces
/// as a warning of the index when its name is first asked for, not as an error here.
/// Errors: ErrorKind::Io (a local channel directory that does not exist, or has none of the
/// subdirs), ErrorKind::Network (HTTP failures other than a missing subdir; every subdir of a
/// channel missing: "channel not found"; --offline without a cached copy), ErrorKind::Parse
/// (malformed repodata, `file:line:col`). `where` is the credential-free URL or path.
Result<std::vector<SubdirRepodata>> load_repodata(const std::vector<Channel>& channels,
                                                  const std::vector<std::string>& subdirs,
                                                  const RepodataOptions& options = {});

/// Loads, in parallel batches, the shards that a solve starting from `roots` (package names)
/// can reach through `depends` in the sharded subdirs of `repodata`: a breadth-first walk, one
/// batch per step over every sharded subdir at once (CEP-16 "Fetch process"): one fetch_all of
/// the shards of all sharded subdirs that share a FetchSession, on that session's connections. Names a non-sharded
/// subdir offers are followed too (their records are parsed, as the solver would). Afterwards
/// the solver finds every reachable name already parsed. Errors: the first shard that could
/// not be obtained (ErrorKind::Network, Integrity or Parse, naming the shard's URL).
Status prefetch_shards(const std::vector<SubdirRepodata>& repodata, const std::vector<std::string>& roots);

/// Decompresses a zstd frame sequence (repodata.json.zst). ErrorKind::Parse naming `source` on
/// corrupt input; output is bounded to 4 GiB.
Result<std::string> zstd_decompress(std::string_view compressed, const std::string& source);

}  // namespace envlock
