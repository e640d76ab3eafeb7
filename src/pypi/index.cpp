// The simple repository API (PEP 503 HTML, PEP 691 JSON, PEP 658/714 metadata) and find-links
// (envlock/pypi_index.hpp), over envlock/fetch.hpp.
#include "envlock/pypi_index.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <system_error>

#include "envlock/extract.hpp"
#include "envlock/hash.hpp"
#include "envlock/paths.hpp"
#include "envlock/pypi_name.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {

std::string html_unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    const std::size_t semi = s.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) {
      out += s[i];
      continue;
    }
    const std::string ent(s.substr(i + 1, semi - i - 1));
    std::string rep;
    if (ent == "lt") rep = "<";
    else if (ent == "gt") rep = ">";
    else if (ent == "amp") rep = "&";
    else if (ent == "quot") rep = "\"";
    else if (ent == "apos") rep = "'";
    else if (ent.size() > 1 && ent[0] == '#') {
      unsigned long cp = 0;
      try {
        cp = (ent[1] == 'x' || ent[1] == 'X') ? std::stoul(ent.substr(2), nullptr, 16) : std::stoul(ent.substr(1));
      } catch (...) {
        cp = 0;
      }
      if (cp > 0 && cp < 0x80) rep = std::string(1, static_cast<char>(cp));
    }
    if (rep.empty()) {
      out += s[i];
      continue;
    }
    out += rep;
    i = semi;
  }
  return out;
}

/// The attributes of one tag's text (`a href="x" data-yanked`), names lower-cased.
std::map<std::string, std::string> attributes(std::string_view tag) {
  std::map<std::string, std::string> out;
  std::size_t i = 0;
  while (i < tag.size() && !std::isspace(static_cast<unsigned char>(tag[i]))) ++i;  // the tag name
  while (i < tag.size()) {
    while (i < tag.size() && (std::isspace(static_cast<unsigned char>(tag[i])) || tag[i] == '/')) ++i;
    const std::size_t ns = i;
    while (i < tag.size() && !std::isspace(static_cast<unsigned char>(tag[i])) && tag[i] != '=' && tag[i] != '/') ++i;
    std::string name = ascii_lower(std::string(tag.substr(ns, i - ns)));
    if (name.empty()) {
      ++i;
      continue;
    }
    while (i < tag.size() && std::isspace(static_cast<unsigned char>(tag[i]))) ++i;
    std::string value;
    if (i < tag.size() && tag[i] == '=') {
      ++i;
      while (i < tag.size() && std::isspace(static_cast<unsigned char>(tag[i]))) ++i;
      if (i < tag.size() && (tag[i] == '"' || tag[i] == '\'')) {
        const char q = tag[i];
        const std::size_t e = tag.find(q, i + 1);
        value = std::string(tag.substr(i + 1, (e == std::string_view::npos ? tag.size() : e) - i - 1));
        i = e == std::string_view::npos ? tag.size() : e + 1;
      } else {
        const std::size_t vs = i;
        while (i < tag.size() && !std::isspace(static_cast<unsigned char>(tag[i]))) ++i;
        value = std::string(tag.substr(vs, i - vs));
      }
    }
    out.emplace(std::move(name), html_unescape(value));
  }
  return out;
}

std::string last_segment(std::string_view url) {
  url = url.substr(0, url.find_first_of("?#"));
  const std::size_t slash = url.rfind('/');
  return percent_decode(slash == std::string_view::npos ? url : url.substr(slash + 1));
}

/// `sha256=<hex>` from a fragment or an attribute value; "" when there is none.
std::string sha256_of(std::string_view text) {
  const std::size_t at = text.find("sha256=");
  if (at == std::string_view::npos) return "";
  std::string hex(text.substr(at + 7, 64));
  hex = ascii_lower(hex);
  return is_hex_digest(hex, HashAlgorithm::Sha256) ? hex : "";
}

/// The normalised project name a distribution file name carries ("" for none).
std::string project_of(const std::string& file) {
  if (file.ends_with(".whl")) return pep503_normalize(file.substr(0, file.find('-')));
  for (std::string_view ext : {".tar.gz", ".zip", ".tar.bz2", ".tgz", ".tar.xz", ".tar"})
    if (file.ends_with(ext)) {
      const std::string stem = file.substr(0, file.size() - ext.size());
      const std::size_t dash = stem.rfind('-');
      return dash == std::string::npos ? "" : pep503_normalize(stem.substr(0, dash));
    }
  return "";
}

Result<std::string> read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return Error{ErrorKind::Io, p.string(), "cannot read the file", "", ""};
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

std::vector<PypiFile> parse_simple_html(std::string_view html, const std::string& page_url) {
  std::vector<PypiFile> out;
  std::string base = page_url;
  std::size_t i = 0;
  while ((i = html.find('<', i)) != std::string_view::npos) {
    const std::size_t end = html.find('>', i);
    if (end == std::string_view::npos) break;
    const std::string_view tag = html.substr(i + 1, end - i - 1);
    i = end + 1;
    const std::string lower = ascii_lower(std::string(tag.substr(0, 5)));
    if (lower.starts_with("base") && (lower.size() == 4 || std::isspace(static_cast<unsigned char>(lower[4])))) {
      auto attrs = attributes(tag);
      // A base that resolves to no hierarchical URL (`https:!/x`) cannot resolve a relative
      // link: the page's own URL stays the base, as a browser keeps the document's URL then.
      if (auto h = attrs.find("href"); h != attrs.end() && !h->second.empty())
        if (std::string b = resolve_url(page_url, h->second); b.find("://") != std::string::npos) base = std::move(b);
      continue;
    }
    if (!(lower.starts_with("a") && lower.size() > 1 && std::isspace(static_cast<unsigned char>(lower[1])))) continue;
    auto attrs = attributes(tag);
    auto href = attrs.find("href");
    if (href == attrs.end() || href->second.empty()) continue;
    PypiFile f;
    const std::string url = resolve_url(base, href->second);
    const std::size_t hash = url.find('#');
    f.url = url.substr(0, hash);
    if (hash != std::string::npos) f.sha256 = sha256_of(url.substr(hash + 1));
    f.filename = last_segment(f.url);
    if (f.filename.empty()) continue;
    if (auto r = attrs.find("data-requires-python"); r != attrs.end()) f.requires_python = r->second;
    if (attrs.count("data-yanked") > 0) f.yanked = true;
    for (const char* key : {"data-core-metadata", "data-dist-info-metadata"}) {
      auto m = attrs.find(key);
      if (m == attrs.end() || m->second == "false") continue;
      f.has_metadata = true;
      f.metadata_sha256 = sha256_of(m->second);
      break;
    }
    out.push_back(std::move(f));
  }
  return out;
}

Result<std::vector<PypiFile>> parse_simple_json(std::string_view text, const std::string& page_url) {
  auto bad = [&](const std::string& why) {
    return Error{ErrorKind::Parse, redact_url(page_url), "not a PEP 691 simple-API page: " + why, "",
                 "check that the index URL names a simple repository (https://host/simple)"};
  };
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (j.contains("meta") && j["meta"].is_object() && j["meta"].contains("api-version") && j["meta"]["api-version"].is_string()) {
    const std::string v = j["meta"]["api-version"].get<std::string>();
    if (!v.starts_with("1.") && v != "1") return bad("api-version " + v + " (envlock reads 1.x)");
  }
  if (!j.contains("files") || !j["files"].is_array()) return bad("no 'files' list");
  std::vector<PypiFile> out;
  for (const auto& e : j["files"]) {
    if (!e.is_object() || !e.contains("url") || !e["url"].is_string()) continue;
    PypiFile f;
    const std::string url = resolve_url(page_url, e["url"].get<std::string>());
    f.url = url.substr(0, url.find('#'));
    f.filename = e.contains("filename") && e["filename"].is_string() ? e["filename"].get<std::string>() : last_segment(f.url);
    if (e.contains("hashes") && e["hashes"].is_object() && e["hashes"].contains("sha256") && e["hashes"]["sha256"].is_string()) {
      std::string h = ascii_lower(e["hashes"]["sha256"].get<std::string>());
      if (is_hex_digest(h, HashAlgorithm::Sha256)) f.sha256 = h;
    }
    if (e.contains("requires-python") && e["requires-python"].is_string()) f.requires_python = e["requires-python"].get<std::string>();
    if (e.contains("yanked")) f.yanked = (e["yanked"].is_boolean() && e["yanked"].get<bool>()) || e["yanked"].is_string();
    for (const char* key : {"core-metadata", "dist-info-metadata", "data-dist-info-metadata"}) {
      if (!e.contains(key)) continue;
      const auto& m = e[key];
      if (m.is_boolean() && !m.get<bool>()) continue;
      f.has_metadata = true;
      if (m.is_object() && m.contains("sha256") && m["sha256"].is_string()) f.metadata_sha256 = ascii_lower(m["sha256"].get<std::string>());
      break;
    }
    if (e.contains("size") && e["size"].is_number_unsigned()) f.size = e["size"].get<std::uint64_t>();
    out.push_back(std::move(f));
  }
  return out;
}

Result<CoreMetadata> parse_core_metadata(std::string_view text, const std::string& where) {
  CoreMetadata m;
  std::string key, value;
  auto flush = [&] {
    if (key.empty()) return;
    const std::string k = ascii_lower(key);
    const std::string v = trim(value);
    if (k == "name") m.name = v;
    else if (k == "version") m.version = v;
    else if (k == "requires-python") m.requires_python = v;
    else if (k == "requires-dist") m.requires_dist.push_back(v);
    else if (k == "provides-extra") m.provides_extra.push_back(v);
    key.clear();
    value.clear();
  };
  std::size_t s = 0;
  while (s < text.size()) {
    std::size_t e = text.find('\n', s);
    if (e == std::string_view::npos) e = text.size();
    std::string_view line = text.substr(s, e - s);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    s = e + 1;
    if (line.empty()) break;  // the body follows
    if (line[0] == ' ' || line[0] == '\t') {
      value += " " + trim(line);
      continue;
    }
    flush();
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    key = std::string(line.substr(0, colon));
    value = std::string(line.substr(colon + 1));
  }
  flush();
  if (m.name.empty() || m.version.empty())
    return Error{ErrorKind::Parse, where, "core metadata without Name or Version", "",
                 "the wheel's METADATA must have Name and Version headers (PEP 566)"};
  return m;
}

PypiIndex::PypiIndex(PypiSources sources, PypiIndexOptions options)
    : sources_(std::move(sources)), options_(std::move(options)) {
  if (options_.cache_dir.empty()) options_.cache_dir = cache_root() / "pypi";
}

Result<std::string> PypiIndex::fetch_text(const std::string& url, const std::string& accept, bool missing_ok, bool& missing) {
  missing = false;
  if (url.starts_with("file:")) {
    auto path = path_from_file_url(url);
    if (!path) return path.error();
    std::error_code ec;
    fs::path p = *path;
    if (fs::is_directory(p, ec) && fs::is_regular_file(p / "index.html", ec)) p /= "index.html";
    if (!fs::is_regular_file(p, ec)) {
      if (missing_ok) {
        missing = true;
        return std::string();
      }
      return Error{ErrorKind::Io, redact_url(url), "no such file", "", ""};
    }
    return read_text(p);
  }
  const fs::path dest = options_.cache_dir / "pages" / (hash_bytes(redact_url(url) + "\n" + accept, HashAlgorithm::Sha256) + ".page");
  std::error_code ec;
  if (options_.offline) {
    if (fs::is_regular_file(dest, ec)) return read_text(dest);
    if (fs::is_regular_file(dest.string() + ".missing", ec)) {
      missing = true;
      return std::string();
    }
    return Error{ErrorKind::Network, redact_url(url), "not in the cache, and --offline fetches nothing", "",
                 "lock once without --offline to fill the cache"};
  }
  fs::create_directories(dest.parent_path(), ec);
  FetchRequest req;
  req.url = url;
  req.destination = dest;
  req.accept = accept;
  req.accept_encoding = AcceptEncoding::Any;
  req.label = last_segment(url.ends_with('/') ? url.substr(0, url.size() - 1) : url);
  ++requests_;
  auto r = fetch_to_file(req, options_.fetch);
  if (!r) {
    if (missing_ok && (r.error().http_status == 404 || r.error().http_status == 410)) {
      missing = true;
      std::ofstream(dest.string() + ".missing") << "";
      return std::string();
    }
    return r.error();
  }
  fs::remove(dest.string() + ".missing", ec);
  return read_text(dest);
}

namespace {

/// True when a file URL that the page at `page_url` lists may be fetched and pinned: the policy
/// of the index URLs themselves (docs/pypi.md) applied to every link, as pip ignores a link to a
/// host that is neither secure nor trusted ("is not a trusted or secure host and is being
/// ignored", pip/_internal/index/collector.py, PackageFinder._is_secure_origin): https://; http://
/// only on 127.0.0.1 or localhost; file:// only from a page that is itself a file (a file index or
/// find-links page on this machine), never from a page served over the network (attack 23, F5).
bool link_allowed(const std::string& page_url, const std::string& file_url) {
  if (file_url.starts_with("https://")) return true;
  if (file_url.starts_with("file:")) return page_url.starts_with("file:");
  if (!file_url.starts_with("http://")) return false;
  std::string authority = file_url.substr(7, file_url.find_first_of("/?#", 7) - 7);
  if (const std::size_t at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  const std::string host = ascii_lower(authority.substr(0, authority.find(':')));
  return host == "127.0.0.1" || host == "localhost";
}

std::vector<PypiFile> allowed_links(std::vector<PypiFile> files, const std::string& page_url) {
  files.erase(std::remove_if(files.begin(), files.end(), [&](const PypiFile& f) { return !link_allowed(page_url, f.url); }),
              files.end());
  return files;
}

}  // namespace

Result<std::vector<PypiFile>> PypiIndex::index_page(const std::string& index, const std::string& name) {
  std::string base = index;
  while (base.ends_with('/')) base.pop_back();
  const std::string url = base + "/" + name + "/";
  bool missing = false;
  auto text = fetch_text(url, "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1",
                         true, missing);
  if (!text) return text.error();
  std::vector<PypiFile> files;
  if (missing) return files;
  const std::string_view t = trim_view(*text);
  if (t.starts_with('{')) {
    auto parsed = parse_simple_json(t, url);
    if (!parsed) return parsed.error();
    files = std::move(*parsed);
  } else {
    files = parse_simple_html(*text, url);
  }
  files = allowed_links(std::move(files), url);
  for (auto& f : files) f.index = index;
  return files;
}

Result<std::vector<PypiFile>> PypiIndex::find_links_files(const std::string& location) {
  if (auto it = find_links_.find(location); it != find_links_.end()) return it->second;
  std::vector<PypiFile> files;
  std::error_code ec;
  if (location.find("://") == std::string::npos) {
    std::vector<fs::path> paths;
    for (const auto& e : fs::directory_iterator(location, ec))
      if (e.is_regular_file(ec) && !project_of(e.path().filename().string()).empty()) paths.push_back(e.path());
    if (ec)
      return Error{ErrorKind::Io, location, "cannot list the find-links folder: " + ec.message(), "",
                   "find-links names a folder of wheels or the URL of a page that links them"};
    std::sort(paths.begin(), paths.end());
    for (const auto& p : paths) {
      PypiFile f;
      f.filename = p.filename().string();
      f.url = file_url_from_path(fs::absolute(p).lexically_normal().string());
      f.size = fs::file_size(p, ec);
      if (f.filename.ends_with(".whl")) {
        auto h = hash_file(p, HashAlgorithm::Sha256);
        if (!h) return h.error();
        f.sha256 = *h;
      }
      f.index = location;
      files.push_back(std::move(f));
    }
  } else {
    bool missing = false;
    auto text = fetch_text(location, "text/html", false, missing);
    if (!text) return text.error();
    files = allowed_links(parse_simple_html(*text, location), location);
    for (auto& f : files) f.index = location;
  }
  find_links_[location] = files;
  return files;
}

Result<std::vector<PypiFile>> PypiIndex::files(const std::string& name) {
  std::lock_guard<std::mutex> hold(mutex_);
  if (auto it = files_.find(name); it != files_.end()) return it->second;
  std::vector<PypiFile> all;
  auto add = [&](std::vector<PypiFile> more) {
    for (auto& f : more) {
      if (project_of(f.filename) != name) continue;
      if (std::any_of(all.begin(), all.end(), [&](const PypiFile& g) { return g.filename == f.filename; })) continue;
      all.push_back(std::move(f));
    }
  };
  for (const auto& index : sources_.indexes) {
    auto page = index_page(index, name);
    if (!page) return page.error();
    add(std::move(*page));
  }
  for (const auto& loc : sources_.find_links) {
    auto page = find_links_files(loc);
    if (!page) return page.error();
    add(std::move(*page));
  }
  files_[name] = all;
  return all;
}

Result<CoreMetadata> PypiIndex::metadata(const PypiFile& file) {
  std::lock_guard<std::mutex> hold(mutex_);
  const std::string key = file.filename + "\n" + file.sha256 + "\n" + redact_url(file.url);
  if (auto it = metadata_.find(key); it != metadata_.end()) return it->second;
  const std::string shown = redact_url(file.url);
  std::string text;
  std::error_code ec;
  if (file.has_metadata && !file.url.starts_with("file:")) {
    bool missing = false;
    auto t = fetch_text(file.url + ".metadata", "", false, missing);
    if (!t) return t.error();
    if (!file.metadata_sha256.empty() && hash_bytes(*t, HashAlgorithm::Sha256) != file.metadata_sha256)
      return Error{ErrorKind::Integrity, shown + ".metadata", "the metadata's sha256 is not the one the index lists",
                   "expected " + file.metadata_sha256 + "\nactual   " + hash_bytes(*t, HashAlgorithm::Sha256), ""};
    text = std::move(*t);
  } else {
    fs::path wheel;
    if (file.url.starts_with("file:")) {
      auto p = path_from_file_url(file.url);
      if (!p) return p.error();
      wheel = *p;
      if (!file.sha256.empty()) {
        auto h = hash_file(wheel, HashAlgorithm::Sha256);
        if (!h) return h.error();
        if (*h != file.sha256)
          return Error{ErrorKind::Integrity, shown, "the wheel's sha256 is not the one the index lists",
                       "expected " + file.sha256 + "\nactual   " + *h, ""};
      }
    } else {
      if (file.sha256.empty())
        return Error{ErrorKind::Integrity, shown, "the index lists no sha256 for this wheel", "",
                     "envlock locks wheels by their sha256: the index must give #sha256=<hex> (PEP 503)"};
      wheel = cache_root() / "wheels" / file.sha256 / file.filename;
      if (!(fs::is_regular_file(wheel, ec) && [&] {
                                                  auto h = hash_file(wheel, HashAlgorithm::Sha256);
                                                  return h && *h == file.sha256;
                                                }())) {
        if (options_.offline)
          return Error{ErrorKind::Network, shown, "not in the wheel cache, and --offline fetches nothing", "", ""};
        fs::create_directories(wheel.parent_path(), ec);
        FetchRequest req;
        req.url = file.url;
        req.destination = wheel;
        req.sha256 = file.sha256;
        req.size = file.size;
        req.label = file.filename;
        ++requests_;
        auto r = fetch_to_file(req, options_.fetch);
        if (!r) return r.error();
      }
    }
    bool found = false;
    auto st = read_zip(wheel, [&](const ZipMember& m, ZipMemberReader& data) -> Status {
      const std::size_t slash = m.name.find('/');
      if (found || slash == std::string::npos || m.name.substr(slash) != "/METADATA" ||
          !m.name.substr(0, slash).ends_with(".dist-info"))
        return ok_status();
      while (true) {
        auto block = data.next();
        if (!block) return block.error();
        if (block->empty()) break;
        text.append(*block);
        if (text.size() > (16u << 20)) return Error{ErrorKind::Integrity, shown, "METADATA larger than 16 MiB", "", ""};
      }
      found = true;
      return ok_status();
    });
    if (!st) return st.error();
    if (!found)
      return Error{ErrorKind::Integrity, shown, "the wheel has no *.dist-info/METADATA", "", "a wheel must carry its metadata (PEP 427)"};
  }
  auto m = parse_core_metadata(text, shown);
  if (!m) return m.error();
  metadata_[key] = *m;
  return m;
}

}  // namespace envlock
