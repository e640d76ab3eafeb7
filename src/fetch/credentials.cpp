// The credentials file (rattler/pixi format): parsing and lookup. See envlock/credentials.hpp.
#include "envlock/credentials.hpp"

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "envlock/settings.hpp"
#include "envlock/text.hpp"

namespace envlock {

namespace {

/// (scheme://authority, host without port and userinfo, lower-case) of a URL; empty when not one.
std::pair<std::string, std::string> origin_and_host(std::string_view url) {
  auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return {};
  auto end = url.find_first_of("/?#", scheme + 3);
  std::string_view authority = url.substr(scheme + 3, end == std::string_view::npos ? std::string_view::npos : end - scheme - 3);
  if (auto at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  std::string_view host = authority;
  if (host.starts_with("[")) {
    host = host.substr(0, host.find(']') + 1);
  } else if (auto colon = host.rfind(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  return {ascii_lower(std::string(url.substr(0, scheme + 3))) + ascii_lower(std::string(authority)), ascii_lower(std::string(host))};
}

/// `url` without userinfo, scheme and host lower-cased: what URL-prefix keys are compared with.
std::string comparable(std::string_view url) {
  auto [origin, host] = origin_and_host(url);
  if (origin.empty()) return std::string(url);
  auto scheme = url.find("://");
  auto end = url.find_first_of("/?#", scheme + 3);
  return origin + std::string(end == std::string_view::npos ? std::string_view() : url.substr(end));
}

}  // namespace

Result<CredentialStore> CredentialStore::parse(std::string_view json, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's message quotes the bytes near the error, which may be a secret: give the offset.
    return Error{ErrorKind::Parse, source, "the credentials file is not valid JSON (at byte " + std::to_string(e.byte) + ")",
                 "", "write a JSON object such as {\"host\": {\"BearerToken\": \"...\"}}"};
  }
  if (!doc.is_object())
    return Error{ErrorKind::Parse, source, "the credentials file is not a JSON object", "",
                 "write a JSON object such as {\"host\": {\"BearerToken\": \"...\"}}"};
  CredentialStore store;
  for (const auto& [key, value] : doc.items()) {
    auto bad = [&, k = key](const std::string& what) {
      return Error{ErrorKind::Parse, source, "credentials for '" + k + "': " + what, "",
                   "an entry is {\"BearerToken\": \"...\"}, {\"CondaToken\": \"...\"} or "
                   "{\"BasicHTTP\": {\"username\": \"...\", \"password\": \"...\"}}"};
    };
    if (!value.is_object() || value.size() != 1) return bad("not an object with one credential");
    const auto& [kind, body] = *value.items().begin();
    Credential c;
    if (kind == "BearerToken" || kind == "CondaToken") {
      if (!body.is_string()) return bad(kind + " is not a string");
      c.kind = kind == "BearerToken" ? Credential::Kind::Bearer : Credential::Kind::CondaToken;
      c.token = body.get<std::string>();
    } else if (kind == "BasicHTTP") {
      if (!body.is_object() || !body.contains("username") || !body.contains("password") ||
          !body["username"].is_string() || !body["password"].is_string())
        return bad("BasicHTTP needs string 'username' and 'password'");
      c.kind = Credential::Kind::Basic;
      c.username = body["username"].get<std::string>();
      c.password = body["password"].get<std::string>();
    } else {
      continue;  // S3Credentials, OAuth, ...: not for envlock's transfers
    }
    std::string k = key.find("://") != std::string::npos ? comparable(key) : ascii_lower(key);
    while (k.size() > 1 && k.back() == '/' && key.find("://") != std::string::npos) k.pop_back();
    store.entries_.emplace_back(std::move(k), std::move(c));
  }
  return store;
}

Result<CredentialStore> CredentialStore::load(const std::filesystem::path& path, bool required) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!required && !std::filesystem::exists(path, ec)) return CredentialStore{};
    return Error{ErrorKind::Io, path.string(), "cannot read the credentials file", "",
                 "check ENVLOCK_AUTH_FILE and the file's permissions"};
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path.string());
}

std::filesystem::path CredentialStore::default_path() {
  const Settings env = settings();
  if (env.xdg_config_home.starts_with('/'))
    return std::filesystem::path(env.xdg_config_home) / "envlock" / "credentials.json";
  if (!env.home.empty()) return std::filesystem::path(env.home) / ".config" / "envlock" / "credentials.json";
  return {};
}

Result<CredentialStore> CredentialStore::from_environment() {
  if (const std::string f = settings().auth_file; !f.empty()) return load(f, true);
  auto p = default_path();
  if (p.empty()) return CredentialStore{};
  return load(p, false);
}

const Credential* CredentialStore::find(std::string_view url) const {
  if (entries_.empty()) return nullptr;
  auto [origin, host] = origin_and_host(url);
  if (host.empty()) return nullptr;
  auto by_key = [&](const std::string& k) -> const Credential* {
    for (const auto& [key, c] : entries_)
      if (key == k) return &c;
    return nullptr;
  };
  if (const auto* c = by_key(host)) return c;
  for (std::string_view domain = host;;) {
    if (const auto* c = by_key("*." + std::string(domain))) return c;
    auto dot = domain.find('.');
    if (dot == std::string_view::npos) break;
    domain.remove_prefix(dot + 1);
  }
  const std::string u = comparable(url);
  const Credential* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& [key, c] : entries_) {
    if (key.find("://") == std::string::npos || key.size() <= best_len || !u.starts_with(key)) continue;
    if (u.size() > key.size() && u[key.size()] != '/' && u[key.size()] != '?') continue;
    best = &c;
    best_len = key.size();
  }
  return best;
}

std::string CredentialStore::apply_to_url(std::string_view url, const Credential& credential) {
  if (credential.kind != Credential::Kind::CondaToken) return std::string(url);
  auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  auto path = url.find('/', scheme + 3);
  std::string_view rest = path == std::string_view::npos ? std::string_view("/") : url.substr(path);
  if (rest.starts_with("/t/")) return std::string(url);
  std::string_view head = path == std::string_view::npos ? url : url.substr(0, path);
  return std::string(head) + "/t/" + credential.token + std::string(rest);
}

}  // namespace envlock
