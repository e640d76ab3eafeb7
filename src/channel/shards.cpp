// CEP-16 sharded repodata: the shard index and shards (msgpack-cxx + zstd), and a shard source
// that fetches shards into a content-addressed cache. See shards.hpp.
#include "shards.hpp"

#include <msgpack.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "envlock/encoding.hpp"
#include "envlock/hash.hpp"
#include "envlock/text.hpp"
#include "envlock/repodata.hpp"
#include "envlock/url.hpp"

namespace envlock::detail {

namespace {

namespace fs = std::filesystem;

Error bad_shard(const std::string& source, const std::string& what) {
  return Error{ErrorKind::Parse, redact_url(source), "not CEP-16 sharded repodata: " + what, "",
               "the channel serves a damaged file; report it to the channel's maintainers"};
}

std::string hex_of(const char* data, std::size_t n) { return hex_encode(std::string_view(data, n)); }

std::string_view str_of(const msgpack::object& o) { return {o.via.str.ptr, o.via.str.size}; }

/// A msgpack value as JSON: binary becomes lower-case hex (CEP-16 stores sha256/md5 so).
bool to_json(const msgpack::object& o, nlohmann::json& out, int depth = 0) {
  if (depth > 64) return false;
  switch (o.type) {
    case msgpack::type::NIL: out = nullptr; return true;
    case msgpack::type::BOOLEAN: out = o.via.boolean; return true;
    case msgpack::type::POSITIVE_INTEGER: out = o.via.u64; return true;
    case msgpack::type::NEGATIVE_INTEGER: out = o.via.i64; return true;
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: out = o.via.f64; return true;
    case msgpack::type::STR: out = std::string(str_of(o)); return true;
    case msgpack::type::BIN: out = hex_of(o.via.bin.ptr, o.via.bin.size); return true;
    case msgpack::type::ARRAY: {
      out = nlohmann::json::array();
      for (std::uint32_t i = 0; i < o.via.array.size; ++i) {
        nlohmann::json v;
        if (!to_json(o.via.array.ptr[i], v, depth + 1)) return false;
        out.push_back(std::move(v));
      }
      return true;
    }
    case msgpack::type::MAP: {
      out = nlohmann::json::object();
      for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
        const auto& kv = o.via.map.ptr[i];
        if (kv.key.type != msgpack::type::STR) return false;
        nlohmann::json v;
        if (!to_json(kv.val, v, depth + 1)) return false;
        out[std::string(str_of(kv.key))] = std::move(v);
      }
      return true;
    }
    default: return false;  // EXT
  }
}

const msgpack::object* find_key(const msgpack::object& map, std::string_view key) {
  if (map.type != msgpack::type::MAP) return nullptr;
  for (std::uint32_t i = 0; i < map.via.map.size; ++i) {
    const auto& kv = map.via.map.ptr[i];
    if (kv.key.type == msgpack::type::STR && str_of(kv.key) == key) return &kv.val;
  }
  return nullptr;
}

/// zstd + msgpack; `what` names the file kind in errors.
Result<msgpack::object_handle> unpack(std::string_view compressed, const std::string& source) {
  auto plain = zstd_decompress(compressed, source);
  if (!plain) return plain.error();
  try {
    msgpack::object_handle oh = msgpack::unpack(plain->data(), plain->size());
    // The zone owns copies of strings only when the unpacker was told to; keep the buffer's
    // lifetime out of the question by cloning into the handle's own zone.
    msgpack::object_handle owned = msgpack::clone(oh.get());
    if (owned.get().type != msgpack::type::MAP) return bad_shard(source, "the top level is not a map");
    return owned;
  } catch (const std::exception& e) {
    return bad_shard(source, std::string("msgpack: ") + e.what());
  }
}

Result<std::string> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return Error{ErrorKind::Io, p.string(), "cannot read file"};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Shards over fetch_all into a content-addressed cache.
class FetchedShards final : public RepodataShardSource {
 public:
  FetchedShards(ShardIndex index, std::string shards_base, std::string public_index_url, std::string base_url,
                std::string index_hash, fs::path cache_dir, FetchOptions options)
      : index_(std::move(index)),
        shards_base_(std::move(shards_base)),
        source_(std::move(public_index_url)),
        base_url_(std::move(base_url)),
        hash_(std::move(index_hash)),
        cache_dir_(std::move(cache_dir)),
        options_(std::move(options)) {
    names_.reserve(index_.shards.size());
    for (const auto& [n, h] : index_.shards) names_.emplace_back(n);
  }

  [[nodiscard]] const std::vector<std::string_view>& names() const override { return names_; }
  [[nodiscard]] const std::string& source() const override { return source_; }
  [[nodiscard]] const std::string& index_hash() const override { return hash_; }

  [[nodiscard]] Result<std::string> shard_json(std::string_view name) const override {
    const std::string* hex = hash_of(name);
    if (hex == nullptr) return Error{ErrorKind::Usage, source_, "no shard for '" + std::string(name) + "'"};
    std::string bytes;
    {
      std::lock_guard lock(mu_);
      auto it = ready_.find(*hex);
      if (it != ready_.end()) {
        bytes = std::move(it->second);
        ready_.erase(it);
      }
    }
    if (bytes.empty()) {
      if (auto st = prefetch({std::string(name)}); !st) return st.error();
      std::lock_guard lock(mu_);
      auto it = ready_.find(*hex);
      if (it == ready_.end()) return Error{ErrorKind::Io, url_of(*hex, true), "shard vanished from the cache"};
      bytes = std::move(it->second);
      ready_.erase(it);
    }
    return shard_to_repodata_json(bytes, url_of(*hex, true), base_url_);
  }

  [[nodiscard]] Status prefetch(const std::vector<std::string>& names) const override {
    std::vector<FetchRequest> reqs;
    std::vector<std::string> hexes;
    if (auto st = plan(names, reqs, hexes); !st) return st;
    if (reqs.empty()) return ok_status();
    auto results = fetch_all(reqs, options_);
    for (std::size_t i = 0; i < results.size(); ++i)
      if (auto st = accept(reqs[i], hexes[i], results[i]); !st) return st;
    return ok_status();
  }

  /// Takes the cached shards of `names` into memory and appends a request (and its hash) for
  /// each of the others not fetched yet; creates the cache folder when one is needed.
  [[nodiscard]] Status plan(const std::vector<std::string>& names, std::vector<FetchRequest>& reqs,
                            std::vector<std::string>& hexes) const {
    std::error_code ec;
    const std::size_t first = reqs.size();
    for (const auto& n : names) {
      const std::string* hex = hash_of(n);
      if (hex == nullptr || std::find(hexes.begin() + static_cast<std::ptrdiff_t>(first), hexes.end(), *hex) != hexes.end())
        continue;
      {
        std::lock_guard lock(mu_);
        if (ready_.count(*hex) > 0) continue;
      }
      fs::path file = cache_dir_ / (*hex + ".msgpack.zst");
      if (fs::is_regular_file(file, ec)) {
        // Content-addressed: current when its bytes hash to its name; damaged otherwise.
        auto cached = read_all(file);
        if (cached && hash_bytes(*cached, HashAlgorithm::Sha256) == *hex) {
          std::lock_guard lock(mu_);
          ready_.emplace(*hex, std::move(*cached));
          continue;
        }
        fs::remove(file, ec);
      }
      FetchRequest r;
      r.url = url_of(*hex, false);
      r.destination = file;
      r.sha256 = *hex;
      r.label = "shard of " + n;
      reqs.push_back(std::move(r));
      hexes.push_back(*hex);
    }
    if (reqs.size() == first) return ok_status();
    fs::create_directories(cache_dir_, ec);
    if (ec)
      return Error{ErrorKind::Io, cache_dir_.string(), "cannot create the shard cache: " + ec.message(), "",
                   "set ENVLOCK_CACHE_DIR to a writable folder"};
    return ok_status();
  }

  /// Keeps the shard `hex` that `req` downloaded (or says why it could not be).
  [[nodiscard]] Status accept(const FetchRequest& req, const std::string& hex, const Result<FetchResult>& got) const {
    if (!got) return got.error();
    auto bytes = read_all(req.destination);
    if (!bytes) return bytes.error();
    std::lock_guard lock(mu_);
    ready_.emplace(hex, std::move(*bytes));
    return ok_status();
  }

  [[nodiscard]] const FetchOptions& options() const { return options_; }

 private:
  [[nodiscard]] const std::string* hash_of(std::string_view name) const {
    auto it = std::lower_bound(index_.shards.begin(), index_.shards.end(), name,
                               [](const auto& e, std::string_view n) { return e.first < n; });
    return it == index_.shards.end() || it->first != name ? nullptr : &it->second;
  }
  [[nodiscard]] std::string url_of(const std::string& hex, bool redacted) const {
    std::string u = shards_base_ + hex + ".msgpack.zst";
    return redacted ? redact_url(u) : u;
  }

  ShardIndex index_;
  std::vector<std::string_view> names_;
  std::string shards_base_;  ///< may carry credentials; ends with '/'
  std::string source_;
  std::string base_url_;
  std::string hash_;
  fs::path cache_dir_;
  FetchOptions options_;
  mutable std::mutex mu_;
  mutable std::map<std::string, std::string> ready_;  ///< hex -> compressed shard bytes
};

}  // namespace

Status prefetch_together(const std::vector<const RepodataShardSource*>& sources,
                         const std::vector<std::string>& names) {
  // Sources on one session share one batch; a source without a session is a batch of its own
  // (its options may differ from the others').
  std::vector<std::vector<const FetchedShards*>> groups;
  std::map<const FetchSession*, std::size_t> group_of;
  for (const RepodataShardSource* src : sources) {
    const auto* f = dynamic_cast<const FetchedShards*>(src);
    if (f == nullptr) {
      if (auto st = src->prefetch(names); !st) return st;
      continue;
    }
    const FetchSession* session = f->options().session.get();
    if (session == nullptr) {
      groups.push_back({f});
      continue;
    }
    auto [it, fresh] = group_of.emplace(session, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(f);
  }
  for (const auto& group : groups) {
    std::vector<FetchRequest> reqs;
    // Who takes each request's shard: two subdirs may hold a shard with the same bytes (one
    // file in the cache, so one request).
    std::vector<std::vector<std::pair<const FetchedShards*, std::string>>> takers;
    std::map<fs::path, std::size_t> by_file;
    for (const FetchedShards* f : group) {
      std::vector<FetchRequest> mine;
      std::vector<std::string> hexes;
      if (auto st = f->plan(names, mine, hexes); !st) return st;
      for (std::size_t i = 0; i < mine.size(); ++i) {
        auto [it, fresh] = by_file.emplace(mine[i].destination, reqs.size());
        if (fresh) {
          reqs.push_back(std::move(mine[i]));
          takers.emplace_back();
        }
        takers[it->second].emplace_back(f, std::move(hexes[i]));
      }
    }
    if (reqs.empty()) continue;
    auto results = fetch_all(reqs, group.front()->options());
    for (std::size_t i = 0; i < results.size(); ++i)
      for (const auto& [f, hex] : takers[i])
        if (auto st = f->accept(reqs[i], hex, results[i]); !st) return st;
  }
  return ok_status();
}

std::string resolve_shard_url(const std::string& index_url, const std::string& reference) {
  return resolve_url(index_url, reference.empty() ? "." : reference);
}

Result<ShardIndex> parse_shard_index(std::string_view compressed, const std::string& source) {
  auto oh = unpack(compressed, source);
  if (!oh) return oh.error();
  const msgpack::object& top = oh->get();
  ShardIndex out;
  if (const auto* info = find_key(top, "info"); info != nullptr && info->type == msgpack::type::MAP) {
    if (const auto* b = find_key(*info, "base_url"); b != nullptr && b->type == msgpack::type::STR)
      out.base_url = std::string(str_of(*b));
    if (const auto* b = find_key(*info, "shards_base_url"); b != nullptr && b->type == msgpack::type::STR)
      out.shards_base_url = std::string(str_of(*b));
  }
  const auto* shards = find_key(top, "shards");
  if (shards == nullptr || shards->type != msgpack::type::MAP) return bad_shard(source, "no 'shards' map");
  for (std::uint32_t i = 0; i < shards->via.map.size; ++i) {
    const auto& kv = shards->via.map.ptr[i];
    if (kv.key.type != msgpack::type::STR) return bad_shard(source, "a shard name is not a string");
    std::string name(str_of(kv.key));
    if (kv.val.type == msgpack::type::BIN && kv.val.via.bin.size == 32) {
      out.shards.emplace_back(std::move(name), hex_of(kv.val.via.bin.ptr, 32));
    } else if (kv.val.type == msgpack::type::STR && is_hex_digest(str_of(kv.val), HashAlgorithm::Sha256)) {
      out.shards.emplace_back(std::move(name), ascii_lower(std::string(str_of(kv.val))));
    } else {
      return bad_shard(source, "the shard hash of '" + name + "' is not 32 bytes of sha256");
    }
  }
  std::sort(out.shards.begin(), out.shards.end());
  out.shards.erase(std::unique(out.shards.begin(), out.shards.end(),
                               [](const auto& a, const auto& b) { return a.first == b.first; }),
                   out.shards.end());
  return out;
}

Result<std::string> shard_to_repodata_json(std::string_view compressed, const std::string& source,
                                           const std::string& base_url) {
  auto oh = unpack(compressed, source);
  if (!oh) return oh.error();
  const msgpack::object& top = oh->get();
  nlohmann::json doc = nlohmann::json::object();
  if (!base_url.empty()) doc["info"] = {{"base_url", base_url}};
  for (const char* section : {"packages", "packages.conda"}) {
    const auto* recs = find_key(top, section);
    if (recs == nullptr || recs->type == msgpack::type::NIL) continue;
    nlohmann::json j;
    if (recs->type != msgpack::type::MAP || !to_json(*recs, j))
      return bad_shard(source, std::string("'") + section + "' is not a map of records");
    for (auto& [fn, rec] : j.items())
      if (!rec.is_object()) return bad_shard(source, std::string(section) + "[\"" + fn + "\"] is not a map");
    doc[section] = std::move(j);
  }
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::shared_ptr<const RepodataShardSource> make_shard_source(ShardIndex index, const std::string& index_url,
                                                             const std::string& public_index_url,
                                                             std::string index_hash, fs::path cache_dir,
                                                             FetchOptions options) {
  std::string shards_base = resolve_shard_url(index_url, index.shards_base_url);
  if (!shards_base.ends_with("/")) shards_base += "/";
  // Records' base: absent or empty means the subdir itself (what repodata.json's default gives).
  std::string base;
  if (!index.base_url.empty()) {
    base = redact_url(resolve_shard_url(public_index_url, index.base_url));
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    if (base + "/" == public_index_url.substr(0, public_index_url.rfind('/') + 1)) base.clear();
  }
  return std::make_shared<FetchedShards>(std::move(index), std::move(shards_base), public_index_url, std::move(base),
                                         std::move(index_hash), std::move(cache_dir), std::move(options));
}

}  // namespace envlock::detail
