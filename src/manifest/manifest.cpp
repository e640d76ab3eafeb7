// envlock.yaml and conda environment.yml -> Manifest (yaml-cpp), with file:line:col errors.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "envlock/manifest.hpp"
#include "envlock/input_file.hpp"
#include "envlock/manifest_edit.hpp"
#include "envlock/platform.hpp"
#include "envlock/paths.hpp"
#include "envlock/pypi_name.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"
#include "yaml_source.hpp"

namespace envlock {

// ---- Manifest accessors --------------------------------------------------------------------

const ManifestEnvironment* Manifest::environment(std::string_view env_name) const {
  auto it = environments.find(std::string(env_name));
  return it == environments.end() ? nullptr : &it->second;
}

const std::vector<Channel>& Manifest::channels_for(const ManifestEnvironment& env) const {
  return env.channels ? *env.channels : channels;
}

const std::vector<std::string>& Manifest::platforms_for(const ManifestEnvironment& env) const {
  return env.platforms ? *env.platforms : platforms;
}

std::vector<PypiLocation> Manifest::pypi_indexes_for(const ManifestEnvironment& env) const {
  if (env.pypi_indexes && !env.pypi_indexes->empty()) return *env.pypi_indexes;
  if (!pypi_indexes.empty()) return pypi_indexes;
  if (!env.pypi_dependencies.empty() && find_links_for(env).empty())
    return {PypiLocation{std::string(kDefaultPypiIndex), std::string(kDefaultPypiIndex)}};
  return {};
}

std::vector<PypiLocation> Manifest::find_links_for(const ManifestEnvironment& env) const {
  if (env.find_links && !env.find_links->empty()) return *env.find_links;
  return find_links;
}

const std::vector<VirtualPackage>& Manifest::virtual_packages_for(std::string_view platform) const {
  static const std::vector<VirtualPackage> kNone;
  auto it = virtual_packages.find(std::string(platform));
  return it == virtual_packages.end() ? kNone : it->second;
}

std::vector<std::pair<std::string, std::string>> Manifest::variables_for(std::string_view env_name) const {
  std::vector<const ManifestEnvironment*> chain;  // the environment, its base, its base's base, ...
  for (const ManifestEnvironment* e = environment(env_name); e != nullptr && chain.size() <= environments.size();
       e = e->base.empty() ? nullptr : environment(e->base))
    chain.push_back(e);
  if (chain.empty()) return {};
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&out](const std::vector<std::pair<std::string, std::string>>& vars) {
    for (const auto& var : vars) {  // not a structured binding: clang 14 cannot capture one
      auto it = std::find_if(out.begin(), out.end(), [&var](const auto& kv) { return kv.first == var.first; });
      if (it == out.end()) out.push_back(var);
      else it->second = var.second;
    }
  };
  add(variables);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) add((*it)->variables);
  return out;
}

std::vector<std::string> Manifest::layer_order() const {
  std::vector<std::string> out;
  std::set<std::string> placed;
  // Repeated passes over the sorted names: deterministic, and short chains make this cheap.
  while (out.size() < environments.size()) {
    bool progress = false;
    for (const auto& [env_name, env] : environments) {
      if (placed.count(env_name)) continue;
      if (env.base.empty() || placed.count(env.base) || !environments.count(env.base)) {
        out.push_back(env_name);
        placed.insert(env_name);
        progress = true;
      }
    }
    if (!progress) {  // a cycle (rejected at load time); keep the rest in name order
      for (const auto& kv : environments)
        if (placed.insert(kv.first).second) out.push_back(kv.first);
    }
  }
  return out;
}

// ---- conda-lock selectors ------------------------------------------------------------------

namespace {

bool selector_matches(std::string_view sel, std::string_view platform) {
  std::size_t dash = platform.find('-');
  if (dash == std::string_view::npos) return false;  // noarch: selectors never name it
  std::string_view os = platform.substr(0, dash);
  std::string_view arch = platform.substr(dash + 1);
  if (sel == platform || sel == os) return true;
  if (sel == "unix") return os == "linux" || os == "osx" || os == "freebsd" || os == "emscripten";
  std::string joined = std::string(os) + std::string(arch);
  if (sel == joined) return true;  // linux64, osx64, win64, osxarm64, linuxaarch64
  if (arch != "64" && arch != "32" && sel == arch) return true;  // aarch64, arm64, ppc64le
  return false;
}

}  // namespace

bool RequestedSpec::applies_to(std::string_view platform) const {
  return selector.empty() || selector_matches(selector, platform);
}

// ---- the parser -----------------------------------------------------------------------------

namespace {

using yaml::kind_name;

constexpr std::string_view kDefaultsMain = "https://repo.anaconda.com/pkgs/main";
constexpr std::string_view kDefaultsR = "https://repo.anaconda.com/pkgs/r";

const std::vector<std::string_view> kEnvlockKeys = {
    "name", "channel-alias", "channels", "platforms", "channel-priority", "dependencies",
    "environments", "virtual-packages", "reference", "variables", "pypi-dependencies", "pypi-indexes", "find-links"};
const std::vector<std::string_view> kEnvlockOnlyKeys = {
    "channel-alias", "channel-priority", "environments", "virtual-packages", "reference", "pypi-dependencies",
    "pypi-indexes", "find-links"};
// `variables:` is conda's too (conda/conda#10169: environment.yml `variables:`, set by `conda env create`).
const std::vector<std::string_view> kCondaKeys = {"name", "channels", "dependencies", "platforms", "variables"};
const std::vector<std::string_view> kEnvironmentKeys = {"dependencies", "base", "channels", "platforms", "variables",
                                                        "pypi-dependencies", "pypi-indexes", "find-links"};

std::string join(const std::vector<std::string_view>& v, std::string_view sep) {
  std::string out;
  for (auto s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

bool contains(const std::vector<std::string_view>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// ---- pip requirement lines (as `pip install -r` reads a requirements file) -----------------

// The file extensions pip takes as an archive (wheel or sdist).
constexpr std::string_view kArchiveExtensions[] = {".whl", ".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tar.xz",
                                                   ".txz", ".tar.lz", ".tlz", ".tar", ".zip"};

std::string_view archive_extension(std::string_view file) {
  for (std::string_view ext : kArchiveExtensions)
    if (file.size() > ext.size() && file.ends_with(ext)) return ext;
  return {};
}

// The PEP 503 project name a wheel or sdist file name carries, or "" when it carries none:
// a wheel is `name-version(-build)?-python-abi-platform.whl` (PEP 427, 5 or 6 fields), an sdist
// `name-version.tar.gz` (the name is what precedes the last '-', the version starts with a digit).
std::string archive_project_name(std::string_view file) {
  const std::string_view ext = archive_extension(file);
  if (ext.empty()) return "";
  const std::string_view stem = file.substr(0, file.size() - ext.size());
  if (ext == ".whl") {
    const auto fields = std::count(stem.begin(), stem.end(), '-') + 1;
    if (fields != 5 && fields != 6) return "";
    return pep503_normalize(stem.substr(0, stem.find('-')));
  }
  const auto dash = stem.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == stem.size() ||
      !std::isdigit(static_cast<unsigned char>(stem[dash + 1])))
    return "";
  return pep503_normalize(stem.substr(0, dash));
}

// A line that names where to get a distribution rather than a PEP 508 requirement, as pip reads
// it: a URL (`scheme://...`), a path (`.`, `./x`, `../x`, `/x`, `~/x`) or an archive file name.
bool is_location_line(std::string_view text) {
  static const std::regex url(R"(^[A-Za-z][A-Za-z0-9+.-]*://)");
  if (std::regex_search(text.begin(), text.end(), url)) return true;
  if (text.starts_with('.') || text.starts_with('/') || text.starts_with('~')) return true;
  const std::string_view first = text.substr(0, text.find_first_of(" \t;"));
  return first.find('@') == std::string_view::npos && !archive_extension(first).empty();
}

// One line of a `pip:` list -> an unresolved PipPackage, credential-free (redact_text: the
// manifest may hold a token, the lockfile and every output never do). Only a real project
// name is set: from PEP 508 `name[extras] spec` / `name @ url`, from `#egg=name`, or from an
// archive's file name; an option line (`-e .`, `--extra-index-url URL`, `-r file`) or a path
// or URL that names no project keeps an empty name and is carried by its text alone.
PipPackage pip_requirement(const std::string& line) {
  PipPackage p;
  p.requirement = redact_text(line);
  const std::string& text = p.requirement;
  static const std::regex egg(R"(#egg=([A-Za-z0-9._-]+))");
  std::smatch m;
  if (text.starts_with("-")) {  // an option line (-e, --extra-index-url, -r): no name unless #egg=
    if (std::regex_search(text, m, egg)) p.name = pep503_normalize(m[1].str());
    return p;
  }
  if (is_location_line(text)) {
    const std::string location = text.substr(0, text.find_first_of(" \t;"));
    if (location.find("://") != std::string::npos) p.url = location;
    if (std::regex_search(location, m, egg)) {
      p.name = pep503_normalize(m[1].str());
    } else {
      const std::string path = location.substr(0, location.find_first_of("?#"));
      const std::size_t slash = path.rfind('/');
      p.name = archive_project_name(slash == std::string::npos ? path : path.substr(slash + 1));
    }
    return p;
  }
  static const std::regex req(R"(^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$)");
  if (!std::regex_match(text, m, req)) return p;  // not PEP 508: kept as requirement text only
  p.name = pep503_normalize(m[1].str());
  std::string rest = trim(m[3].str());
  static const std::regex pinned(R"(^===?\s*([^\s,;]+)$)");
  static const std::regex direct(R"(^@\s*(\S+://\S+)$)");
  std::smatch r;
  if (std::regex_match(rest, r, pinned)) p.version = r[1].str();
  if (std::regex_match(rest, r, direct)) p.url = r[1].str();
  return p;
}

}  // namespace

PipPackage parse_pip_requirement(const std::string& line) { return pip_requirement(line); }

namespace {

// ---- what a manifest's scalars may hold ---------------------------------------------------

/// At most this many bytes of a value a user wrote are echoed in an error (escaped, cut in the
/// middle with `…`): a 1 MB dependency is named, not printed (attack 22 A8).
constexpr std::size_t kEchoBytes = 120;

/// The length of the UTF-8 character that starts with byte `c` (1 for anything else).
std::size_t utf8_length(unsigned char c) {
  return c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
}

/// `text` cut to about `max` bytes on UTF-8 character boundaries: its start, `…`, its end (a
/// third of what is kept), so both ends of a long value stay recognisable.
std::string cut_middle(std::string_view text, std::size_t max) {
  if (text.size() <= max) return std::string(text);
  const std::size_t tail_want = max / 3;
  std::size_t head = 0;
  while (head < text.size() && head + utf8_length(static_cast<unsigned char>(text[head])) <= max - tail_want)
    head += utf8_length(static_cast<unsigned char>(text[head]));
  std::size_t tail = text.size() - std::min(tail_want, text.size());
  while (tail < text.size() && (static_cast<unsigned char>(text[tail]) & 0xc0) == 0x80) ++tail;  // a character's start
  return std::string(text.substr(0, head)) + "…" + std::string(text.substr(tail));
}

/// A value a user wrote, as an error quotes it: controls and invisible characters escaped
/// (printable), cut to kEchoBytes.
std::string echo(std::string_view value) { return cut_middle(printable(value), kEchoBytes); }

/// At most this many bytes of a line of an error (message, hint, detail) are shown; a longer
/// line is cut in the middle (a message keeps its start and its reason) and an excerpt with a
/// caret below it is shown as a window around the caret.
constexpr std::size_t kLineBytes = 240;

/// The start of the UTF-8 character at or before byte `i`.
std::size_t char_start(std::string_view s, std::size_t i) {
  while (i > 0 && i < s.size() && (static_cast<unsigned char>(s[i]) & 0xc0) == 0x80) --i;
  return i;
}

/// `line` (an excerpt, "  " + text) and the caret line below it, as a window of at most
/// kLineBytes around the caret, each cut end marked `…`; the caret under the same character.
/// Escaped with printable(), as the rest of an error is.
std::pair<std::string, std::string> window(std::string_view line, std::string_view caret_line) {
  const std::size_t caret = caret_line.size() - 1;  // the '^'
  const std::size_t indent = std::min<std::size_t>(2, line.size());
  const std::size_t at = std::min(caret, line.size());
  std::size_t from = at > kLineBytes / 3 + indent ? char_start(line, at - kLineBytes / 3) : indent;
  std::size_t to = std::min(line.size(), from + kLineBytes);
  to = to < line.size() ? char_start(line, to) : to;
  const std::string before = printable(line.substr(from, at - from));
  std::string shown = std::string(line.substr(0, indent)) + (from > indent ? "…" : "") + before +
                      printable(line.substr(at, to - at)) + (to < line.size() ? "…" : "");
  std::string under(indent + (from > indent ? 1 : 0), ' ');
  for (std::size_t i = 0; i < before.size(); ++i) {
    const auto c = static_cast<unsigned char>(before[i]);
    if ((c & 0xc0) != 0x80) under += before[i] == '\t' ? '\t' : ' ';
  }
  return {shown, under + "^"};
}

/// `text` (lines of an error) with every line at most about `limit` bytes (see window()).
std::string bounded_lines(const std::string& text, std::size_t limit = kLineBytes) {
  std::vector<std::string_view> lines;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find('\n', start);
    lines.push_back(std::string_view(text).substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  auto is_caret = [](std::string_view l) {
    return !l.empty() && l.back() == '^' && l.find_first_not_of(" \t") == l.size() - 1;
  };
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += '\n';
    if (i + 1 < lines.size() && is_caret(lines[i + 1]) && (lines[i].size() > limit || lines[i + 1].size() > limit)) {
      const auto [shown, under] = window(lines[i], lines[i + 1]);
      out += shown + "\n" + under;
      ++i;
    } else if (lines[i].size() > limit) {
      out += cut_middle(printable(lines[i]), limit);
    } else {
      out += lines[i];
    }
  }
  return out;
}

/// `e` as parse_manifest() returns it: no line of it longer than about kLineBytes, whatever
/// value it quotes (attack 22 A8: a 1 MB dependency was printed whole, three times).
Error bounded(Error e) {
  e.message = bounded_lines(e.message);
  e.detail = bounded_lines(e.detail);
  e.hint = bounded_lines(e.hint, 2 * kLineBytes);  // envlock's own advice, rarely quoting a value
  return e;
}

/// The first control character (is_control_at) of a text; tab is text.
struct Control {
  std::string code;        ///< U+XXXX; empty when there is none
  std::size_t character;   ///< which character it is (1-based, UTF-8 characters)
  std::size_t byte;        ///< its offset
};
Control first_control(std::string_view s) {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xc0) != 0x80) ++chars;
    if (s[i] == '\t' || !is_control_at(s, i)) continue;
    const auto c = static_cast<unsigned char>(s[i]);
    const unsigned cp = c == 0xc2 ? static_cast<unsigned char>(s[i + 1]) : c;
    char buf[16];
    std::snprintf(buf, sizeof buf, "U+%04X", cp);
    return {buf, chars, i};
  }
  return {"", 0, 0};
}

/// Refuses a key or scalar value of the document that holds a control character once YAML has
/// unescaped it: a double-quoted "\x07", "\e", "\u0085" or "\n", a raw C1 (U+0080-U+009F), a
/// line break a block scalar keeps. parse_manifest() refuses raw C0 bytes; this is the same rule
/// for what escapes write (attack 22 A17): names, channels, specs and variables reach lockfiles,
/// activation scripts and terminals, where a control character hides or forges text.
/// The error is at the scalar's file:line:col and names its key path (`environments.gpu.
/// dependencies[1]`). An explicit stack: no recursion however deep the document (yaml-cpp
/// itself refuses nesting past 500 levels).
Status check_scalars(const yaml::Source& src, const YAML::Node& root) {
  struct Item {
    YAML::Node node;
    std::string path;
    bool is_key = false;
    int level = 0;             ///< 1: a top-level key's value
    std::string variable;      ///< the variable a `variables:` value sets
  };
  std::vector<Item> todo{{root, "", false, 0, ""}};
  while (!todo.empty()) {
    Item item = std::move(todo.back());
    todo.pop_back();
    const YAML::Node& n = item.node;
    if (n.IsScalar()) {
      const std::string& text = n.Scalar();
      const Control found = first_control(text);
      if (found.code.empty()) continue;
      const char c = text[found.byte];
      const bool line_char = c == '\n' || c == '\r' || c == '\0';
      const std::string named = !line_char ? "the control character " + found.code + " (character " +
                                                 std::to_string(found.character) + (item.is_key ? " of the key" : " of the value") +
                                                 ", as YAML reads it)"
                                : c == '\n' ? "a newline"
                                : c == '\r' ? "a carriage return"
                                            : "a NUL byte";
      if (!item.variable.empty() && line_char)
        return src.error_at(n, "the value of variable '" + item.variable + "' holds " + named,
                            "a variable's value is one line of text (a NUL cannot be in an environment variable; "
                            "a line break would not survive every shell's activation script)");
      const std::string what = item.is_key ? "the key '" + echo(text) + "'" + (item.path.empty() ? "" : " of `" + item.path + "`")
                               : !item.variable.empty() ? "the value of variable '" + item.variable + "'"
                               : item.path.empty()      ? std::string("the document")
                                                        : "the value of `" + item.path + "`";
      return src.error_at(n, what + " holds " + named,
                          "manifest keys and values are printable text: remove the escape (\\a, \\e, \\n, \\x.., "
                          "\\u..) or the line break from the string");
    }
    std::vector<Item> kids;  // in document order; taken from the stack in that order
    if (n.IsSequence()) {
      std::size_t i = 0;
      for (const auto& child : n)
        kids.push_back({child, item.path + "[" + std::to_string(i++) + "]", false, item.level + 1, ""});
    } else if (n.IsMap()) {
      // `variables:` at the top level (level 1) or of an environment (`environments.NAME.variables`, level 3).
      const bool variables = (item.level == 1 && item.path == "variables") ||
                             (item.level == 3 && item.path.starts_with("environments.") && item.path.ends_with(".variables"));
      for (const auto& kv : n) {
        kids.push_back({kv.first, item.path, true, item.level + 1, ""});
        const std::string key = kv.first.IsScalar() ? echo(kv.first.Scalar()) : std::string("?");
        kids.push_back({kv.second, item.path.empty() ? key : item.path + "." + key, false, item.level + 1,
                        variables ? key : std::string()});
      }
    }
    todo.insert(todo.end(), std::make_move_iterator(kids.rbegin()), std::make_move_iterator(kids.rend()));
  }
  return ok_status();
}

class Parser {
 public:
  Parser(const yaml::Source& src, std::filesystem::path directory)
      : src_(src), dir_(std::move(directory)) {}

  Result<Manifest> parse(std::optional<Manifest::Format> format);

 private:
  SourceLocation loc(const YAML::Node& n) const {
    SourceLocation l{src_.name(), 0, 0};
    const YAML::Mark m = n.Mark();
    if (!m.is_null() && m.line >= 0) {
      l.line = m.line + 1;
      l.column = m.column + 1;
    }
    return l;
  }
  Result<std::string> scalar(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar())
      return src_.error_at(n, what + " must be a string, found " + kind_name(n));
    return n.Scalar();
  }
  /// A RequestedSpec from the scalar `node` holding `text` (already trimmed).
  Result<RequestedSpec> requested(const YAML::Node& node, std::string text) const {
    RequestedSpec rs;
    rs.text = std::move(text);
    rs.location = loc(node);
    // yaml-cpp marks a plain scalar inside a flow sequence at the `[` or `,` before it (and the
    // blanks after that): move the column to the spec's first character, where the user looks.
    if (rs.location.line > 0 && rs.location.column > 0) {
      const std::string_view line = src_.line(rs.location.line);
      auto col = static_cast<std::size_t>(rs.location.column - 1);
      if (col < line.size() && (line[col] == '[' || line[col] == ',')) {
        ++col;
        while (col < line.size() && (line[col] == ' ' || line[col] == '\t')) ++col;
        if (col < line.size()) rs.location.column = static_cast<int>(col + 1);
      }
    }
    if (rs.text.empty()) return src_.error_at(node, "empty dependency", "remove the empty list entry");
    auto spec = MatchSpec::parse(rs.text);
    if (!spec) {
      Error e = src_.error_at(node, "invalid MatchSpec '" + rs.text + "': " + spec.error().message,
                              spec.error().hint.empty()
                                  ? "a MatchSpec reads like `numpy >=1.26,<2`, `python=3.12` or `conda-forge::pytorch 2.4.*`"
                                  : spec.error().hint);
      if (!spec.error().detail.empty()) e.detail += (e.detail.empty() ? "" : "\n") + spec.error().detail;
      return e;
    }
    rs.spec = std::move(*spec);
    return rs;
  }
  Result<std::vector<Channel>> channels(const YAML::Node& n);
  Status pypi_dependencies(const YAML::Node& n, ManifestEnvironment& env);
  Result<std::vector<PypiLocation>> pypi_locations(const YAML::Node& n, const std::string& what, bool index);
  Result<PypiLocation> pypi_location(const YAML::Node& at, const std::string& text, bool index);
  void settle_pip_lists();
  Result<std::vector<std::string>> platforms(const YAML::Node& n, const std::string& what);
  Status dependencies(const YAML::Node& n, ManifestEnvironment& env);
  Status environments(const YAML::Node& n);
  Result<std::vector<std::pair<std::string, std::string>>> variables(const YAML::Node& n, const std::string& what);
  Status virtual_packages(const YAML::Node& n);
  Status reference(const YAML::Node& n);
  Status check_layers();
  Status base_lockfile(const YAML::Node& n, ManifestEnvironment& env);

  const yaml::Source& src_;
  std::filesystem::path dir_;
  Manifest m_;
  std::map<std::string, YAML::Mark> base_marks_;  ///< env -> where its `base:` is written
  std::map<std::string, YAML::Mark> env_marks_;
  /// Per environment: the `pip:` list lines read, with their places, for settle_pip_lists().
  std::map<std::string, std::vector<SourceLocation>> pip_lines_;
  std::map<std::string, SourceLocation> pip_list_at_;
};

Result<std::vector<Channel>> Parser::channels(const YAML::Node& n) {
  if (!n.IsSequence())
    return src_.error_at(n, "channels must be a list, found " + kind_name(n),
                         "write e.g. `channels: [conda-forge]`");
  std::vector<Channel> out;
  std::set<std::string> seen;
  for (const auto& entry : n) {
    // `{url: URL, name: NAME}`: a mirror (or any URL) serving the channel called NAME.
    YAML::Node item = entry;
    std::string mirror_name;
    std::vector<std::string> served;
    if (entry.IsMap()) {
      for (const auto& kv : entry) {
        const std::string key = kv.first.Scalar();
        if (key != "url" && key != "name" && key != "subdirs")
          return src_.error_at_key(kv.first, "unknown key '" + key + "' in a channel",
                               "a channel is a name, a URL, a directory, or {url: URL, name: NAME, subdirs: [...]}");
      }
      if (entry["subdirs"]) {
        auto sd = platforms(entry["subdirs"], "subdirs");
        if (!sd) return sd.error();
        served = std::move(*sd);
      }
      if (!entry["url"])
        return src_.error_at(entry, "a channel written as a map needs `url`", "write {url: URL, name: NAME}");
      item.reset(entry["url"]);  // (operator= would write into `entry`)
      if (entry["name"]) {
        auto nm = scalar(entry["name"], "a channel name");
        if (!nm) return nm.error();
        mirror_name = trim(*nm);
        if (mirror_name.empty() || mirror_name.find("://") != std::string::npos ||
            mirror_name.find_first_of(" \t#:") != std::string::npos)
          return src_.error_at(entry["name"], "channel name '" + redact_text(mirror_name) + "' is not a plain name",
                               "write the name the channel is known by, e.g. conda-forge");
      }
    }
    auto text = scalar(item, "a channel");
    if (!text) return text.error();
    std::string t = trim(*text);
    if (t == "nodefaults") continue;  // conda: "do not add defaults" — envlock never adds them
    std::vector<std::string> spellings;
    if (t == "defaults") {
      spellings = {std::string(kDefaultsMain), std::string(kDefaultsR)};
    } else {
      spellings = {t};
    }
    for (const auto& s : spellings) {
      // RFC 3986: an http(s) URL names a host after "//"; `https://` or `https:///x` has none,
      // and `file://` needs a path.
      if (const auto sep = s.find("://"); sep != std::string::npos) {
        std::string scheme = s.substr(0, sep);
        std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        std::string authority = s.substr(sep + 3, s.find('/', sep + 3) - (sep + 3));
        if (const auto at = authority.rfind('@'); at != std::string::npos) authority.erase(0, at + 1);
        if ((scheme == "http" || scheme == "https") && (authority.empty() || authority[0] == ':'))
          return src_.error_at(item, "channel '" + redact_url(s) + "' has no host name",
                               "write the full channel URL, e.g. https://conda.anaconda.org/conda-forge");
        if (scheme == "file" && s.size() <= sep + 4)
          return src_.error_at(item, "channel '" + redact_url(s) + "' has no path",
                               "write e.g. file:///srv/channel, or a directory path relative to the manifest");
      }
      auto ch = resolve_channel(s, dir_, m_.channel_alias);
      if (!ch) {
        Error e = src_.error_at(item, ch.error().message, ch.error().hint);
        return e;
      }
      ch->location = loc(item);
      if (t == "defaults") ch->spelling = "defaults";
      ch->name = mirror_name;
      ch->subdirs = served;
      if (!seen.insert(ch->url).second)
        return src_.error_at(item, "channel '" + redact_url(s) + "' is listed twice",
                             "list each channel once, in priority order");
      out.push_back(std::move(*ch));
    }
  }
  return out;
}

Result<std::vector<std::string>> Parser::platforms(const YAML::Node& n, const std::string& what) {
  std::vector<YAML::Node> items;
  if (n.IsScalar()) {
    items.push_back(n);
  } else if (n.IsSequence()) {
    for (const auto& i : n) items.push_back(i);
  } else {
    return src_.error_at(n, what + " must be a list of subdirs, found " + kind_name(n),
                         "write e.g. `platforms: [linux-64, osx-arm64]`");
  }
  if (items.empty())
    return src_.error_at(n, what + " is empty", "list at least one subdir, e.g. linux-64");
  std::vector<std::string> out;
  for (const auto& item : items) {
    auto text = scalar(item, "a platform");
    if (!text) return text.error();
    auto p = Platform::parse(trim(*text));
    if (!p) return src_.error_at(item, p.error().message, p.error().hint);
    if (std::find(out.begin(), out.end(), p->to_string()) != out.end())
      return src_.error_at(item, "platform '" + p->to_string() + "' is listed twice");
    out.push_back(p->to_string());
  }
  return out;
}

Status Parser::dependencies(const YAML::Node& n, ManifestEnvironment& env) {
  if (n.IsNull()) return ok_status();
  if (!n.IsSequence())
    return src_.error_at(n, "dependencies must be a list of MatchSpecs, found " + kind_name(n),
                         "write e.g. `dependencies: [python 3.12.*, numpy >=1.26]`");
  static const std::regex selector_re(R"(\s#\s*\[\s*([A-Za-z0-9_-]+)\s*\])");
  auto known_selector = [](const std::string& sel) {
    bool known = false;
    for (const auto& p : Platform::known()) known = known || selector_matches(sel, p);
    return known;
  };
  const std::string selector_hint =
      "use an OS (linux, osx, win, unix), an OS with bits (linux64, osx64, win64), an arch (aarch64, arm64, ppc64le) "
      "or a subdir (linux-64)";
  for (const auto& item : n) {
    if (item.IsMap() && item.size() == 1 && item.begin()->first.IsScalar() &&
        item.begin()->first.Scalar().starts_with("sel(")) {
      // mamba's environment-file selector: `- sel(linux): cudatoolkit`.
      static const std::regex sel_re(R"(^sel\(\s*([A-Za-z0-9_-]+)\s*\)$)");
      const YAML::Node key = item.begin()->first;
      const YAML::Node value = item.begin()->second;
      std::smatch sm;
      const std::string k = key.Scalar();
      if (!std::regex_match(k, sm, sel_re) || !known_selector(sm[1].str()))
        return src_.error_at(key, "unknown selector '" + k + "'", selector_hint);
      auto text = scalar(value, "a dependency");
      if (!text) return text.error();
      auto rs = requested(value, trim(*text));
      if (!rs) return rs.error();
      rs->selector = sm[1].str();
      env.dependencies.push_back(std::move(*rs));
      continue;
    }
    if (item.IsMap()) {
      if (item.size() != 1 || !item["pip"])
        return src_.error_at(item, "a dependency must be a MatchSpec string or a `pip:` list",
                             "write `- numpy >=1.26`, or `- pip: [requests]` for PyPI packages");
      auto st = yaml::check_unique_keys(src_, item);
      if (!st) return st.error();
      const YAML::Node pip = item["pip"];
      if (pip.IsNull()) continue;
      if (!pip.IsSequence())
        return src_.error_at(pip, "`pip:` must be a list of requirements, found " + kind_name(pip));
      for (const auto& req : pip) {
        auto text = scalar(req, "a pip requirement");
        if (!text) return text.error();
        const std::string line = trim(*text);
        // pip's index options (pip install -r reads them in a requirements file): the same model
        // as `pypi-indexes:` / `find-links:` (issue 20 point 1).
        static const std::regex option(R"(^(--index-url|-i|--extra-index-url|--find-links|-f)(?:\s*=\s*|\s+)(\S+)$)");
        std::smatch om;
        if (line.starts_with("-") && line.size() < 4096 && std::regex_match(line, om, option)) {
          const std::string flag = om[1].str();
          const bool index = flag != "--find-links" && flag != "-f";
          auto l = pypi_location(req, om[2].str(), index);
          if (!l) return l.error();
          auto& list = index ? env.pypi_indexes : env.find_links;
          if (!list) list.emplace();
          if (flag == "--index-url" || flag == "-i") list->insert(list->begin(), *l);
          else list->push_back(*l);
        }
        env.pip.push_back(pip_requirement(line));
        pip_lines_[env.name].push_back(loc(req));
      }
      if (!pip_list_at_.count(env.name)) pip_list_at_[env.name] = loc(item);
      continue;
    }
    auto text = scalar(item, "a dependency");
    if (!text) return text.error();
    auto parsed = requested(item, trim(*text));
    if (!parsed) return parsed.error();
    RequestedSpec rs = std::move(*parsed);
    // conda-lock selector comment after the spec on the same line: `- cudatoolkit  # [linux64]`.
    const YAML::Mark mk = item.Mark();
    if (!mk.is_null() && mk.line >= 0) {
      std::string rest(src_.line(mk.line + 1).substr(
          std::min<std::size_t>(static_cast<std::size_t>(mk.column), src_.line(mk.line + 1).size())));
      std::smatch sm;
      if (std::regex_search(rest, sm, selector_re)) {
        std::string sel = sm[1].str();
        if (!known_selector(sel)) {
          YAML::Mark at = mk;
          at.column += static_cast<int>(sm.position(1));
          return src_.error_at(at, "unknown platform selector '[" + sel + "]'", selector_hint);
        }
        rs.selector = sel;
      }
    }
    env.dependencies.push_back(std::move(rs));
  }
  return ok_status();
}

Status Parser::environments(const YAML::Node& n) {
  if (!n.IsMap())
    return src_.error_at(n, "environments must be a map of name -> {dependencies, base, channels, platforms}, found " + kind_name(n));
  if (auto st = yaml::check_unique_keys(src_, n); !st) return st.error();
  for (const auto& kv : n) {
    const std::string env_name = kv.first.Scalar();
    static const std::regex name_re(R"(^[A-Za-z0-9][A-Za-z0-9._-]*$)");
    if (!std::regex_match(env_name, name_re))
      return src_.error_at(kv.first, "environment name '" + env_name + "' is not a plain name",
                           "use letters, digits, '.', '_' and '-' (it appears in lockfiles and on the command line)");
    // The default prefix is .envlock/envs/<name>, with its .<name>.envlock-… folders beside it:
    // a name must leave room for those in a file name (255 bytes), refused here at its line, not
    // by `create` as a usage error (attack 20, L2: `lock` took a 300-byte name).
    constexpr std::size_t kMaxEnvironmentName = 200;
    if (env_name.size() > kMaxEnvironmentName)
      return src_.error_at(kv.first,
                           "environment name '" + env_name.substr(0, 16) + "…' is " + std::to_string(env_name.size()) +
                               " bytes; at most " + std::to_string(kMaxEnvironmentName),
                           "its folder .envlock/envs/<name> and the ones envlock keeps beside it must fit in a file "
                           "name (255 bytes): choose a shorter name");
    if (m_.environments.count(env_name))
      return src_.error_at(kv.first, "environment '" + env_name + "' is defined twice",
                           env_name == "default" ? "top-level `dependencies` already define the environment `default`" : "");
    // `Train` and `train` are one folder on a case-insensitive filesystem (macOS, a CIFS or exFAT
    // share): their .envlock/envs/<name> prefixes would be one environment (attack 20, L2; pixi
    // allows lower-case names only).
    auto lower = [](std::string t) {
      for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return t;
    };
    for (const auto& [other, unused] : m_.environments)
      if (lower(other) == lower(env_name))
        return src_.error_at(kv.first, "environment '" + env_name + "' differs from '" + other + "' only in case",
                             "on a case-insensitive filesystem (macOS, a CIFS or exFAT share) their folders "
                             ".envlock/envs/" + other + " and .envlock/envs/" + env_name +
                                 " are one; rename one of them (pixi allows lower-case names only)");
    ManifestEnvironment env;
    env.name = env_name;
    env.location = loc(kv.first);
    env_marks_[env_name] = kv.first.Mark();
    const YAML::Node body = kv.second;
    if (!body.IsMap())
      return src_.error_at(body.IsNull() ? kv.first : body,
                           "environment '" + env_name + "' must be a map with `dependencies`, found " + kind_name(body),
                           "write e.g. `" + env_name + ": {dependencies: [numpy]}`");
    if (auto st = yaml::check_unique_keys(src_, body); !st) return st.error();
    for (const auto& e : body) {
      const std::string key = e.first.Scalar();
      if (!contains(kEnvironmentKeys, key))
        return src_.error_at_key(e.first, "unknown key '" + key + "' in environment '" + env_name + "'",
                             "an environment has: " + join(kEnvironmentKeys, ", "));
    }
    if (body["dependencies"]) {
      if (auto st = dependencies(body["dependencies"], env); !st) return st.error();
    }
    if (body["base"] && body["base"].IsMap()) {
      if (auto st = base_lockfile(body["base"], env); !st) return st.error();
    } else if (body["base"]) {
      auto b = scalar(body["base"], "base");
      if (!b) return b.error();
      env.base = trim(*b);
      base_marks_[env_name] = body["base"].Mark();
    }
    if (body["channels"]) {
      auto c = channels(body["channels"]);
      if (!c) return c.error();
      env.channels = std::move(*c);
    }
    if (body["platforms"]) {
      auto p = platforms(body["platforms"], "platforms of environment '" + env_name + "'");
      if (!p) return p.error();
      env.platforms = std::move(*p);
    }
    if (body["variables"]) {
      auto v = variables(body["variables"], "variables of environment '" + env_name + "'");
      if (!v) return v.error();
      env.variables = std::move(*v);
    }
    if (body["pypi-dependencies"])
      if (auto st = pypi_dependencies(body["pypi-dependencies"], env); !st) return st.error();
    for (const char* key : {"pypi-indexes", "find-links"}) {
      if (!body[key]) continue;
      auto l = pypi_locations(body[key], std::string(key) + " of environment '" + env_name + "'", key[0] == 'p');
      if (!l) return l.error();
      auto& list = key[0] == 'p' ? env.pypi_indexes : env.find_links;
      if (!list) list.emplace();
      list->insert(list->begin(), l->begin(), l->end());
    }
    m_.environments.emplace(env_name, std::move(env));
  }
  return ok_status();
}

Result<std::vector<std::pair<std::string, std::string>>> Parser::variables(const YAML::Node& n,
                                                                          const std::string& what) {
  if (!n.IsMap())
    return src_.error_at(n, what + " must be a map of name -> value, found " + kind_name(n),
                         "write e.g. `variables: {OMP_NUM_THREADS: \"4\"}`");
  if (auto st = yaml::check_unique_keys(src_, n); !st) return st.error();
  // Names: POSIX environment variable names (IEEE Std 1003.1-2017, 8.1), which every shell can
  // export. PATH and the CONDA_* names are activation's own (conda/activate.py sets them).
  static const std::regex name_re(R"(^[A-Za-z_][A-Za-z0-9_]*$)");
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& kv : n) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (!std::regex_match(key, name_re))
      return src_.error_at(kv.first, "variable name '" + key + "' is not an environment variable name",
                           "use letters, digits and '_', not starting with a digit (POSIX names, as every shell exports them)");
    if (key == "PATH" || key == "CONDA_PREFIX" || key == "CONDA_DEFAULT_ENV" || key == "CONDA_SHLVL" ||
        key == "CONDA_PROMPT_MODIFIER" || key.starts_with("CONDA_PREFIX_"))
      return src_.error_at(kv.first, "variable '" + key + "' is set by activation itself",
                           "activation puts the environment's bin/ first in PATH and sets CONDA_PREFIX, "
                           "CONDA_DEFAULT_ENV and CONDA_SHLVL; an etc/conda/activate.d script may change PATH further");
    if (!kv.second.IsScalar())
      return src_.error_at(kv.second.IsNull() ? kv.first : kv.second,
                           "the value of variable '" + key + "' must be a string, found " + kind_name(kv.second),
                           "write e.g. `" + key + ": \"1\"` (an empty value is `" + key + ": \"\"`)");
    const std::string value = kv.second.Scalar();
    const std::size_t bad = value.find_first_of(std::string("\n\r\0", 3));
    if (bad != std::string::npos) {
      const char* what_char = value[bad] == '\n' ? "a newline" : value[bad] == '\r' ? "a carriage return" : "a NUL byte";
      return src_.error_at(kv.second, std::string("the value of variable '") + key + "' holds " + what_char,
                           "a variable's value is one line of text (a NUL cannot be in an environment variable; "
                           "a line break would not survive every shell's activation script)");
    }
    out.emplace_back(key, value);
  }
  return out;
}

Status Parser::virtual_packages(const YAML::Node& n) {
  if (!n.IsMap())
    return src_.error_at(n, "virtual-packages must be a map of platform -> list, found " + kind_name(n),
                         "write e.g. `virtual-packages: {linux-64: [__cuda=12.4, __glibc=2.28]}`");
  if (auto st = yaml::check_unique_keys(src_, n); !st) return st.error();
  for (const auto& kv : n) {
    auto p = Platform::parse(trim(kv.first.Scalar()));
    if (!p) return src_.error_at(kv.first, p.error().message, p.error().hint);
    if (!kv.second.IsSequence())
      return src_.error_at(kv.second.IsNull() ? kv.first : kv.second,
                           "virtual packages of " + p->to_string() + " must be a list, found " + kind_name(kv.second),
                           "write e.g. `" + p->to_string() + ": [__cuda=12.4, __glibc=2.28]`");
    std::vector<VirtualPackage> list;
    for (const auto& item : kv.second) {
      auto text = scalar(item, "a virtual package");
      if (!text) return text.error();
      std::string t = trim(*text);
      if (!t.starts_with("__"))
        return src_.error_at(item, "'" + t + "' is not a virtual package (their names start with `__`)",
                             "write e.g. __cuda=12.4, __glibc=2.28, __archspec=1=x86_64_v3");
      auto vp = VirtualPackage::parse(t);
      if (!vp) return src_.error_at(item, vp.error().message, vp.error().hint);
      for (const auto& have : list)
        if (have.name == vp->name)
          return src_.error_at(item, "virtual package '" + vp->name + "' is listed twice for " + p->to_string());
      list.push_back(std::move(*vp));
    }
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    m_.virtual_packages[p->to_string()] = std::move(list);
  }
  return ok_status();
}

Status Parser::reference(const YAML::Node& n) {
  if (!n.IsMap())
    return src_.error_at(n, "reference must be a map {command, metric, tolerance}, found " + kind_name(n));
  if (auto st = yaml::check_unique_keys(src_, n); !st) return st.error();
  ReferenceRun r;
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    if (key == "command" || key == "metric") {
      auto v = scalar(kv.second, "reference." + key);
      if (!v) return v.error();
      if (trim(*v).empty()) return src_.error_at(kv.second, "reference." + key + " is empty");
      (key == "command" ? r.command : r.metric) = *v;
    } else if (key == "tolerance") {
      double t = 0;
      try {
        t = kv.second.as<double>();
      } catch (const YAML::Exception&) {
        return src_.error_at(kv.second, "reference.tolerance must be a number, found " + kind_name(kv.second),
                             "write an absolute tolerance, e.g. `tolerance: 0.01`");
      }
      if (!std::isfinite(t) || t < 0)
        return src_.error_at(kv.second, "reference.tolerance must be a finite number >= 0");
      r.tolerance = t;
    } else {
      return src_.error_at_key(kv.first, "unknown key '" + key + "' in reference",
                           "reference has: command, metric, tolerance");
    }
  }
  if (r.command.empty()) return src_.error_at(n, "reference has no `command`", "add the command to run, e.g. `command: python eval.py`");
  if (r.metric.empty())
    return src_.error_at(n, "reference has no `metric`", "add `metric: json:<key>` or `metric: regex:<pattern with one group>`");
  m_.reference = std::move(r);
  return ok_status();
}

// `base: {lockfile: PATH-OR-URL, environment: NAME, sha256: HEX}` (issue 18).
Status Parser::base_lockfile(const YAML::Node& n, ManifestEnvironment& env) {
  if (auto st = yaml::check_unique_keys(src_, n); !st) return st.error();
  ExternalBase b;
  b.location = loc(n);
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    if (key != "lockfile" && key != "environment" && key != "sha256")
      return src_.error_at_key(kv.first, "unknown key '" + key + "' in the base of environment '" + env.name + "'",
                           "a base from another lockfile has: lockfile, environment, sha256");
    auto v = scalar(kv.second, "base " + key);
    if (!v) return v.error();
    std::string value = trim(*v);
    if (value.empty())
      return src_.error_at(kv.second, "base " + key + " of environment '" + env.name + "' is empty");
    if (key == "lockfile") {
      // http:// only on this machine (a test server, a local proxy): elsewhere https:// is required.
      // The host itself, not a prefix of the text: `http://127.0.0.1.example.com/` and
      // `http://localhost@example.com/` leave the machine (attack on issue 18, A1).
      bool loopback = false, userinfo = false;
      if (value.starts_with("http://")) {
        std::string authority = value.substr(7, value.find_first_of("/?#", 7) - 7);
        userinfo = authority.find('@') != std::string::npos;
        if (userinfo) authority = authority.substr(authority.rfind('@') + 1);  // the host follows the last `@`
        std::string host = authority.starts_with("[") ? authority.substr(0, authority.find(']') + 1)
                                                      : authority.substr(0, authority.find(':'));
        const std::string rest = authority.substr(host.size());
        const bool port_only = rest.empty() || (rest[0] == ':' && rest.find_first_not_of("0123456789", 1) == std::string::npos);
        loopback = port_only && (host == "127.0.0.1" || host == "localhost" || host == "[::1]");
      }
      // User info on plain http is named as the reason, not the host (attack 24, A2), as a PyPI
      // index's is: it would be sent unencrypted.
      if (loopback && userinfo)
        return src_.error_at(kv.second, "base lockfile '" + value + "' over plain http:// cannot carry user info (a name or token before `@`): it would be sent unencrypted",
                             "use https:// for a base that needs credentials; plain http:// is allowed for 127.0.0.1 "
                             "and localhost, without user info");
      if (value.find("://") != std::string::npos && !value.starts_with("file://") && !value.starts_with("https://") &&
          !(loopback && !userinfo))
        return src_.error_at(kv.second, "base lockfile '" + value + "' is not a path, a file:// or an https:// URL",
                             "name the lockfile by a path relative to the manifest, or an https:// URL "
                             "(http:// only for 127.0.0.1 or localhost)");
      b.lockfile = value;
    } else if (key == "environment") {
      b.environment = value;
    } else {
      if (value.starts_with("sha256:")) value = value.substr(7);
      value = ascii_lower(value);
      if (value.size() != 64 || value.find_first_not_of("0123456789abcdef") != std::string::npos)
        return src_.error_at(kv.second, "base sha256 '" + value + "' is not 64 hexadecimal digits",
                             "write the output of `sha256sum base.lock`");
      b.sha256 = value;
    }
  }
  if (b.lockfile.empty())
    return src_.error_at(n, "the base of environment '" + env.name + "' names no `lockfile`",
                         "write e.g. `base: {lockfile: ../platform/envlock.lock, environment: default}`");
  if (b.environment.empty())
    return src_.error_at(n, "the base of environment '" + env.name + "' names no `environment`",
                         "name the environment of " + b.lockfile + " to build on, e.g. `environment: default`");
  env.base_lockfile = std::move(b);
  return ok_status();
}

Status Parser::pypi_dependencies(const YAML::Node& n, ManifestEnvironment& env) {
  if (n.IsNull()) return ok_status();
  if (!n.IsSequence())
    return src_.error_at(n, "pypi-dependencies must be a list of PEP 508 requirements, found " + kind_name(n),
                         "write e.g. `pypi-dependencies: [\"requests>=2.31\", \"rich[jupyter]; python_version >= '3.9'\"]`");
  // A PEP 508 name first (the rest is checked when the lock parses it, envlock/pypi_version.hpp).
  static const std::regex named(R"(^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\s*[\[(<>=!~;@ ].*)?$)");
  for (const auto& item : n) {
    auto text = scalar(item, "a PyPI requirement");
    if (!text) return text.error();
    const std::string t = trim(*text);
    if (!std::regex_match(t, named))
      return src_.error_at(item, "'" + redact_text(t) + "' is not a PEP 508 requirement",
                           "write a project name, optional [extras], a version specifier and a marker, e.g. "
                           "`torch==2.4.1` or `pytest; extra == 'test'`; paths and URLs go in a `pip:` list");
    env.pypi_dependencies.push_back({redact_text(t), loc(item), false});
  }
  return ok_status();
}

Result<PypiLocation> Parser::pypi_location(const YAML::Node& at, const std::string& text, bool index) {
  const std::string t = trim(text);
  const std::string what = index ? "a PyPI index" : "a find-links location";
  if (t.starts_with("https://") || t.starts_with("file://") ||
      (t.starts_with("http://") && (t.starts_with("http://127.0.0.1") || t.starts_with("http://localhost")) &&
       !url_has_credentials(t))) {
    // http:// only on this machine (the loopback rule of channels and base lockfiles).
    if (t.starts_with("http://")) {
      const std::string host = t.substr(7, t.find_first_of("/:?#", 7) - 7);
      if (host != "127.0.0.1" && host != "localhost")
        return src_.error_at(at, what + " over plain http:// must be on this machine (127.0.0.1 or localhost)", "use https://");
    }
    return PypiLocation{t, redact_url(t)};
  }
  // User info on plain http (`http://user:token@127.0.0.1/simple`): named as the reason, not the
  // host (attack 23, F5); the base lockfile's rule (docs/manifest.md).
  if (t.starts_with("http://") && t.substr(7, t.find_first_of("/?#", 7) - 7).find('@') != std::string::npos)
    return src_.error_at(at, what + " over plain http:// cannot carry user info (a name or token before `@`): it would be sent unencrypted",
                         "use https:// for an index that needs credentials; plain http:// is allowed for 127.0.0.1 "
                         "and localhost, without user info");
  if (t.find("://") != std::string::npos)
    return src_.error_at(at, what + " must be an https:// or file:// URL" + std::string(index ? "" : " or a folder"),
                         "plain http:// is allowed for 127.0.0.1 and localhost only");
  if (index) return src_.error_at(at, "'" + t + "' is not an index URL", "write the simple-API URL, e.g. https://pypi.org/simple");
  std::filesystem::path p = t;
  if (t.starts_with("~/")) p = home_folder() / t.substr(2);
  else if (p.is_relative()) p = dir_ / p;
  return PypiLocation{std::filesystem::absolute(p).lexically_normal().string(), t};
}

Result<std::vector<PypiLocation>> Parser::pypi_locations(const YAML::Node& n, const std::string& what, bool index) {
  std::vector<YAML::Node> items;
  if (n.IsScalar()) items.push_back(n);
  else if (n.IsSequence())
    for (const auto& i : n) items.push_back(i);
  else
    return src_.error_at(n, what + " must be a list of " + (index ? "URLs" : "folders or URLs") + ", found " + kind_name(n),
                         index ? "write e.g. `pypi-indexes: [https://pypi.org/simple]`" : "write e.g. `find-links: [./wheels]`");
  std::vector<PypiLocation> out;
  for (const auto& item : items) {
    auto text = scalar(item, index ? "an index URL" : "a find-links location");
    if (!text) return text.error();
    auto l = pypi_location(item, *text, index);
    if (!l) return l.error();
    out.push_back(std::move(*l));
  }
  return out;
}

// The `pip:` lines of an environment that has an index or find-links (its own, the manifest's,
// or `pypi-dependencies:`) are resolved: their PEP 508 lines move to pypi_dependencies and their
// index options are consumed; paths, URLs and `-e` lines stay carried as written. Without any,
// every line stays carried unresolved, as before (no network at lock time for a manifest that
// never asked for an index), with a warning that says how to resolve them.
void Parser::settle_pip_lists() {
  auto is_index_option = [](const std::string& line) {
    for (std::string_view flag : {"--index-url", "-i", "--extra-index-url", "--find-links", "-f"})
      if (line.size() > flag.size() && line.starts_with(flag) &&
          (line[flag.size()] == ' ' || line[flag.size()] == '\t' || line[flag.size()] == '='))
        return true;
    return false;
  };
  for (auto& [name, env] : m_.environments) {
    auto lines = pip_lines_.find(name);
    if (lines == pip_lines_.end()) continue;
    const bool resolvable = !env.pypi_dependencies.empty() || (env.pypi_indexes && !env.pypi_indexes->empty()) ||
                            (env.find_links && !env.find_links->empty()) || !m_.pypi_indexes.empty() || !m_.find_links.empty();
    std::vector<PipPackage> kept;
    std::size_t unresolved = 0;
    for (std::size_t i = 0; i < env.pip.size(); ++i) {
      const PipPackage& p = env.pip[i];
      const bool is_option = is_index_option(p.requirement);
      const std::string head = p.requirement.substr(0, p.requirement.find(';'));
      const bool pep508 = !p.name.empty() && p.url.empty() && !is_option && !head.empty() &&
                          std::isalnum(static_cast<unsigned char>(head[0])) && head.find('/') == std::string::npos &&
                          !head.ends_with(".whl") && !head.ends_with(".zip") && !head.ends_with(".tar.gz");
      if (resolvable && pep508) {
        env.pypi_dependencies.push_back({p.requirement, i < lines->second.size() ? lines->second[i] : SourceLocation{}, true});
        continue;
      }
      if (resolvable && is_option) continue;
      if (!is_option) ++unresolved;
      kept.push_back(p);
    }
    env.pip = std::move(kept);
    if (unresolved > 0 || (!resolvable && !env.pip.empty()))
      m_.warnings.push_back(pip_list_at_[name].to_string() + ": " + std::to_string(env.pip.size()) + " pip requirement" +
                            (env.pip.size() == 1 ? "" : "s") + " of environment '" + name +
                            "' carried unresolved into the lockfile (" +
                            (resolvable ? std::string("paths, URLs and editable lines are not resolved")
                                        : std::string("envlock resolves pip lines when the manifest names `pypi-indexes:` or `find-links:`")) +
                            ")");
  }
}

Status Parser::check_layers() {
  for (const auto& [env_name, env] : m_.environments) {
    if (env.base.empty()) continue;
    const YAML::Mark at = base_marks_[env_name];
    if (env.base == env_name) return src_.error_at(at, "environment '" + env_name + "' cannot be its own base");
    const ManifestEnvironment* base = m_.environment(env.base);
    if (base == nullptr) {
      std::string names;
      for (const auto& kv : m_.environments) names += (names.empty() ? "" : ", ") + kv.first;
      return src_.error_at(at, "base '" + env.base + "' of environment '" + env_name + "' is not an environment of this manifest",
                           "known environments: " + names);
    }
    // Walk the chain: a cycle never ends at an environment without base.
    std::set<std::string> seen{env_name};
    for (const ManifestEnvironment* e = base; e != nullptr && !e->base.empty(); e = m_.environment(e->base)) {
      if (!seen.insert(e->name).second)
        return src_.error_at(at, "environment '" + env_name + "' has a cycle of base layers through '" + e->name + "'",
                             "a base layer must not (indirectly) be built on its project");
    }
    for (const auto& p : m_.platforms_for(env)) {
      const auto& bp = m_.platforms_for(*base);
      if (std::find(bp.begin(), bp.end(), p) == bp.end())
        return src_.error_at(at, "environment '" + env_name + "' is locked for " + p + " but its base '" + env.base + "' is not",
                             "add " + p + " to the platforms of '" + env.base + "', or drop it from '" + env_name + "'");
    }
  }
  for (const auto& [env_name, env] : m_.environments) {
    if (m_.channels_for(env).empty()) {
      auto it = env_marks_.find(env_name);
      return src_.error_at(it == env_marks_.end() ? YAML::Mark() : it->second,
                           "environment '" + env_name + "' has no channels",
                           "add `channels: [conda-forge]` (a name, URL or directory) to the manifest");
    }
  }
  return ok_status();
}

Result<Manifest> Parser::parse(std::optional<Manifest::Format> format) {
  auto loaded = src_.load();
  if (!loaded) return loaded.error();
  const YAML::Node root = *loaded;
  if (root.IsNull() || !root.IsDefined())
    return Error{ErrorKind::Parse, src_.name(), "the manifest is empty", "",
                 "a manifest needs at least `channels` and `dependencies`; see docs/manifest.md"};
  if (!root.IsMap())
    return src_.error_at(root, "a manifest must be a YAML map at the top level, found " + kind_name(root),
                         "start with `channels:` and `dependencies:`; see docs/manifest.md");
  if (auto st = yaml::check_unique_keys(src_, root); !st) return st.error();
  if (auto st = check_scalars(src_, root); !st) return st.error();

  if (format) {
    m_.format = *format;
  } else {
    bool envlock = src_.name().find("envlock") != std::string::npos;
    for (const auto& kv : root) envlock = envlock || contains(kEnvlockOnlyKeys, kv.first.Scalar());
    m_.format = envlock ? Manifest::Format::Envlock : Manifest::Format::CondaEnvironment;
  }
  const bool conda = m_.format == Manifest::Format::CondaEnvironment;
  m_.directory = dir_;

  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (conda ? contains(kCondaKeys, key) : contains(kEnvlockKeys, key)) continue;
    if (conda) {
      if (key == "subdirs" && !root["dependencies"])
        return src_.error_at(kv.first, "this is a conda-lock virtual-packages file, not an environment file",
                             "declare virtual packages in envlock.yaml under `virtual-packages:`, e.g. `linux-64: [__cuda=12.4]`");
      m_.warnings.push_back(src_.where(kv.first.Mark()) + ": key '" + key +
                            "' of environment.yml is ignored by envlock");
      continue;
    }
    return src_.error_at_key(kv.first, "unknown key '" + key + "'", "envlock.yaml keys are: " + join(kEnvlockKeys, ", "));
  }

  if (root["name"]) {
    auto n = scalar(root["name"], "name");
    if (!n) return n.error();
    m_.name = trim(*n);
  }
  if (root["channel-alias"]) {
    auto a = scalar(root["channel-alias"], "channel-alias");
    if (!a) return a.error();
    std::string alias = trim(*a);
    if (!(alias.starts_with("https://") || alias.starts_with("http://") || alias.starts_with("file:///")))
      return src_.error_at(root["channel-alias"], "channel-alias must be an http(s):// or file:/// URL",
                           "the default is " + std::string(kDefaultChannelAlias));
    while (alias.size() > 1 && alias.back() == '/') alias.pop_back();
    m_.channel_alias = alias;
  }
  if (root["channels"]) {
    auto c = channels(root["channels"]);
    if (!c) return c.error();
    m_.channels = std::move(*c);
  } else if (conda) {
    // conda's behaviour for an environment.yml without channels: its `defaults`.
    for (auto url : {kDefaultsMain, kDefaultsR}) {
      auto ch = resolve_channel(url, dir_, m_.channel_alias);
      ch->spelling = "defaults";
      m_.channels.push_back(*ch);
    }
    m_.warnings.push_back(src_.name() + ": no `channels`: using conda's defaults (" + std::string(kDefaultsMain) +
                          ", " + std::string(kDefaultsR) + ")");
  }
  if (root["platforms"]) {
    auto p = platforms(root["platforms"], "platforms");
    if (!p) return p.error();
    m_.platforms = std::move(*p);
  } else {
    m_.platforms = {Platform::host().to_string()};
    m_.platforms_from_host = true;
  }
  if (root["channel-priority"]) {
    auto v = scalar(root["channel-priority"], "channel-priority");
    if (!v) return v.error();
    std::string s = trim(*v);
    if (s == "strict") m_.channel_priority = ChannelPriority::Strict;
    else if (s == "flexible") m_.channel_priority = ChannelPriority::Flexible;
    else if (s == "disabled") m_.channel_priority = ChannelPriority::Disabled;
    else
      return src_.error_at(root["channel-priority"], "unknown channel-priority '" + s + "'",
                           "use strict (the default), flexible or disabled");
  }
  if (root["dependencies"]) {
    ManifestEnvironment env;
    env.name = "default";
    env.location = loc(root["dependencies"]);
    env_marks_["default"] = root["dependencies"].Mark();
    if (auto st = dependencies(root["dependencies"], env); !st) return st.error();
    m_.environments.emplace("default", std::move(env));
  }
  if (root["pypi-dependencies"]) {
    auto it = m_.environments.find("default");
    if (it == m_.environments.end()) {
      ManifestEnvironment env;
      env.name = "default";
      env.location = loc(root["pypi-dependencies"]);
      env_marks_["default"] = root["pypi-dependencies"].Mark();
      it = m_.environments.emplace("default", std::move(env)).first;
    }
    if (auto st = pypi_dependencies(root["pypi-dependencies"], it->second); !st) return st.error();
  }
  for (const char* key : {"pypi-indexes", "find-links"}) {
    if (!root[key]) continue;
    auto l = pypi_locations(root[key], key, key[0] == 'p');
    if (!l) return l.error();
    (key[0] == 'p' ? m_.pypi_indexes : m_.find_links) = std::move(*l);
  }
  if (root["environments"]) {
    if (auto st = environments(root["environments"]); !st) return st.error();
  }
  settle_pip_lists();
  if (root["virtual-packages"]) {
    if (auto st = virtual_packages(root["virtual-packages"]); !st) return st.error();
  }
  if (root["reference"]) {
    if (auto st = reference(root["reference"]); !st) return st.error();
  }
  if (root["variables"]) {
    auto v = variables(root["variables"], "variables");
    if (!v) return v.error();
    m_.variables = std::move(*v);
  }
  if (m_.environments.empty())
    return src_.error_at_unquoted(root, "nothing to lock: no `dependencies` and no `environments`",
                         "add `dependencies: [...]` (the environment `default`) or `environments:`");
  if (auto st = check_layers(); !st) return st.error();
  return std::move(m_);
}

}  // namespace

Result<Manifest> parse_manifest(const std::string& text, const std::string& source,
                                const std::filesystem::path& directory,
                                std::optional<Manifest::Format> format) {
  // YAML 1.2 (5.1) allows no C0 control character but tab, LF and CR: such a byte means the file
  // is binary (an archive, an image), which yaml-cpp would otherwise read as an empty document.
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
      const std::size_t line_start = text.rfind('\n', i == 0 ? 0 : i - 1);
      const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(i), '\n'));
      const std::size_t col = line_start == std::string::npos || i == 0 ? i + 1 : i - line_start;
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", c);
      return Error{ErrorKind::Parse, source + ":" + std::to_string(line) + ":" + std::to_string(col),
                   std::string("is not a text (YAML) file: it contains the control byte ") + hex, "",
                   "pass the manifest (envlock.yaml or environment.yml), a YAML text file"};
    }
  }
  // YAML 1.2 (5.2) streams are Unicode: a byte that is not valid UTF-8 (a Latin-1 file, a
  // corrupted edit) would reach names, channels and the manifest hash undecodable.
  if (const std::string clean = escape_invalid_utf8(text); clean != text) {
    std::size_t i = 0;
    while (i < text.size() && text[i] == clean[i]) ++i;  // the first byte escape_invalid_utf8 rewrote
    const std::size_t line_start = i == 0 ? std::string::npos : text.rfind('\n', i - 1);
    const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(i), '\n'));
    const std::size_t col = line_start == std::string::npos ? i + 1 : i - line_start;
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[i]));
    return Error{ErrorKind::Parse, source + ":" + std::to_string(line) + ":" + std::to_string(col),
                 std::string("is not UTF-8 text: the byte ") + hex + " is not part of a valid UTF-8 character", "",
                 "save the manifest as UTF-8 (YAML files are Unicode text)"};
  }
  yaml::Source src(text, source);
  Parser parser(src, directory);
  auto m = parser.parse(format);
  if (!m) return bounded(m.error());
  for (auto& w : m->warnings) w = bounded_lines(w);
  return m;
}

Result<Manifest> load_manifest(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Error{ErrorKind::Io, path.string(), "is a directory, not a manifest file", "",
                 "pass the manifest file, e.g. " + (path / "envlock.yaml").string()};
  // A pull request's envlock.yaml can be a link to anything: regular files only, outside /proc,
  // /sys and /dev, bounded (envlock/input_file.hpp); one of another shape is never quoted.
  constexpr std::uintmax_t kMaxManifestBytes = 16u << 20;
  InputFile file = read_input_file(path, kMaxManifestBytes);
  switch (file.problem) {
    case InputFile::Problem::None: break;
    case InputFile::Problem::Open:
      return Error{ErrorKind::Io, path.string(), "cannot open the manifest: " + std::string(std::strerror(file.error_number)), "",
                   "check the path given with -f"};
    case InputFile::Problem::Refused:
      return Error{ErrorKind::Io, path.string(), file.message, "", "check the path given with -f"};
    case InputFile::Problem::TooLarge: {
      const auto size = std::filesystem::file_size(path, ec);
      return Error{ErrorKind::Parse, path.string(),
                   ec ? std::string("the manifest is larger than 16 MiB; envlock reads manifests up to 16 MiB")
                      : "the manifest is " + std::to_string(size) + " bytes; envlock reads manifests up to 16 MiB",
                   "", "is this the right file?"};
    }
    case InputFile::Problem::Read:
      return Error{ErrorKind::Io, path.string(), "cannot read the manifest", "", ""};
  }
  if (!starts_like_yaml_map(file.text)) return input_not_yaml_map(path.string(), "a manifest");
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  auto m = parse_manifest(file.text, path.string(), std::filesystem::absolute(dir, ec).lexically_normal());
  if (m) m->path = path;
  return m;
}

}  // namespace envlock
