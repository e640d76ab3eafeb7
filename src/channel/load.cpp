// load_repodata: every subdir of every channel, from local directories or over HTTP (through
// envlock/fetch.hpp, in parallel) with a revalidated cache.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>
#include <unistd.h>

#include "envlock/channel.hpp"
#include "envlock/fetch.hpp"
#include "envlock/hash.hpp"
#include "envlock/paths.hpp"
#include "envlock/url.hpp"

namespace envlock {

namespace {

namespace fs = std::filesystem;

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

/// Writes `content` to `path` through a temporary file in the same folder and a rename.
Status write_atomic(const fs::path& path, std::string_view content) {
  fs::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return Error{ErrorKind::Io, path.string(), "cannot write the repodata cache", "",
                   "check free space and permissions of the cache directory (ENVLOCK_CACHE_DIR)"};
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Error{ErrorKind::Io, path.string(), "cannot replace the cached repodata: " + ec.message(), "", ""};
  }
  return ok_status();
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
  fs::path json;   ///< the decompressed repodata.json text
  fs::path state;  ///< CacheState as JSON
  fs::path download;
};

CacheEntry cache_entry(const fs::path& dir, const std::string& public_channel, const std::string& subdir) {
  std::string key = hash_bytes(public_channel + "|" + subdir, HashAlgorithm::Sha256).substr(0, 20);
  return {dir / (key + ".json"), dir / (key + ".state.json"), dir / (key + ".download")};
}

std::optional<CacheState> read_state(const CacheEntry& e) {
  auto text = read_file(e.state);
  if (!text) return std::nullopt;
  try {
    auto j = nlohmann::json::parse(*text);
    CacheState s;
    s.url = j.value("url", "");
    s.file = j.value("file", "");
    s.etag = j.value("etag", "");
    s.last_modified = j.value("last_modified", "");
    s.content_hash = j.value("content_hash", "");
    std::error_code ec;
    if (s.file.empty() || !fs::is_regular_file(e.json, ec)) return std::nullopt;
    return s;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a damaged state file only costs a fresh download
  }
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
  std::string file;      ///< representation requested in the current round
  bool done = false;
};

/// Turns a finished download (or a 304) into parsed repodata and an updated cache.
Result<SubdirRepodata> finish_remote(Remote& r, const FetchResult& got, const RepodataOptions& options) {
  std::string text;
  CacheState st;
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
                                                  const RepodataOptions& options) {
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
      Remote r;
      r.slot = ci * wanted.size() + si;
      r.channel = &ch;
      r.subdir = wanted[si];
      r.cache = cache_entry(cache_dir, ch.public_url(), wanted[si]);
      r.state = read_state(r.cache);
      remotes.push_back(std::move(r));
    }
  }

  if (!remotes.empty()) {
    if (options.offline) {
      for (auto& r : remotes) {
        if (!r.state)
          return Error{ErrorKind::Network, url_join(r.channel->public_url(), r.subdir),
                       "no cached repodata (--offline)", "",
                       "run once without --offline to fill the repodata cache"};
        if (options.lazy) {
          auto lazy = load_lazy(r.channel->public_url(), r.subdir,
                                url_join(r.channel->public_url(), r.subdir + "/" + r.state->file), options, r.cache.json);
          if (!lazy) return lazy.error();
          slots[r.slot] = std::move(*lazy);
          continue;
        }
        auto text = read_file(r.cache.json);
        if (!text) return text.error();
        auto parsed = parse_repodata(*text, url_join(r.channel->public_url(), r.subdir + "/" + r.state->file),
                                     r.channel->public_url(), r.subdir);
        if (!parsed) return parsed.error();
        slots[r.slot] = std::move(*parsed);
      }
    } else {
      std::error_code ec;
      fs::create_directories(cache_dir, ec);
      if (ec)
        return Error{ErrorKind::Io, cache_dir.string(), "cannot create the repodata cache: " + ec.message(), "",
                     "set ENVLOCK_CACHE_DIR to a writable folder"};
      FetchOptions fo;
      fo.netrc_file = options.netrc_file;
      fo.max_retries = options.max_retries;
      // Round 1: repodata.json.zst (or the representation the cache knows the server has);
      // round 2: repodata.json where the .zst is missing.
      std::vector<Remote*> round;
      for (auto& r : remotes) round.push_back(&r);
      for (int pass = 0; pass < 2 && !round.empty(); ++pass) {
        std::vector<FetchRequest> reqs;
        for (Remote* r : round) {
          std::string file = pass == 0 ? (r->state ? r->state->file : std::string(kZst)) : std::string(kJson);
          reqs.push_back(request_for(*r, file));
        }
        auto results = fetch_all(reqs, fo);
        std::vector<Remote*> next;
        for (std::size_t k = 0; k < round.size(); ++k) {
          Remote& r = *round[k];
          if (!results[k]) {
            const Error& err = results[k].error();
            if (is_missing(err) && r.file == kZst && pass == 0) {
              next.push_back(&r);
              continue;
            }
            if (is_missing(err)) {
              SubdirRepodata absent;
              absent.channel = r.channel->public_url();
              absent.subdir = r.subdir;
              absent.source = url_join(r.channel->public_url(), r.subdir + "/" + kJson);
              absent.present = false;
              slots[r.slot] = std::move(absent);
              continue;
            }
            return err;
          }
          auto parsed = finish_remote(r, *results[k], options);
          if (!parsed) return parsed.error();
          slots[r.slot] = std::move(*parsed);
        }
        round = std::move(next);
      }
    }
  }

  std::vector<SubdirRepodata> out;
  for (std::size_t ci = 0; ci < channels.size(); ++ci) {
    bool any = false;
    for (std::size_t si = 0; si < wanted.size(); ++si) any = any || slots[ci * wanted.size() + si]->present;
    if (!any) {
      std::string list;
      for (const auto& s : wanted) list += (list.empty() ? "" : ", ") + s;
      const Channel& ch = channels[ci];
      bool local = ch.kind == Channel::Kind::LocalDirectory;
      return Error{local ? ErrorKind::Io : ErrorKind::Network, ch.public_url(),
                   "channel not found: it has no repodata.json for " + list,
                   ch.location.file.empty() ? "" : "  declared at " + ch.location.to_string(),
                   local ? "a channel directory holds <subdir>/repodata.json; index it (conda index) first"
                         : "check the channel name or URL; private channels need credentials in ~/.netrc"};
    }
    for (std::size_t si = 0; si < wanted.size(); ++si) out.push_back(std::move(*slots[ci * wanted.size() + si]));
  }
  return out;
}

}  // namespace envlock
