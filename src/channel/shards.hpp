#pragma once
// Private to src/channel: CEP-16 sharded repodata (https://github.com/conda/ceps, cep-0016.md).
//
//   <subdir>/repodata_shards.msgpack.zst  zstd(msgpack({version: 1,
//                                              info: {base_url, shards_base_url, subdir, ...},
//                                              shards: {<name>: <sha256, 32 raw bytes>}}))
//   <shards_base_url><hex sha256>.msgpack.zst
//                                         zstd(msgpack({packages: {<fn>: record},
//                                              "packages.conda": {<fn>: record}, removed: [fn]}))
//
// A shard is named by the sha256 of its compressed bytes (content-addressed: a cached shard
// whose bytes hash to its name is current by definition and never revalidated). base_url and
// shards_base_url are absolute or relative to the shard index's URL. In records, `sha256` and
// `md5` are raw bytes (hex strings are accepted too, as conda's test data has them).
// msgpack is read with msgpack-cxx (Debian libmsgpack-cxx-dev), zstd with libzstd.
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "envlock/fetch.hpp"
#include "envlock/repodata_index.hpp"
#include "envlock/result.hpp"

namespace envlock::detail {

/// The decoded shard index.
struct ShardIndex {
  std::string base_url;         ///< info.base_url as written (may be empty or relative)
  std::string shards_base_url;  ///< info.shards_base_url as written (may be empty or relative)
  /// (name, lower-case hex sha256), sorted by name, unique.
  std::vector<std::pair<std::string, std::string>> shards;
};

/// Decodes `repodata_shards.msgpack.zst` bytes. Errors (ErrorKind::Parse, where = `source`):
/// corrupt zstd, msgpack that is not a map, `shards` missing or not a map of name -> 32 bytes.
Result<ShardIndex> parse_shard_index(std::string_view compressed, const std::string& source);

/// Decodes one shard into the text of a repodata.json holding its `packages` and
/// `packages.conda` (hash bytes as hex), with `info.base_url` = `base_url` when not empty.
/// Errors (ErrorKind::Parse, where = `source`): corrupt zstd, not a map, a record that is not a
/// map, a value msgpack types cannot give JSON (ext types, non-string keys).
Result<std::string> shard_to_repodata_json(std::string_view compressed, const std::string& source,
                                           const std::string& base_url);

/// A CEP-16 `shards_base_url` or `base_url` resolved against the shard index's URL: resolve_url()
/// (envlock/url.hpp, RFC 3986 section 5.2), except that an empty reference names the index's
/// folder (`.`), as an empty `shards_base_url` means the shards sit beside the index.
/// Example: ("https://h/c/linux-64/repodata_shards.msgpack.zst", "") -> "https://h/c/linux-64/".
std::string resolve_shard_url(const std::string& index_url, const std::string& reference);

/// A shard source over http(s):// or file://: shards are fetched through envlock/fetch.hpp
/// (with `options`: credentials, retries, timeouts) into `cache_dir/<hex>.msgpack.zst`, verified
/// against their hash while streaming; a cached shard is used when its bytes hash to its name
/// and fetched again otherwise. `index_url` may carry credentials (they stay in memory);
/// `public_index_url` names the index in messages.
std::shared_ptr<const RepodataShardSource> make_shard_source(ShardIndex index, const std::string& index_url,
                                                             const std::string& public_index_url,
                                                             std::string index_hash,
                                                             std::filesystem::path cache_dir, FetchOptions options);

/// Makes the shards of `names` available in every source in `sources` (made by
/// make_shard_source) with one fetch_all per FetchSession among them: one step of the walk,
/// for every sharded subdir at once. Shards cached or already fetched are not asked for again.
/// Errors: the first shard that could not be obtained, as RepodataShardSource::prefetch.
Status prefetch_together(const std::vector<const RepodataShardSource*>& sources,
                         const std::vector<std::string>& names);

}  // namespace envlock::detail
