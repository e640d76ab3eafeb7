// repodata.json -> RepoDataRecords with simdjson (DOM API: one validating pass over the text).
#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <simdjson.h>
#include <zstd.h>

#include "envlock/channel.hpp"
#include "envlock/hash.hpp"
#include "envlock/url.hpp"

namespace envlock {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

/// "line:col" (1-based) of byte `offset` in `text`.
std::string line_col(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

/// A malformed-JSON error with the position nlohmann's parser reports (only run on failure).
Error json_error(std::string_view json, const std::string& source, const std::string& simd_msg) {
  std::size_t byte = 0;
  std::string what = simd_msg;
  try {
    auto parsed = nlohmann::json::parse(json.begin(), json.end());
    (void)parsed.is_null();
  } catch (const nlohmann::json::parse_error& e) {
    byte = e.byte > 0 ? e.byte - 1 : 0;
    what = e.what();
    if (auto p = what.find("syntax error"); p != std::string::npos) what = what.substr(p);
  }
  std::size_t ls = json.rfind('\n', byte == 0 ? 0 : byte - 1);
  ls = (ls == std::string_view::npos) ? 0 : ls + 1;
  std::size_t le = json.find('\n', byte);
  if (le == std::string_view::npos) le = json.size();
  std::string line(json.substr(ls, std::min<std::size_t>(le - ls, 200)));
  std::string caret(std::min<std::size_t>(byte - ls, 200), ' ');
  return Error{ErrorKind::Parse, source + ":" + line_col(json, byte), "malformed repodata JSON: " + what,
               "  " + line + "\n  " + caret + "^",
               "the channel's repodata.json is damaged; re-index the channel or clear the repodata cache"};
}

std::string get_string(element obj, const char* key) {
  std::string_view v;
  if (obj[key].get_string().get(v) == simdjson::SUCCESS) return std::string(v);
  return {};
}

std::optional<std::uint64_t> get_uint(element obj, const char* key) {
  element e;
  if (obj[key].get(e) != simdjson::SUCCESS) return std::nullopt;
  std::uint64_t u;
  if (e.get_uint64().get(u) == simdjson::SUCCESS) return u;
  double d;
  if (e.get_double().get(d) == simdjson::SUCCESS && d >= 0) return static_cast<std::uint64_t>(d);
  return std::nullopt;
}

std::vector<std::string> get_string_list(element obj, const char* key) {
  std::vector<std::string> out;
  simdjson::dom::array arr;
  if (obj[key].get_array().get(arr) != simdjson::SUCCESS) return out;
  for (element e : arr) {
    std::string_view v;
    if (e.get_string().get(v) == simdjson::SUCCESS) out.emplace_back(v);
  }
  return out;
}

/// conda's track_features: a space/comma separated string, or (rarely) a list.
std::vector<std::string> get_features(element obj, const char* key) {
  std::vector<std::string> out;
  std::string_view v;
  if (obj[key].get_string().get(v) == simdjson::SUCCESS) {
    std::string cur;
    for (char c : v) {
      if (c == ' ' || c == ',' || c == '\t') {
        if (!cur.empty()) out.push_back(std::move(cur));
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) out.push_back(std::move(cur));
    return out;
  }
  return get_string_list(obj, key);
}

NoArchKind get_noarch(element obj) {
  element e;
  if (obj["noarch"].get(e) != simdjson::SUCCESS) return NoArchKind::None;
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS) {
    if (s == "python") return NoArchKind::Python;
    if (s == "generic") return NoArchKind::Generic;
    return NoArchKind::None;
  }
  bool b = false;
  if (e.get_bool().get(b) == simdjson::SUCCESS && b) return NoArchKind::Generic;
  return NoArchKind::None;
}

std::string stem_of(std::string_view fn) {
  if (fn.ends_with(".conda")) return std::string(fn.substr(0, fn.size() - 6));
  if (fn.ends_with(".tar.bz2")) return std::string(fn.substr(0, fn.size() - 8));
  return std::string(fn);
}

}  // namespace

Result<SubdirRepodata> parse_repodata(std::string_view json, const std::string& source, const std::string& channel_url,
                                      const std::string& subdir) {
  SubdirRepodata out;
  out.channel = redact_url(channel_url);
  out.subdir = subdir;
  out.source = redact_url(source);
  out.content_hash = "sha256:" + hash_bytes(json, HashAlgorithm::Sha256);

  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  element doc;
  if (auto err = parser.parse(padded).get(doc); err != simdjson::SUCCESS)
    return json_error(json, out.source, simdjson::error_message(err));
  simdjson::dom::object top;
  if (doc.get_object().get(top) != simdjson::SUCCESS)
    return Error{ErrorKind::Parse, out.source + ":1:1", "repodata is not a JSON object", "",
                 "a repodata.json has the keys info, packages and packages.conda"};

  std::string base = url_join(out.channel, subdir);
  element info;
  if (doc["info"].get(info) == simdjson::SUCCESS) {
    std::string base_url = get_string(info, "base_url");
    if (!base_url.empty()) {
      base_url = redact_url(base_url);
      base = base_url.find("://") != std::string::npos ? base_url : url_join(base, base_url);
      while (base.size() > 1 && base.back() == '/') base.pop_back();
    }
  }

  // .conda wins over .tar.bz2 for the same package: read packages.conda first.
  std::map<std::string, std::size_t> seen_stems;
  for (const char* section : {"packages.conda", "packages"}) {
    simdjson::dom::object packages;
    if (doc[section].get_object().get(packages) != simdjson::SUCCESS) continue;
    for (auto field : packages) {
      std::string fn(field.key);
      std::string where = out.source + ": " + section + "[\"" + fn + "\"]";
      simdjson::dom::object obj_check;
      if (field.value.get_object().get(obj_check) != simdjson::SUCCESS)
        return Error{ErrorKind::Parse, where, "package record is not a JSON object", "",
                     "each entry of packages/packages.conda maps a file name to a record object"};
      element obj = field.value;
      RepoDataRecord r;
      r.name = get_string(obj, "name");
      std::string version = get_string(obj, "version");
      if (r.name.empty() || version.empty())
        return Error{ErrorKind::Parse, where, "package record lacks 'name' or 'version'", "",
                     "every repodata record needs name, version and build"};
      for (auto& c : r.name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      auto v = Version::parse(version);
      if (!v) {
        out.warnings.push_back(where + ": skipped, version '" + version + "' is not a conda version");
        continue;
      }
      r.version = std::move(*v);
      r.build = get_string(obj, "build");
      r.build_number = get_uint(obj, "build_number").value_or(0);
      r.subdir = get_string(obj, "subdir");
      if (r.subdir.empty() || r.subdir != subdir) r.subdir = subdir;  // conda: the subdir's own name wins
      r.depends = get_string_list(obj, "depends");
      r.constrains = get_string_list(obj, "constrains");
      r.track_features = get_features(obj, "track_features");
      r.features = get_string(obj, "features");
      r.license = get_string(obj, "license");
      r.license_family = get_string(obj, "license_family");
      r.md5 = get_string(obj, "md5");
      r.sha256 = get_string(obj, "sha256");
      r.size = get_uint(obj, "size");
      if (auto ts = get_uint(obj, "timestamp")) r.timestamp = *ts > 253402300799ULL ? *ts : *ts * 1000;
      r.noarch = get_noarch(obj);
      r.arch = get_string(obj, "arch");
      r.platform = get_string(obj, "platform");
      r.python_site_packages_path = get_string(obj, "python_site_packages_path");
      r.file_name = fn;
      r.url = url_join(base, fn);
      r.channel = out.channel;
      std::string stem = stem_of(fn);
      if (seen_stems.count(stem) > 0) continue;  // the .conda of this package is already in
      seen_stems.emplace(stem, out.records.size());
      out.records.push_back(std::move(r));
    }
  }
  return out;
}

Result<std::string> zstd_decompress(std::string_view compressed, const std::string& source) {
  constexpr std::size_t kMax = std::size_t{4} << 30;
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> ctx(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  std::string out;
  unsigned long long known = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  if (known != ZSTD_CONTENTSIZE_ERROR && known != ZSTD_CONTENTSIZE_UNKNOWN && known < kMax)
    out.reserve(static_cast<std::size_t>(known));
  std::vector<char> buf(ZSTD_DStreamOutSize());
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  std::size_t last = 1;
  for (;;) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    last = ZSTD_decompressStream(ctx.get(), &o, &in);
    if (ZSTD_isError(last))
      return Error{ErrorKind::Parse, redact_url(source), std::string("corrupt zstd data: ") + ZSTD_getErrorName(last), "",
                   "delete the file (or the repodata cache) and fetch it again"};
    out.append(buf.data(), o.pos);
    if (out.size() > kMax)
      return Error{ErrorKind::Parse, redact_url(source), "decompressed repodata exceeds 4 GiB", "", ""};
    if (in.pos >= in.size && o.pos < o.size) break;
  }
  if (last != 0)
    return Error{ErrorKind::Parse, redact_url(source), "truncated zstd data", "",
                 "delete the file (or the repodata cache) and fetch it again"};
  return out;
}

}  // namespace envlock
