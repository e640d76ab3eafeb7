#include "envlock/url.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace envlock {
namespace {

constexpr std::array<std::string_view, 7> kSecretKeys = {
    "token", "access_token", "api_key", "key", "password", "sig", "signature"};

bool is_secret_key(std::string_view key) {
  std::string lower(key);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(kSecretKeys.begin(), kSecretKeys.end(), lower) != kSecretKeys.end();
}

std::string redact_query(std::string_view query) {
  std::string out;
  std::size_t start = 0;
  while (start <= query.size()) {
    std::size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    std::string_view pair = query.substr(start, end - start);
    std::size_t eq = pair.find('=');
    if (!out.empty()) out += '&';
    if (eq != std::string_view::npos && is_secret_key(pair.substr(0, eq))) {
      out += std::string(pair.substr(0, eq)) + "=";
    } else {
      out += pair;
    }
    start = end + 1;
  }
  return out;
}

// `ssh`, or a VCS scheme over ssh such as pip's `git+ssh` (PEP 440 direct references).
bool is_ssh_scheme(std::string_view scheme) {
  return scheme == "ssh" || (scheme.size() > 4 && scheme.substr(scheme.size() - 4) == "+ssh");
}

}  // namespace

std::string redact_url(std::string_view url) {
  std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::string(url);
  std::size_t auth_start = scheme_end + 3;
  std::size_t path_start = url.find_first_of("/?#", auth_start);
  if (path_start == std::string_view::npos) path_start = url.size();
  std::string_view authority = url.substr(auth_start, path_start - auth_start);
  std::size_t at = authority.rfind('@');
  std::string out(url.substr(0, auth_start));
  if (at != std::string_view::npos && is_ssh_scheme(url.substr(0, scheme_end))) {
    // ssh authenticates with keys: the user name (`git@`) is an address, not a secret, and the
    // URL does not work without it. Only a password goes.
    std::string_view user = authority.substr(0, at);
    out += user.substr(0, user.find(':'));
    out += '@';
  }
  out += at == std::string_view::npos ? authority : authority.substr(at + 1);

  std::string_view rest = url.substr(path_start);
  std::size_t query_pos = rest.find('?');
  std::size_t frag_pos = rest.find('#');
  std::size_t path_end = std::min(query_pos, frag_pos);
  std::string path(rest.substr(0, path_end));
  // Drop every "/t/<token>" segment pair.
  for (std::size_t p = path.find("/t/"); p != std::string::npos; p = path.find("/t/", p)) {
    std::size_t token_end = path.find('/', p + 3);
    if (token_end == std::string::npos) token_end = path.size();
    if (token_end == p + 3) { p += 3; continue; }
    path.erase(p, token_end - p);
  }
  out += path;
  if (query_pos != std::string_view::npos && query_pos < frag_pos) {
    std::size_t qend = frag_pos == std::string_view::npos ? rest.size() : frag_pos;
    out += "?" + redact_query(rest.substr(query_pos + 1, qend - query_pos - 1));
  }
  if (frag_pos != std::string_view::npos) out += rest.substr(frag_pos);
  return out;
}

std::string redact_text(std::string_view text) {
  auto is_scheme_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.';
  };
  auto ends_url = [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0 || c == '\'' || c == '"' || c == '<' || c == '>' ||
           c == '`';
  };
  std::string out;
  std::size_t copied = 0;
  for (std::size_t p = text.find("://"); p != std::string_view::npos; p = text.find("://", p + 3)) {
    std::size_t start = p;
    while (start > copied && is_scheme_char(text[start - 1])) --start;
    if (start == p) continue;  // "://" without a scheme before it
    std::size_t end = p + 3;
    while (end < text.size() && !ends_url(text[end])) ++end;
    out.append(text.substr(copied, start - copied));
    out += redact_url(text.substr(start, end - start));
    copied = end;
    p = end > 3 ? end - 3 : end;
  }
  out.append(text.substr(copied));
  return out;
}

bool url_has_credentials(std::string_view url) { return redact_url(url) != url; }

std::string url_join(std::string_view base, std::string_view path) {
  std::string out(base);
  while (!out.empty() && out.back() == '/') out.pop_back();
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  out += '/';
  out += path;
  return out;
}

}  // namespace envlock
