// StringMatcher, BuildNumberSpec and MatchSpec: conda/models/match_spec.py and
// BuildNumberMatch in conda/models/version.py.
#include "envlock/match_spec.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

#include "envlock/package_record.hpp"
#include "envlock/platform.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"
#include "glob.hpp"

namespace envlock {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The white space a spec is trimmed of (is_space).
constexpr std::string_view kSpecSpace = " \t\n\r";

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

bool is_known_subdir(std::string_view s) {
  const auto& known = Platform::known();
  return std::find(known.begin(), known.end(), s) != known.end();
}

// Splits a channel written in a spec (`conda-forge`, `conda-forge/linux-64`, a URL) into the
// channel and a subdir when the last path segment is a known subdir.
std::pair<std::string, std::optional<std::string>> split_channel(std::string_view text) {
  std::string ch(text);
  while (ch.size() > 1 && ch.back() == '/') ch.pop_back();
  std::size_t slash = ch.rfind('/');
  if (slash != std::string::npos && is_known_subdir(std::string_view(ch).substr(slash + 1))) {
    std::string sub = ch.substr(slash + 1);
    ch.erase(slash);
    return {ch, sub};
  }
  return {ch, std::nullopt};
}

// The channel name of a channel string: for a URL the path (credentials, `/t/<token>` and a
// trailing subdir removed), otherwise the text itself without a trailing subdir.
std::string channel_name(std::string_view channel) {
  std::string ch = redact_url(channel);
  while (!ch.empty() && ch.back() == '/') ch.pop_back();
  if (std::size_t scheme = ch.find("://"); scheme != std::string::npos) {
    std::size_t path = ch.find('/', scheme + 3);
    ch = path == std::string::npos ? std::string() : ch.substr(path + 1);
  }
  auto [name, sub] = split_channel(ch);
  return name;
}

std::string normalized_channel_url(std::string_view channel) {
  std::string ch = redact_url(channel);
  while (!ch.empty() && ch.back() == '/') ch.pop_back();
  return split_channel(ch).first;
}

bool channel_matches(const std::string& spec_channel, const std::string& record_channel) {
  if (spec_channel.find("://") != std::string::npos) {
    return normalized_channel_url(spec_channel) == normalized_channel_url(record_channel);
  }
  return channel_name(spec_channel) == channel_name(record_channel);
}

// A MatchSpec's track_features is a set (conda's FeatureMatch): split as a record's, then sorted
// and without repeats, so `'b a'` and `'a b'` are one spec.
std::vector<std::string> feature_set(std::string_view s) {
  std::vector<std::string> out = split_features(s);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Characters that may stand in a bracket value without quotes.
bool plain_value(std::string_view v) {
  if (v.empty()) return false;
  return std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
           c == '*' || c == '+' || c == '!' || c == '/' || c == ':' || c == '@';
  });
}

std::string bracket_value(std::string_view v) {
  if (plain_value(v)) return std::string(v);
  char q = v.find('\'') == std::string_view::npos ? '\'' : '"';
  return q + std::string(v) + q;
}

Error spec_error(const std::string& input, std::size_t pos, const std::string& rule,
                 const std::string& hint = {}) {
  Error e = parse_error("invalid match spec", input, pos, rule);
  e.hint = hint.empty()
               ? "a match spec looks like 'numpy >=1.26,<2', 'numpy=1.26=py312*', "
                 "'conda-forge::numpy 1.26.* py312*' or 'numpy[version=\">=1.26\"]'"
               : hint;
  return e;
}

// Re-anchors a nested parse error (version, build, ...) on the whole spec.
Error nested_error(const std::string& input, std::size_t pos, const std::string& what, const Error& inner) {
  Error e = parse_error("invalid match spec", input, pos, what + ": " + inner.message);
  e.hint = inner.hint.empty() ? spec_error(input, pos, what).hint : inner.hint;
  return e;
}

// conda's _parse_version_plus_build, which uses the regex
//   ((?:.+?)[^><!,|]?)(?:(?<![=!|,<>~])(?:[ =])([^-=,|<>~]+?))?$
// The version is everything before the first place p >= 1 (in the regex's search order) where
// s[p] is ' ' or '=', s[p-1] is not one of =!|,<>~ and the non-empty rest has none of -=,|<>~.
std::pair<std::string, std::optional<std::string>> split_version_build(std::string_view s) {
  auto valid = [&](std::size_t p) {
    if (p == 0 || p >= s.size() || (s[p] != ' ' && s[p] != '=')) return false;
    if (std::string_view("=!|,<>~").find(s[p - 1]) != std::string_view::npos) return false;
    std::string_view rest = s.substr(p + 1);
    return !rest.empty() && rest.find_first_of("-=,|<>~") == std::string_view::npos;
  };
  std::optional<std::size_t> split;
  for (std::size_t len = 1; len < s.size() && !split; ++len) {
    if (std::string_view("><!,|").find(s[len]) == std::string_view::npos && valid(len + 1)) {
      split = len + 1;
    } else if (valid(len)) {
      split = len;
    }
  }
  std::string version(split ? s.substr(0, *split) : s);
  version.erase(std::remove(version.begin(), version.end(), ' '), version.end());
  if (!split) return {version, std::nullopt};
  return {version, std::string(trim_view(s.substr(*split + 1), kSpecSpace))};
}

// conda's MatchSpec.FIELD_NAMES that match records (conda/models/match_spec.py).
const char* const kBracketKeys[] = {"name",    "version",        "build",    "build_number", "channel",
                                    "subdir",  "md5",            "sha256",   "license",      "license_family",
                                    "track_features", "features", "fn",       "url"};

}  // namespace

// ---------------------------------------------------------------------------------------------
// StringMatcher

Result<StringMatcher> StringMatcher::parse(std::string_view text) {
  std::string input(text);
  if (text.empty()) return parse_error("invalid string pattern", input, 0, "empty pattern");
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (is_space(c) || c == '\'' || c == '"' || static_cast<unsigned char>(c) < 0x20) {
      return parse_error("invalid string pattern", input, i, "spaces, quotes and control characters are not allowed");
    }
  }
  StringMatcher m;
  m.text_ = input;
  if (text.front() == '^' || text.back() == '$') {
    if (text.size() < 2 || text.front() != '^' || text.back() != '$') {
      return parse_error("invalid string pattern", input, 0, "a regex must start with '^' and end with '$'");
    }
    try {
      std::regex check{input};
    } catch (const std::regex_error&) {
      return parse_error("invalid string pattern", input, 0, "invalid regular expression");
    }
    m.kind_ = Kind::Regex;
  } else if (text.find('*') != std::string_view::npos) {
    m.kind_ = Kind::Glob;
  } else {
    m.kind_ = Kind::Exact;
  }
  return m;
}

bool StringMatcher::matches(std::string_view s) const {
  switch (kind_) {
    case Kind::Exact: return s == text_;
    case Kind::Glob: return detail::glob_match(text_, s);
    case Kind::Regex:
      try {
        return std::regex_search(s.begin(), s.end(), std::regex(text_));
      } catch (const std::regex_error&) {
        return false;
      }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// BuildNumberSpec

Result<BuildNumberSpec> BuildNumberSpec::parse(std::string_view text) {
  std::string input(text);
  std::string_view t = trim_view(text, kSpecSpace);
  if (t.empty()) return parse_error("invalid build number", input, 0, "empty build number");
  BuildNumberSpec s;
  if (t == "*") {
    s.op_ = Op::Ge;
    s.explicit_op_ = true;
    return s;
  }
  static const std::pair<std::string_view, Op> kOps[] = {{"==", Op::Eq}, {"!=", Op::Ne}, {"<=", Op::Le},
                                                         {">=", Op::Ge}, {"=", Op::Eq},  {"<", Op::Lt},
                                                         {">", Op::Gt}};
  std::size_t pos = 0;
  for (const auto& [op_text, op] : kOps) {
    if (t.starts_with(op_text)) {
      s.op_ = op;
      s.explicit_op_ = true;
      pos = op_text.size();
      break;
    }
  }
  std::string_view digits = trim_view(t.substr(pos), kSpecSpace);
  std::size_t at = static_cast<std::size_t>(digits.data() - text.data());
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return parse_error("invalid build number", input, digits.empty() ? text.size() : at,
                       "expected a non-negative integer, optionally after one of == != < <= > >=");
  }
  if (digits.size() > 18) return parse_error("invalid build number", input, at, "build number is too large");
  s.value_ = std::stoull(std::string(digits));
  return s;
}

bool BuildNumberSpec::matches(std::uint64_t n) const {
  switch (op_) {
    case Op::Eq: return n == value_;
    case Op::Ne: return n != value_;
    case Op::Lt: return n < value_;
    case Op::Le: return n <= value_;
    case Op::Gt: return n > value_;
    case Op::Ge: return n >= value_;
  }
  return false;
}

std::string BuildNumberSpec::to_string() const {
  std::string v = std::to_string(value_);
  if (!explicit_op_) return v;
  switch (op_) {
    case Op::Eq: return "==" + v;
    case Op::Ne: return "!=" + v;
    case Op::Lt: return "<" + v;
    case Op::Le: return "<=" + v;
    case Op::Gt: return ">" + v;
    case Op::Ge: return ">=" + v;
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// MatchSpec

namespace {

// A package URL (or absolute path) spec: channel/subdir/name-version-build.ext[#hash].
Result<MatchSpec> parse_url_spec(const std::string& input, std::string_view text) {
  MatchSpec spec;
  std::string_view url = text;
  std::string_view fragment;
  if (std::size_t hash = text.find('#'); hash != std::string_view::npos) {
    url = text.substr(0, hash);
    fragment = text.substr(hash + 1);
  }
  if (!fragment.empty()) {
    if (fragment.size() == 64 && is_hex(fragment)) {
      spec.sha256 = ascii_lower(std::string(fragment));
    } else if (fragment.size() == 32 && is_hex(fragment)) {
      spec.md5 = ascii_lower(std::string(fragment));
    } else {
      return spec_error(input, url.size() + 1, "the part after '#' in a package URL must be an md5 or sha256 hex digest");
    }
  }
  // An absolute path names a file:// URL: its folder percent-encoded (file_url_from_path), the
  // file name joined as written, as a channel's records join theirs.
  const bool path = url.front() == '/';
  std::size_t slash = url.rfind('/');
  std::string fn(url.substr(slash + 1));
  auto archive = parse_archive_name(fn);
  if (!archive) {
    return spec_error(input, url.size() - fn.size(), "the file name of a package URL must be name-version-build.conda or .tar.bz2");
  }
  auto folder_url = [&](std::string_view folder) {
    return path ? file_url_from_path(folder.empty() ? std::string_view("/") : folder) : std::string(folder);
  };
  std::string dir(url.substr(0, slash));
  spec.url = path ? (dir.empty() ? std::string("file://") : folder_url(dir)) + "/" + fn : std::string(url);
  spec.file_name = fn;
  std::size_t dslash = dir.rfind('/');
  std::string subdir = dslash == std::string::npos ? std::string() : dir.substr(dslash + 1);
  if (is_known_subdir(subdir) && dslash != std::string::npos) {
    // conda: with a subdir in the URL the package's name, version and build are known.
    auto name = StringMatcher::parse(ascii_lower(std::string(archive->name)));
    auto version = VersionSpec::parse("==" + archive->version);
    auto build = StringMatcher::parse(archive->build);
    if (!name || !version || !build) {
      return spec_error(input, url.size() - fn.size(), "the file name of a package URL has an invalid name, version or build");
    }
    spec.channel = redact_url(folder_url(std::string_view(dir).substr(0, dslash)));
    spec.subdir = subdir;
    spec.name = *name;
    spec.version = *version;
    spec.build = *build;
  }
  return spec;
}

bool looks_like_package_url(std::string_view text) {
  std::string_view path = text.substr(0, text.find('#'));
  bool package = path.ends_with(".conda") || path.ends_with(".tar.bz2");
  bool located = path.find("://") != std::string_view::npos || path.starts_with("/");
  return package && located && path.find(' ') == std::string_view::npos;
}

}  // namespace

Result<MatchSpec> MatchSpec::parse(std::string_view text) {
  const std::string input(text);
  std::string_view s = trim_view(text, kSpecSpace);
  if (s.empty()) return spec_error(input, 0, "empty match spec");
  if (looks_like_package_url(s)) return parse_url_spec(input, s);

  MatchSpec spec;
  // conda's legacy feature spec `mkl@`.
  if (s.size() > 1 && s.back() == '@' &&
      std::all_of(s.begin(), s.end() - 1, [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
      })) {
    spec.track_features = {std::string(s.substr(0, s.size() - 1))};
    return spec;
  }
  // Step 1: strip a '#' comment and a ' if ' condition (conda ignores both). A '#' inside the
  // bracket section (`[url='...#sha256']`) is part of a value, not a comment.
  {
    std::size_t open = s.find('['), close = s.rfind(']');
    for (std::size_t hash = s.find('#'); hash != std::string_view::npos; hash = s.find('#', hash + 1)) {
      bool in_brackets = open != std::string_view::npos && close != std::string_view::npos && open < hash && hash < close;
      if (!in_brackets) {
        s = trim_view(s.substr(0, hash), kSpecSpace);
        break;
      }
    }
  }
  if (std::size_t cond = s.find(" if "); cond != std::string_view::npos) s = trim_view(s.substr(0, cond), kSpecSpace);
  if (s.empty()) return spec_error(input, 0, "empty match spec");
  const std::size_t base = static_cast<std::size_t>(s.data() - text.data());

  // Step 3: the bracket section (conda cuts it out wherever it stands: `ray[extra] >=2`).
  std::vector<std::pair<std::string, std::string>> brackets;
  std::optional<std::size_t> version_key_pos;
  std::string without_brackets;
  if (std::size_t open = s.find('['); open != std::string_view::npos) {
    std::size_t close = open + 1;
    for (char quote = 0; close < s.size(); ++close) {
      if (quote) {
        if (s[close] == quote) quote = 0;
      } else if (s[close] == '\'' || s[close] == '"') {
        quote = s[close];
      } else if (s[close] == ']') {
        break;
      }
    }
    if (close >= s.size()) return spec_error(input, base + s.size(), "unbalanced '[': missing ']'");
    without_brackets = std::string(s.substr(0, open)) + std::string(s.substr(close + 1));
    if (std::size_t again = s.find_first_of("[]", close + 1); again != std::string_view::npos) {
      return spec_error(input, base + again, "multiple bracket sections are not allowed");
    }
    std::string_view body = s.substr(open + 1, close - open - 1);
    std::size_t body_off = base + open + 1;
    std::size_t i = 0;
    while (i < body.size()) {
      if (body[i] == ',' || is_space(body[i])) {
        ++i;
        continue;
      }
      std::size_t key_start = i;
      while (i < body.size() && (std::isalnum(static_cast<unsigned char>(body[i])) || body[i] == '_' || body[i] == '-')) ++i;
      std::string key(body.substr(key_start, i - key_start));
      if (key.empty()) {
        return spec_error(input, body_off + i, std::string("unexpected '") + body[i] + "' in brackets; expected key=value",
                          "quote bracket values that contain ',', spaces or '=': version='>=1.2,<2'");
      }
      if (i == body.size() || body[i] != '=') {
        if (i < body.size() && body[i] != ',' && !is_space(body[i])) {
          return spec_error(input, body_off + i, std::string("unexpected '") + body[i] + "' after '" + key + "' in brackets",
                            "quote bracket values that contain ',', spaces or '=': version='>=1.2,<2'");
        }
        brackets.emplace_back(key, std::string());  // a bare word: `optional` or an extra
        continue;
      }
      ++i;  // '='
      std::string value;
      std::size_t value_pos = body_off + i;
      if (i < body.size() && (body[i] == '\'' || body[i] == '"')) {
        char q = body[i++];
        std::size_t endq = body.find(q, i);
        if (endq == std::string_view::npos) {
          return spec_error(input, value_pos, std::string("unterminated quote ") + q + " in brackets");
        }
        value = std::string(body.substr(i, endq - i));
        i = endq + 1;
        if (i < body.size() && body[i] != ',' && !is_space(body[i])) {
          return spec_error(input, body_off + i, "expected ',' after a quoted bracket value");
        }
      } else {
        std::size_t vs = i;
        while (i < body.size() && body[i] != ',' && !is_space(body[i])) ++i;
        value = std::string(body.substr(vs, i - vs));
      }
      if (value.empty()) return spec_error(input, value_pos, "empty value for bracket key '" + key + "'");
      if (std::find(std::begin(kBracketKeys), std::end(kBracketKeys), key) == std::end(kBracketKeys)) {
        return spec_error(input, body_off + key_start, "unknown bracket key '" + key + "'",
                          "known keys: name, version, build, build_number, channel, subdir, md5, sha256, "
                          "license, license_family, track_features, features, fn, url");
      }
      if (key == "version") version_key_pos = value_pos;
      brackets.emplace_back(key, value);
    }
    s = trim_view(without_brackets, kSpecSpace);
  }

  // Step 5: channel[/subdir]::
  std::size_t name_off = base;
  if (std::size_t colons = s.rfind("::"); colons != std::string_view::npos) {
    std::string_view ch = trim_view(s.substr(0, colons), kSpecSpace);
    if (!ch.empty() && ch != "*") {
      auto [channel, subdir] = split_channel(ch);
      if (channel != "*") spec.channel = channel;
      spec.subdir = subdir;
    } else if (ch == "*") {
      spec.subdir = split_channel(ch).second;
    }
    name_off = base + colons + 2;
    s = s.substr(colons + 2);
  } else if (std::size_t colon = s.find(':'); colon != std::string_view::npos) {
    return spec_error(input, base + colon, "a single ':' is not valid; a channel is written 'channel::name'");
  }
  if (s.empty() && brackets.empty()) return spec_error(input, name_off, "'::' must be followed by a package name");

  // Step 6: the name runs to the first space or operator.
  std::size_t name_end = 0;
  while (name_end < s.size() && std::string_view(" =<>!~").find(s[name_end]) == std::string_view::npos) ++name_end;
  std::string_view name = s.substr(0, name_end);
  if (name.empty()) {
    return spec_error(input, name_off, "no package name found",
                      "a match spec starts with the package name, e.g. 'numpy >=1.26'");
  }
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '*' ||
              c == '+' || (name.front() == '^' && name.back() == '$');
    if (!ok) return spec_error(input, name_off + i, std::string("invalid character '") + c + "' in package name");
  }
  {
    auto m = StringMatcher::parse(ascii_lower(std::string(name)));
    if (!m) return nested_error(input, name_off, "bad package name", m.error());
    spec.name = *m;
  }

  // Step 7: version and build.
  std::string_view rest = trim_view(s.substr(name_end), kSpecSpace);
  std::size_t rest_off = name_off + static_cast<std::size_t>(rest.data() - s.data());
  if (!rest.empty()) {
    auto [version, build] = split_version_build(rest);
    if (!version.empty() && version[0] == '=') {
      std::string test = version.substr(1);
      if (version.starts_with("==") && !build) {
        version = version.substr(2);
      } else if (test.find_first_of("=,|") == std::string::npos) {
        version = (!build && !test.empty() && test.back() != '*') ? test + "*" : test;
      }
    }
    if (version.empty()) return spec_error(input, rest_off, "missing version after the operator");
    auto vs = VersionSpec::parse(version);
    if (!vs) return nested_error(input, rest_off, "bad version constraint '" + version + "'", vs.error());
    spec.version = *vs;
    if (build) {
      auto b = StringMatcher::parse(*build);
      if (!b) return nested_error(input, rest_off, "bad build string '" + *build + "'", b.error());
      spec.build = *b;
    }
  }

  // Step 8: bracket values override.
  for (const auto& [key, value] : brackets) {
    if (value.empty()) {
      if (key == "optional") {
        spec.optional = true;
      } else {
        spec.extras.push_back(key);
      }
    } else if (key == "version") {
      auto vs = VersionSpec::parse(value);
      if (!vs) return nested_error(input, *version_key_pos, "bad version='" + value + "'", vs.error());
      spec.version = *vs;
    } else if (key == "build") {
      auto b = StringMatcher::parse(value);
      if (!b) return nested_error(input, base, "bad build='" + value + "'", b.error());
      spec.build = *b;
    } else if (key == "name") {
      auto m = StringMatcher::parse(ascii_lower(std::string(value)));
      if (!m) return nested_error(input, base, "bad name='" + value + "'", m.error());
      spec.name = *m;
    } else if (key == "build_number") {
      auto b = BuildNumberSpec::parse(value);
      if (!b) return nested_error(input, base, "bad build_number='" + value + "'", b.error());
      spec.build_number = *b;
    } else if (key == "channel") {
      auto [channel, subdir] = split_channel(value);
      if (channel == "*") {
        spec.channel.reset();
      } else {
        spec.channel = channel;
      }
      if (subdir) spec.subdir = subdir;
    } else if (key == "subdir") {
      spec.subdir = value;
    } else if (key == "md5") {
      spec.md5 = ascii_lower(std::string(value));
    } else if (key == "sha256") {
      spec.sha256 = ascii_lower(std::string(value));
    } else if (key == "license") {
      spec.license = value;
    } else if (key == "license_family") {
      spec.license_family = value;
    } else if (key == "track_features") {
      spec.track_features = feature_set(value);
    } else if (key == "features") {
      spec.features = feature_set(value);
    } else if (key == "fn") {
      spec.file_name = value;
    } else if (key == "url") {
      spec.url = value;
    }
  }
  std::sort(spec.extras.begin(), spec.extras.end());
  spec.extras.erase(std::unique(spec.extras.begin(), spec.extras.end()), spec.extras.end());
  return spec;
}

std::string MatchSpec::to_string() const {
  // A package URL spec prints as its URL when nothing else was added to it.
  if (url && file_name && !build_number && !license && !license_family && track_features.empty() &&
      features.empty() && extras.empty() && !optional &&
      !(md5 && sha256)) {
    std::string text = *url;
    if (sha256) text += "#" + *sha256;
    if (md5) text += "#" + *md5;
    auto back = MatchSpec::parse(text);
    if (back && *back == *this) return text;
  }

  std::string out;
  std::vector<std::string> br;
  if (channel) {
    out += *channel;
    if (subdir) out += "/" + *subdir;
    out += "::";
  } else if (subdir) {
    br.push_back("subdir=" + bracket_value(*subdir));
  }
  out += name.to_string();

  bool version_positional = false;
  if (version) {
    std::string v = version->to_string();
    bool regex = v.find('^') != std::string::npos || v.find('$') != std::string::npos;
    bool single_eq = v[0] == '=' && !v.starts_with("==");  // `=1.2*`: conda would rewrite it
    if (!regex && !single_eq) {
      out += " " + v;
      version_positional = true;
    } else {
      br.push_back("version=" + bracket_value(v));
    }
  }
  if (build) {
    const std::string& b = build->to_string();
    bool plain = std::all_of(b.begin(), b.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '*' || c == '+' || c == '!';
    });
    if (version_positional && plain) {
      out += " " + b;
    } else {
      br.push_back("build=" + bracket_value(b));
    }
  }
  if (build_number) br.push_back("build_number=" + bracket_value(build_number->to_string()));
  if (md5) br.push_back("md5=" + bracket_value(*md5));
  if (sha256) br.push_back("sha256=" + bracket_value(*sha256));
  if (license) br.push_back("license=" + bracket_value(*license));
  if (license_family) br.push_back("license_family=" + bracket_value(*license_family));
  for (const auto* set : {&track_features, &features}) {
    if (set->empty()) continue;
    std::string tf;
    for (const auto& f : *set) tf += (tf.empty() ? "" : " ") + f;
    br.push_back(std::string(set == &features ? "features=" : "track_features=") + bracket_value(tf));
  }
  if (file_name) br.push_back("fn=" + bracket_value(*file_name));
  if (url) br.push_back("url=" + bracket_value(*url));
  for (const auto& e : extras) br.push_back(e);
  if (optional) br.push_back("optional");
  if (!br.empty()) {
    out += "[";
    for (std::size_t i = 0; i < br.size(); ++i) out += (i ? "," : "") + br[i];
    out += "]";
  }
  return out;
}

std::string MatchSpec::exact_name() const { return name.is_exact() ? name.to_string() : std::string(); }

bool MatchSpec::matches(const PackageRecord& r) const {
  if (!name.is_any() && !name.matches(ascii_lower(r.name))) return false;
  if (version && !version->matches(r.version)) return false;
  if (build && !build->matches(r.build)) return false;
  if (build_number && !build_number->matches(r.build_number)) return false;
  if (md5 && ascii_lower(std::string(r.md5)) != *md5) return false;
  if (sha256 && ascii_lower(std::string(r.sha256)) != *sha256) return false;
  if (license && !detail::glob_match(ascii_lower(*license), ascii_lower(r.license))) return false;
  if (license_family && !detail::glob_match(ascii_lower(*license_family), ascii_lower(r.license_family))) return false;
  if (subdir && r.subdir != *subdir) return false;
  if (!track_features.empty()) {
    std::vector<std::string> have = r.track_features;
    std::sort(have.begin(), have.end());
    have.erase(std::unique(have.begin(), have.end()), have.end());
    if (have != track_features) return false;
  }
  if (!features.empty() && feature_set(r.features) != features) return false;
  return true;
}

bool MatchSpec::matches(const RepoDataRecord& r) const {
  if (!matches(static_cast<const PackageRecord&>(r))) return false;
  if (channel && !channel_matches(*channel, r.channel)) return false;
  if (file_name && r.file_name != *file_name) return false;
  if (url && redact_url(r.url) != redact_url(*url)) return false;
  return true;
}

bool operator==(const MatchSpec& a, const MatchSpec& b) {
  return a.channel == b.channel && a.subdir == b.subdir && a.name == b.name && a.version == b.version &&
         a.build == b.build && a.build_number == b.build_number && a.md5 == b.md5 && a.sha256 == b.sha256 &&
         a.license == b.license && a.file_name == b.file_name && a.url == b.url &&
         a.license_family == b.license_family && a.track_features == b.track_features &&
         a.features == b.features && a.extras == b.extras && a.optional == b.optional;
}

}  // namespace envlock
