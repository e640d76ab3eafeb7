// load_repodata: every subdir of every channel, from local directories or over HTTP (through
// envlock/fetch.hpp, in parallel) with a revalidated cache.
#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <set>
#include <system_error>
#include <unistd.h>

#include "envlock/fetch.hpp"
#include "envlock/atomic_file.hpp"
#include "envlock/hash.hpp"
#include "envlock/paths.hpp"
#include "envlock/repodata.hpp"
#include "envlock/url.hpp"
#include "shards.hpp"

namespace envlock {

namespace {

namespace fs = std::filesystem;

constexpr const char* kShards = "repodata_shards.msgpack.zst";
constexpr const char* kZst = "repodata.json.zst";
constexpr const char* kJson = "repodata.json";

Result<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{ErrorKind::Io, path.string(), "cannot read file", "", "check that the file exists and is readable"};
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Error{ErrorKind::Io, path.string(), "error while reading file", "", ""};
  return ss.str();
}

/// Writes `content` to `path` through a temporary file in the same folder and a rename, unsynced:
/// a repodata cache a crash loses is fetched again (envlock/atomic_file.hpp).
Status write_atomic(const fs::path& path, std::string_view content) {
  return write_file_atomic(path, content, {.mode = 0644, .follow_symlink = false, .sync = false});
}

/// Where lazily loaded subdirs keep their index cache; empty: none.
fs::path index_cache_dir(const RepodataOptions& options) {
  if (!options.lazy || !options.index_cache) return {};
  return (options.cache_dir.empty() ? repodata_cache_dir() : options.cache_dir) / "index";
}

/// A lazily loaded subdir: the JSON file mapped (`json_file`), or `text` owned (decompressed
/// from `identity`).
Result<SubdirRepodata> load_lazy(const std::string& channel_url, const std::string& subdir, const std::string& source,
                                 const RepodataOptions& options, const fs::path& json_file, std::string* text = nullptr,
                                 const fs::path& identity = {}) {
  RepodataIndexOptions o;
  o.source = source;
  o.channel_url = channel_url;
  o.subdir = subdir;
  o.cache_dir = index_cache_dir(options);
  o.identity_file = identity;
  auto index = text != nullptr ? RepodataIndex::from_text(std::move(*text), o) : RepodataIndex::open_file(json_file, o);
  if (!index) return index.error();
  SubdirRepodata out;
  out.channel = (*index)->channel();
  out.subdir = subdir;
  out.source = (*index)->source();
  out.index = std::shared_ptr<const RepodataIndex>(std::move(*index));
  return out;
}

/// Reads `<dir>/repodata.json.zst` or `<dir>/repodata.json` of a local channel subdir.
Result<SubdirRepodata> load_local(const Channel& ch, const std::string& subdir, const RepodataOptions& options) {
  fs::path dir = ch.local_path() / subdir;
  std::error_code ec;
  if (fs::is_regular_file(dir / kZst, ec)) {
    auto raw = read_file(dir / kZst);
    if (!raw) return raw.error();
    auto text = zstd_decompress(*raw, (dir / kZst).string());
    if (!text) return text.error();
    if (options.lazy)
      return load_lazy(ch.public_url(), subdir, (dir / kZst).string(), options, {}, &*text, dir / kZst);
    return parse_repodata(*text, (dir / kZst).string(), ch.public_url(), subdir);
  }
  if (fs::is_regular_file(dir / kJson, ec)) {
    if (options.lazy) return load_lazy(ch.public_url(), subdir, (dir / kJson).string(), options, dir / kJson);
    auto text = read_file(dir / kJson);
    if (!text) return text.error();
    return parse_repodata(*text, (dir / kJson).string(), ch.public_url(), subdir);
  }
  SubdirRepodata absent;
  absent.channel = ch.public_url();
  absent.subdir = subdir;
  absent.source = (dir / kJson).string();
  absent.present = false;
  return absent;
}

/// What the cache remembers about one channel subdir.
struct CacheState {
  std::string url;            ///< credential-free URL of the representation fetched
  std::string file;           ///< repodata.json.zst or repodata.json
  std::string etag;
  std::string last_modified;
  std::string content_hash;   ///< "sha256:<hex>" of the cached JSON text
};

struct CacheEntry {
  fs::path json;    ///< the decompressed repodata.json text
  fs::path shards;  ///< the shard index, as downloaded (compressed)
  fs::path state;   ///< CacheState as JSON
  fs::path download;
  /// The cached bytes of representation `file`.
  [[nodiscard]] const fs::path& data(const std::string& file) const { return file == kShards ? shards : json; }
};

CacheEntry cache_entry(const fs::path& dir, const std::string& public_channel, const std::string& subdir) {
  std::string key = hash_bytes(public_channel + "|" + subdir, HashAlgorithm::Sha256).substr(0, 20);
  return {dir / (key + ".json"), dir / (key + ".shards.msgpack.zst"), dir / (key + ".state.json"),
          dir / (key + ".download")};
}

/// A cache state, and whether the cached bytes still hash to what it recorded.
struct StateRead {
  std::optional<CacheState> state;  ///< set only when the copy is intact
  bool damaged = false;             ///< a state exists but its copy is missing or altered
};

StateRead read_state(const CacheEntry& e) {
  auto text = read_file(e.state);
  if (!text) return {};
  CacheState s;
  try {
    auto j = nlohmann::json::parse(*text);
    s.url = j.value("url", "");
    s.file = j.value("file", "");
    s.etag = j.value("etag", "");
    s.last_modified = j.value("last_modified", "");
    s.content_hash = j.value("content_hash", "");
  } catch (const nlohmann::json::exception&) {
    return {std::nullopt, true};  // a damaged state file only costs a fresh download
  }
  if (s.file != kShards && s.file != kZst && s.file != kJson) return {std::nullopt, true};
  // The copy is trusted only while its bytes hash to the state's record: a truncated or
  // altered cache is fetched again in full (no If-None-Match, whatever a 304 would say).
  auto digest = hash_file(e.data(s.file), HashAlgorithm::Sha256);
  if (!digest || "sha256:" + *digest != s.content_hash) return {std::nullopt, true};
  return {std::move(s), false};
}

Status write_state(const CacheEntry& e, const CacheState& s) {
  nlohmann::json j = {{"url", s.url},
                      {"file", s.file},
                      {"etag", s.etag},
                      {"last_modified", s.last_modified},
                      {"content_hash", s.content_hash}};
  return write_atomic(e.state, j.dump(2) + "\n");
}

bool is_missing(const Error& e) {
  return e.kind == ErrorKind::Network && (e.http_status == 404 || e.http_status == 410);
}

/// One http(s) channel subdir being fetched.
struct Remote {
  std::size_t slot = 0;  ///< index in the output
  const Channel* channel = nullptr;
  std::string subdir;
  CacheEntry cache;
  std::optional<CacheState> state;
  bool damaged = false;  ///< the cache held a copy that no longer matched its hash
  std::string file;      ///< representation requested in the current round
  bool done = false;
};

/// How repodata and shards are transferred.
FetchOptions repodata_fetch_options(const RepodataOptions& options) {
  FetchOptions fo = options.fetch;
  fo.netrc_file = options.netrc_file;
  fo.max_retries = options.max_retries;
  return fo;
}

/// Credential-free URL of a subdir's file.
std::string public_file_url(const Remote& r, const std::string& file) {
  return url_join(r.channel->public_url(), r.subdir + "/" + file);
}

/// A sharded subdir from the cached (or just downloaded) shard index.
Result<SubdirRepodata> load_sharded(const Remote& r, const CacheState& st, const RepodataOptions& options,
                                    const fs::path& cache_dir) {
  auto raw = read_file(r.cache.shards);
  if (!raw) return raw.error();
  const std::string source = public_file_url(r, kShards);
  auto index = detail::parse_shard_index(*raw, source);
  if (!index) return index.error();
  auto shards = detail::make_shard_source(std::move(*index), url_join(r.channel->url, r.subdir + "/" + kShards), source,
                                          st.content_hash, cache_dir / "shards", repodata_fetch_options(options));
  RepodataIndexOptions o;
  o.source = source;
  o.channel_url = r.channel->public_url();
  o.subdir = r.subdir;
  SubdirRepodata out;
  out.channel = r.channel->public_url();
  out.subdir = r.subdir;
  out.source = source;
  out.shards = shards;
  out.index = std::shared_ptr<const RepodataIndex>(RepodataIndex::from_shards(std::move(shards), o));
  return out;
}

/// Turns a finished download (or a 304) into parsed repodata and an updated cache.
Result<SubdirRepodata> finish_remote(Remote& r, const FetchResult& got, const RepodataOptions& options,
                                     const fs::path& cache_dir) {
  std::string text;
  CacheState st;
  if (r.file == kShards) {
    if (got.not_modified && r.state) return load_sharded(r, *r.state, options, cache_dir);
    auto digest = hash_file(r.cache.download, HashAlgorithm::Sha256);
    if (!digest) return digest.error();
    st.url = got.url;
    st.file = kShards;
    st.etag = got.etag;
    st.last_modified = got.last_modified;
    st.content_hash = "sha256:" + *digest;
    std::error_code ec;
    fs::rename(r.cache.download, r.cache.shards, ec);
    if (ec) return Error{ErrorKind::Io, r.cache.shards.string(), "cannot store the shard index: " + ec.message()};
    if (auto w = write_state(r.cache, st); !w) return w.error();
    return load_sharded(r, st, options, cache_dir);
  }
  if (got.not_modified && r.state && options.lazy) {
    return load_lazy(r.channel->public_url(), r.subdir,
                     url_join(r.channel->public_url(), r.subdir + "/" + r.state->file), options, r.cache.json);
  }
  if (got.not_modified && r.state) {
    auto cached = read_file(r.cache.json);
    if (!cached) return cached.error();
    text = std::move(*cached);
    st = *r.state;
  } else {
    auto raw = read_file(r.cache.download);
    std::error_code ec;
    fs::remove(r.cache.download, ec);
    if (!raw) return raw.error();
    if (r.file == kZst) {
      auto plain = zstd_decompress(*raw, got.url);
      if (!plain) return plain.error();
      text = std::move(*plain);
    } else {
      text = std::move(*raw);
    }
    st.url = got.url;
    st.file = r.file;
    st.etag = got.etag;
    st.last_modified = got.last_modified;
    st.content_hash = "sha256:" + hash_bytes(text, HashAlgorithm::Sha256);
    if (auto w = write_atomic(r.cache.json, text); !w) return w.error();
    if (auto w = write_state(r.cache, st); !w) return w.error();
    if (options.lazy)
      return load_lazy(r.channel->public_url(), r.subdir, url_join(r.channel->public_url(), r.subdir + "/" + st.file),
                       options, r.cache.json);
  }
  return parse_repodata(text, url_join(r.channel->public_url(), r.subdir + "/" + st.file), r.channel->public_url(),
                        r.subdir);
}

FetchRequest request_for(Remote& r, const std::string& file) {
  r.file = file;
  FetchRequest req;
  req.url = url_join(r.channel->url, r.subdir + "/" + file);
  req.destination = r.cache.download;
  req.accept_encoding = AcceptEncoding::Any;
  req.label = r.subdir + "/" + file;
  if (r.state && r.state->file == file) {
    req.if_none_match = r.state->etag;
    req.if_modified_since = r.state->last_modified;
  }
  return req;
}

}  // namespace

Result<std::vector<SubdirRepodata>> load_repodata(const std::vector<Channel>& channels,
                                                  const std::vector<std::string>& subdirs,
                                                  const RepodataOptions& given) {
  // One session for every transfer of this load: the repodata rounds, then each shard batch
  // (the shard sources keep it), on the same connections.
  RepodataOptions options = given;
  if (!options.fetch.session) options.fetch.session = make_fetch_session();
  std::vector<std::string> wanted;
  for (const auto& s : subdirs)
    if (std::find(wanted.begin(), wanted.end(), s) == wanted.end()) wanted.push_back(s);
  if (std::find(wanted.begin(), wanted.end(), "noarch") == wanted.end()) wanted.push_back("noarch");

  std::vector<std::optional<SubdirRepodata>> slots(channels.size() * wanted.size());
  std::vector<Remote> remotes;
  fs::path cache_dir = options.cache_dir.empty() ? repodata_cache_dir() : options.cache_dir;

  for (std::size_t ci = 0; ci < channels.size(); ++ci) {
    const Channel& ch = channels[ci];
    if (ch.kind == Channel::Kind::LocalDirectory) {
      std::error_code ec;
      if (!fs::is_directory(ch.local_path(), ec))
        return Error{ErrorKind::Io, ch.local_path().string(), "channel directory does not exist",  // the folder as the user knows it
                     ch.location.file.empty() ? "" : "  declared at " + ch.location.to_string(),
                     "check the path (relative paths are resolved against the manifest's folder)"};
      for (std::size_t si = 0; si < wanted.size(); ++si) {
        auto loaded = load_local(ch, wanted[si], options);
        if (!loaded) return loaded.error();
        slots[ci * wanted.size() + si] = std::move(*loaded);
      }
      continue;
    }
    for (std::size_t si = 0; si < wanted.size(); ++si) {
      if (!ch.subdirs.empty() && std::find(ch.subdirs.begin(), ch.subdirs.end(), wanted[si]) == ch.subdirs.end()) {
        SubdirRepodata skipped;  // the manifest says the channel does not serve it
        skipped.channel = ch.public_url();
        skipped.subdir = wanted[si];
        skipped.source = url_join(ch.public_url(), wanted[si] + "/" + kJson);
        skipped.present = false;
        slots[ci * wanted.size() + si] = std::move(skipped);
        continue;
      }
      Remote r;
      r.slot = ci * wanted.size() + si;
      r.channel = &ch;
      r.subdir = wanted[si];
      r.cache = cache_entry(cache_dir, ch.public_url(), wanted[si]);
      StateRead sr = read_state(r.cache);
      r.state = std::move(sr.state);
      r.damaged = sr.damaged;
      if (r.state && r.state->file == kShards && !options.lazy) r.state.reset();  // eager loads read JSON
      remotes.push_back(std::move(r));
    }
  }

  if (!remotes.empty()) {
    if (options.offline) {
      for (auto& r : remotes) {
        if (!r.state)
          return Error{ErrorKind::Network, url_join(r.channel->public_url(), r.subdir),
                       r.damaged ? "the cached repodata is damaged: its bytes no longer match the hash in its "
                                   "state file (--offline)"
                                 : "no cached repodata (--offline)",
                       "", "run once without --offline to fill the repodata cache"};
        if (r.state->file == kShards) {
          auto sharded = load_sharded(r, *r.state, options, cache_dir);
          if (!sharded) return sharded.error();
          slots[r.slot] = std::move(*sharded);
          continue;
        }
        if (options.lazy) {
          auto lazy = load_lazy(r.channel->public_url(), r.subdir, public_file_url(r, r.state->file), options,
                                r.cache.json);
          if (!lazy) return lazy.error();
          slots[r.slot] = std::move(*lazy);
          continue;
        }
        auto text = read_file(r.cache.json);
        if (!text) return text.error();
        auto parsed = parse_repodata(*text, public_file_url(r, r.state->file), r.channel->public_url(), r.subdir);
        if (!parsed) return parsed.error();
        slots[r.slot] = std::move(*parsed);
      }
    } else {
      std::error_code ec;
      fs::create_directories(cache_dir, ec);
      if (ec)
        return Error{ErrorKind::Io, cache_dir.string(), "cannot create the repodata cache: " + ec.message(), "",
                     "set ENVLOCK_CACHE_DIR to a writable folder"};
      FetchOptions fo = repodata_fetch_options(options);
      // The representations, best first: CEP-16 shards (lazy loads only: the solver asks for
      // names), repodata.json.zst, repodata.json. Each round asks every remote for its current
      // one; a 404 moves a remote to the next. A cached state starts at the file it names.
      std::vector<std::string> order;
      if (options.lazy && options.shards) order.emplace_back(kShards);
      order.emplace_back(kZst);
      order.emplace_back(kJson);
      std::map<const Remote*, std::size_t> at;
      std::vector<Remote*> round;
      for (auto& r : remotes) {
        std::size_t i = 0;
        if (r.state)
          if (auto it = std::find(order.begin(), order.end(), r.state->file); it != order.end())
            i = static_cast<std::size_t>(it - order.begin());
        at[&r] = i;
        round.push_back(&r);
      }
      while (!round.empty()) {
        std::vector<FetchRequest> reqs;
        for (Remote* r : round) reqs.push_back(request_for(*r, order[at[r]]));
        auto results = fetch_all(reqs, fo);
        std::vector<Remote*> next;
        for (std::size_t k = 0; k < round.size(); ++k) {
          Remote& r = *round[k];
          if (!results[k]) {
            const Error& err = results[k].error();
            if (is_missing(err) && at[&r] + 1 < order.size()) {
              ++at[&r];
              next.push_back(&r);
              continue;
            }
            if (is_missing(err)) {
              SubdirRepodata absent;
              absent.channel = r.channel->public_url();
              absent.subdir = r.subdir;
              absent.source = public_file_url(r, kJson);
              absent.present = false;
              slots[r.slot] = std::move(absent);
              continue;
            }
            return err;
          }
          auto parsed = finish_remote(r, *results[k], options, cache_dir);
          if (!parsed) return parsed.error();
          slots[r.slot] = std::move(*parsed);
        }
        round = std::move(next);
      }
    }
  }

  std::vector<SubdirRepodata> out;
  for (std::size_t ci = 0; ci < channels.size(); ++ci) {
    const Channel& ch = channels[ci];
    bool any = false;
    for (std::size_t si = 0; si < wanted.size(); ++si) any = any || slots[ci * wanted.size() + si]->present;
    any = any || !ch.subdirs.empty();  // the manifest said which subdirs it has
    if (!any) {
      std::string list;
      for (const auto& s : wanted) list += (list.empty() ? "" : ", ") + s;
      bool local = ch.kind == Channel::Kind::LocalDirectory;
      return Error{local ? ErrorKind::Io : ErrorKind::Network, ch.public_url(),
                   "channel not found: it has no repodata.json for " + list,
                   ch.location.file.empty() ? "" : "  declared at " + ch.location.to_string(),
                   local ? "a channel directory holds <subdir>/repodata.json; index it (conda index) first"
                         : "check the channel name or URL; private channels need credentials in ~/.netrc"};
    }
    // conda (gateways/repodata, UnavailableInvalidChannel): a channel must serve noarch; a
    // platform subdir it lacks is empty. A channel listing its subdirs is taken at its word.
    if (ch.kind != Channel::Kind::LocalDirectory && ch.subdirs.empty()) {
      const auto na = static_cast<std::size_t>(std::find(wanted.begin(), wanted.end(), "noarch") - wanted.begin());
      const SubdirRepodata& noarch = *slots[ci * wanted.size() + na];
      if (!noarch.present)
        return Error{ErrorKind::Network, ch.public_url(),
                     "channel unavailable or invalid: the server has no noarch/repodata.json (HTTP 404)",
                     ch.location.file.empty() ? "" : "  declared at " + ch.location.to_string(),
                     "check the channel URL; a channel that serves no noarch subdir can say so in the "
                     "manifest: {url: " + ch.public_url() + ", subdirs: [" + wanted.front() + "]}"};
    }
    for (std::size_t si = 0; si < wanted.size(); ++si) out.push_back(std::move(*slots[ci * wanted.size() + si]));
  }
  return out;
}

Status prefetch_shards(const std::vector<SubdirRepodata>& repodata, const std::vector<std::string>& roots) {
  std::vector<const RepodataIndex*> indexes;
  bool any_sharded = false;
  for (const auto& sd : repodata)
    if (sd.present && sd.index) {
      indexes.push_back(sd.index.get());
      any_sharded = any_sharded || sd.index->sharded();
    }
  if (!any_sharded) return ok_status();
  std::vector<const RepodataShardSource*> sources;
  for (const auto& sd : repodata)
    if (sd.present && sd.shards) sources.push_back(sd.shards.get());
  std::set<std::string> seen(roots.begin(), roots.end());
  std::vector<std::string> level(seen.begin(), seen.end());
  while (!level.empty()) {
    // One batch for the step, every sharded subdir's shards together (on their session's
    // connections); then each subdir parses what it got and names what it depends on.
    if (auto st = detail::prefetch_together(sources, level); !st) return st.error();
    std::vector<Result<std::vector<std::string>>> found;
    found.reserve(indexes.size());
    for (const RepodataIndex* index : indexes) found.push_back(index->load_names(level));
    std::vector<std::string> next;
    for (auto& f : found) {
      if (!f) return f.error();
      for (auto& n : *f)
        if (seen.insert(n).second) next.push_back(n);
    }
    level = std::move(next);
  }
  return ok_status();
}

}  // namespace envlock
