#include "envlock/url.hpp"
#include "envlock/text.hpp"

#include <idn2.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <optional>
#include <stdexcept>

namespace envlock {
namespace {

// Query keys whose values are secrets: generic ones, and those of presigned object-store URLs
// (AWS S3 SigV4 and V2, Google Cloud Storage V4, Azure SAS `sig`), and the session and API-key
// spellings of private index proxies (`auth=`, `apikey=`, `session=`, `sessionid=`, `jwt=`).
constexpr std::array<std::string_view, 20> kSecretKeys = {
    "token",           "access_token",     "api_key",          "key",
    "password",        "sig",              "signature",        "x-amz-signature",
    "x-amz-credential", "x-amz-security-token", "x-goog-signature", "x-goog-credential",
    "awsaccesskeyid",  "x-oss-signature",  "auth",             "apikey",
    "session",         "sessionid",        "session_id",       "jwt"};

// Key endings that name a secret whatever comes before them (GitLab's `private_token`,
// `job_token`, `client_secret`, `X-Amz-Credential` spelt another way...).
constexpr std::array<std::string_view, 5> kSecretEndings = {"token", "signature", "credential", "password", "secret"};

/// Whether a query key names a secret: compared percent-decoded (a server reads
/// `X%2DAmz%2DSignature` as `X-Amz-Signature`: a new-user attack, session 10) and case-blind.
bool is_secret_key(std::string_view key) {
  const std::string lower = ascii_lower(percent_decode(key));
  if (std::find(kSecretKeys.begin(), kSecretKeys.end(), lower) != kSecretKeys.end()) return true;
  return std::any_of(kSecretEndings.begin(), kSecretEndings.end(),
                     [&](std::string_view end) { return lower.ends_with(end); });
}

std::string redact_query(std::string_view query, std::string_view mark = {}) {
  std::string out;
  std::size_t start = 0;
  while (start <= query.size()) {
    std::size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    std::string_view pair = query.substr(start, end - start);
    std::size_t eq = pair.find('=');
    if (!out.empty()) out += '&';
    if (eq != std::string_view::npos && is_secret_key(pair.substr(0, eq))) {
      out += std::string(pair.substr(0, eq)) + "=" + std::string(mark);
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

/// redact_url(), writing `mark` where each secret was (empty: nothing, redact_url itself).
std::string redact_marked(std::string_view url, std::string_view mark) {
  std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::string(url);
  std::size_t auth_start = scheme_end + 3;
  // The authority ends at a backslash too, as WHATWG URL parsers (and requests, urllib3) read it
  // for http(s): in `https://evil.example\@conda.anaconda.org/` the host is evil.example, and
  // "redacting" `evil.example\@` as a user name would hide the host the download goes to.
  std::size_t path_start = url.find_first_of("/?#\\", auth_start);
  if (path_start == std::string_view::npos) path_start = url.size();
  std::string_view authority = url.substr(auth_start, path_start - auth_start);
  std::size_t at = authority.rfind('@');
  std::string out(url.substr(0, auth_start));
  if (at != std::string_view::npos && is_ssh_scheme(url.substr(0, scheme_end))) {
    // ssh authenticates with keys: the user name (`git@`) is an address, not a secret, and the
    // URL does not work without it. Only a password goes.
    std::string_view user = authority.substr(0, at);
    out += user.substr(0, user.find(':'));
    if (!mark.empty() && user.find(':') != std::string_view::npos) out += ":" + std::string(mark);
    out += '@';
  } else if (at != std::string_view::npos && !mark.empty()) {
    out += std::string(mark) + "@";
  }
  out += at == std::string_view::npos ? authority : authority.substr(at + 1);

  std::string_view rest = url.substr(path_start);
  std::size_t query_pos = rest.find('?');
  std::size_t frag_pos = rest.find('#');
  std::size_t path_end = std::min(query_pos, frag_pos);
  std::string path(rest.substr(0, path_end));
  // Drop every "/t/<token>" segment pair (anaconda.org's token form, as conda's
  // split_anaconda_token reads it). A file:// URL names a path, where a folder `t` is only a
  // folder: `file:///data/t/channel` was written `file:///data` and installs failed.
  const bool has_tokens = url.substr(0, scheme_end) != "file";
  for (std::size_t p = has_tokens ? path.find("/t/") : std::string::npos; p != std::string::npos; p = path.find("/t/", p)) {
    std::size_t token_end = path.find('/', p + 3);
    if (token_end == std::string::npos) token_end = path.size();
    if (token_end == p + 3) { p += 3; continue; }
    if (!mark.empty()) {
      path.replace(p + 3, token_end - p - 3, mark);
      p += 3 + mark.size();
      continue;
    }
    path.erase(p, token_end - p);
  }
  out += path;
  if (query_pos != std::string_view::npos && query_pos < frag_pos) {
    std::size_t qend = frag_pos == std::string_view::npos ? rest.size() : frag_pos;
    out += "?" + redact_query(rest.substr(query_pos + 1, qend - query_pos - 1), mark);
  }
  if (frag_pos != std::string_view::npos) out += rest.substr(frag_pos);
  return out;
}

}  // namespace

std::string redact_url(std::string_view url) { return redact_marked(url, {}); }

// `<` ends a URL for redact_text(): the marked URL passes through the printing points' redaction.
std::string marked_url(std::string_view url) { return redact_marked(url, "<***>"); }

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

namespace {

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// A host libidn2 cannot encode: each non-ASCII code point as `\u{XXXX}`, each byte of an invalid
// sequence as `\xNN`.
std::string escaped_host(std::string_view host) {
  std::string out;
  char buf[16];
  for (std::size_t i = 0; i < host.size();) {
    const auto c = static_cast<unsigned char>(host[i]);
    const std::size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    bool valid = n != 0 && i + n <= host.size();
    for (std::size_t k = 1; valid && k < n; ++k) valid = (static_cast<unsigned char>(host[i + k]) & 0xc0) == 0x80;
    if (n == 1) {
      out += host[i++];
    } else if (!valid) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    } else {
      char32_t cp = c & (n == 2 ? 0x1f : n == 3 ? 0x0f : 0x07);
      for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(host[i + k]) & 0x3f);
      std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(cp));
      out += buf;
      i += n;
    }
  }
  return out;
}

// The A-label form of a non-ASCII host: IDNA2008 as written (RFC 5891 section 4, no UTS #46
// mapping, which would drop a zero-width character or fold a compatibility form and so show
// another host than the text holds), ASCII letters lower-cased first (host names are
// case-insensitive); escaped_host() when IDNA2008 refuses it (a symbol, an invisible or tag
// character, upper-case non-ASCII, text not in NFC).
std::string ascii_host(const std::string& host) {
  std::string lower = host;
  for (auto& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  char* out = nullptr;
  const int rc = idn2_to_ascii_8z(lower.c_str(), &out, IDN2_NO_TR46);
  std::string ascii = rc == IDN2_OK && out != nullptr ? std::string(out) : std::string();
  idn2_free(out);
  return ascii.empty() ? escaped_host(host) : ascii;
}

}  // namespace

std::string ascii_host_url(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return std::string(url);
  const std::size_t auth_start = scheme_end + 3;
  std::size_t path_start = url.find_first_of("/?#\\", auth_start);  // a backslash too, as redact_url
  if (path_start == std::string_view::npos) path_start = url.size();
  const std::string_view authority = url.substr(auth_start, path_start - auth_start);
  const std::size_t at = authority.rfind('@');
  const std::size_t host_start = at == std::string_view::npos ? 0 : at + 1;
  std::string_view host = authority.substr(host_start);
  if (host.starts_with('[')) return std::string(url);  // an IPv6 literal: ASCII by its grammar
  if (const auto colon = host.rfind(':'); colon != std::string_view::npos) host = host.substr(0, colon);
  const std::string decoded = host.find('%') == std::string_view::npos ? std::string(host) : percent_decode(host);
  if (is_ascii(decoded)) return std::string(url);
  std::string out(url.substr(0, auth_start + host_start));
  out += ascii_host(decoded);
  out += url.substr(auth_start + host_start + host.size());
  return out;
}

std::string ascii_hosts(std::string_view text) {
  if (text.find("://") == std::string_view::npos || (is_ascii(text) && text.find('%') == std::string_view::npos))
    return std::string(text);
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
    if (start == p) continue;
    std::size_t end = p + 3;
    while (end < text.size() && !ends_url(text[end])) ++end;
    out.append(text.substr(copied, start - copied));
    out += ascii_host_url(text.substr(start, end - start));
    copied = end;
    p = end > 3 ? end - 3 : end;
  }
  out.append(text.substr(copied));
  return out;
}

std::string redacted_excerpt(std::string_view line, std::size_t column) {
  const std::string shown = redact_text(line);
  // Credentials removed before the column shift it left by what they took: measured as the
  // redaction of the text before it (a prefix of the whole redaction when the column is not
  // inside the credentials themselves; there the caret goes to where they were).
  std::size_t at = std::min(column, line.size());
  if (shown.size() != line.size()) {
    const std::string before = redact_text(line.substr(0, at));
    at = shown.compare(0, before.size(), before) == 0 ? before.size() : std::min(at, shown.size());
  }
  std::string caret(at, ' ');
  for (std::size_t i = 0; i < at && i < shown.size(); ++i)
    if (shown[i] == '\t') caret[i] = '\t';
  return "  " + shown + "\n  " + caret + "^";
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

std::string remove_dot_segments(std::string_view path) {
  // The loop of RFC 3986 5.2.4, step by step (A to E), on a view of what is left of the input.
  std::string_view in = path;
  std::string out;
  auto drop_last_segment = [&out] {
    const std::size_t slash = out.rfind('/');
    out.erase(slash == std::string::npos ? 0 : slash);
  };
  while (!in.empty()) {
    if (in.starts_with("../")) {  // A
      in.remove_prefix(3);
    } else if (in.starts_with("./")) {  // A
      in.remove_prefix(2);
    } else if (in.starts_with("/./")) {  // B: "/./" -> "/"
      in.remove_prefix(2);
    } else if (in == "/.") {  // B: "/." -> "/"
      in = "/";
    } else if (in.starts_with("/../")) {  // C: "/../" -> "/", one segment of the output dropped
      in.remove_prefix(3);
      drop_last_segment();
    } else if (in == "/..") {  // C
      in = "/";
      drop_last_segment();
    } else if (in == "." || in == "..") {  // D
      in = {};
    } else {  // E: the first segment, with its leading '/', moves to the output
      const std::size_t end = in.find('/', 1);
      const std::size_t n = end == std::string_view::npos ? in.size() : end;
      out.append(in.substr(0, n));
      in.remove_prefix(n);
    }
  }
  return out;
}

namespace {

/// A URI reference split into its five components (RFC 3986 Appendix B), each a view of the
/// text; an undefined component (no `scheme:`, no `//`, no `?`, no `#`) is nullopt, as 5.2.1 and
/// 5.3 tell an undefined one from an empty one.
struct UriParts {
  std::optional<std::string_view> scheme, authority;
  std::string_view path;
  std::optional<std::string_view> query, fragment;
};

UriParts split_uri(std::string_view s) {
  UriParts u;
  // A scheme (RFC 3986 3.1): ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) before the first ':'
  // that comes before any '/', '?' or '#'.
  const std::size_t colon = s.find_first_of(":/?#");
  if (colon != std::string_view::npos && s[colon] == ':' && colon > 0 &&
      std::isalpha(static_cast<unsigned char>(s[0])) != 0 &&
      std::all_of(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(colon), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.';
      })) {
    u.scheme = s.substr(0, colon);
    s.remove_prefix(colon + 1);
  }
  if (s.starts_with("//")) {
    const std::size_t end = s.find_first_of("/?#", 2);
    u.authority = s.substr(2, (end == std::string_view::npos ? s.size() : end) - 2);
    s.remove_prefix(end == std::string_view::npos ? s.size() : end);
  }
  const std::size_t hash = s.find('#');
  if (hash != std::string_view::npos) {
    u.fragment = s.substr(hash + 1);
    s = s.substr(0, hash);
  }
  const std::size_t question = s.find('?');
  if (question != std::string_view::npos) {
    u.query = s.substr(question + 1);
    s = s.substr(0, question);
  }
  u.path = s;
  return u;
}

}  // namespace

std::string resolve_url(std::string_view base_text, std::string_view reference) {
  const UriParts r = split_uri(reference);
  const UriParts base = split_uri(base_text);
  if (!base.scheme) return std::string(reference);  // no absolute URI to resolve against (5.1)
  // RFC 3986 5.2.2, strict: the target's components (T) from the reference's (R) and the base's.
  std::optional<std::string_view> scheme = r.scheme, authority, query;
  std::string path;
  if (r.scheme) {
    authority = r.authority;
    path = remove_dot_segments(r.path);
    query = r.query;
  } else {
    scheme = base.scheme;
    if (r.authority) {
      authority = r.authority;
      path = remove_dot_segments(r.path);
      query = r.query;
    } else {
      authority = base.authority;
      if (r.path.empty()) {
        path = std::string(base.path);
        query = r.query ? r.query : base.query;
      } else {
        if (r.path.starts_with('/')) {
          path = remove_dot_segments(r.path);
        } else if (base.authority && base.path.empty()) {  // 5.2.3 merge, a base of "//host"
          path = remove_dot_segments("/" + std::string(r.path));
        } else {  // 5.2.3 merge: the base's path up to its last '/', then the reference's
          const std::size_t slash = base.path.rfind('/');
          const std::string_view dir = slash == std::string_view::npos ? std::string_view() : base.path.substr(0, slash + 1);
          path = remove_dot_segments(std::string(dir) + std::string(r.path));
        }
        query = r.query;
      }
    }
  }
  // 5.3 component recomposition.
  std::string out;
  if (scheme) (out += *scheme) += ':';
  if (authority) (out += "//") += *authority;
  out += path;
  if (query) (out += '?') += *query;
  if (r.fragment) (out += '#') += *r.fragment;
  return out;
}

namespace {

bool is_unreserved(char c) {  // RFC 3986 §2.3
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string percent_encode(std::string_view text, std::string_view keep) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (is_unreserved(c) || keep.find(c) != std::string_view::npos) {
      out += c;
    } else {
      const auto b = static_cast<unsigned char>(c);
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 0xF];
    }
  }
  return out;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    int hi = -1, lo = -1;
    if (text[i] == '%' && i + 2 < text.size() && (hi = hex_value(text[i + 1])) >= 0 &&
        (lo = hex_value(text[i + 2])) >= 0) {
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string file_url_from_path(std::string_view absolute_path) {
  if (absolute_path.empty() || absolute_path.front() != '/')
    throw std::invalid_argument("file_url_from_path: not an absolute path: " + std::string(absolute_path));
  return "file://" + percent_encode(absolute_path, "/");
}

Result<std::string> path_from_file_url(std::string_view url) {
  auto fail = [&](const std::string& message, const std::string& hint) {
    return Error{ErrorKind::Parse, redact_url(url), message, "", hint};
  };
  constexpr std::string_view kScheme = "file://";
  bool is_file = url.size() >= kScheme.size();
  for (std::size_t i = 0; is_file && i < kScheme.size(); ++i)
    is_file = std::tolower(static_cast<unsigned char>(url[i])) == kScheme[i];
  if (!is_file) return fail("not a file:// URL", "a local path is written file:///absolute/path");
  std::string_view rest = url.substr(kScheme.size());
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  const std::string host = ascii_lower(std::string(authority.substr(authority.rfind('@') + 1)));  // userinfo, if any, is never shown
  if (!authority.empty() && host != "localhost")
    return fail("file URL names the host '" + host + "'; envlock reads local paths only",
                "write file:///absolute/path (three slashes), or the path itself");
  if (slash == std::string_view::npos) return fail("file URL without a path", "write file:///absolute/path");
  std::string path = percent_decode(rest.substr(slash));
  if (path.find('\0') != std::string::npos)
    return fail("file URL holds a NUL byte (%00), which no path can hold", "");
  return path;
}

}  // namespace envlock
