// `envlock add` / `envlock rm`: a manifest's dependency list edited as text at yaml-cpp's node
// positions, every other byte kept (envlock/manifest_edit.hpp).
#include "envlock/manifest_edit.hpp"

#include <algorithm>
#include <optional>

#include "envlock/text.hpp"
#include "envlock/url.hpp"
#include "emit.hpp"
#include "yaml_source.hpp"

namespace envlock {
namespace {

constexpr std::size_t npos = std::string::npos;

/// One replacement of the text: `erase` bytes at `pos` become `insert`.
struct Splice {
  std::size_t pos = 0;
  std::size_t erase = 0;
  std::string insert;
};

std::string spliced(const std::string& text, std::vector<Splice> splices) {
  std::sort(splices.begin(), splices.end(), [](const Splice& a, const Splice& b) { return a.pos > b.pos; });
  std::string out = text;
  for (const auto& s : splices) out.replace(s.pos, s.erase, s.insert);
  return out;
}

/// Positions in the manifest text (0-based offsets, as yaml-cpp's Mark::pos).
class Text {
 public:
  explicit Text(const std::string& t) : t_(t) {}
  [[nodiscard]] std::size_t size() const { return t_.size(); }
  [[nodiscard]] char at(std::size_t i) const { return i < t_.size() ? t_[i] : '\0'; }
  [[nodiscard]] std::size_t line_start(std::size_t pos) const {
    if (pos == 0) return 0;
    const std::size_t nl = t_.rfind('\n', pos - 1);
    return nl == npos ? 0 : nl + 1;
  }
  /// The offset of the '\n' ending the line of `pos`, or the text's size.
  [[nodiscard]] std::size_t line_end(std::size_t pos) const {
    const std::size_t nl = t_.find('\n', pos);
    return nl == npos ? t_.size() : nl;
  }
  [[nodiscard]] int line_number(std::size_t pos) const {  // 1-based
    return 1 + static_cast<int>(std::count(t_.begin(), t_.begin() + static_cast<std::ptrdiff_t>(std::min(pos, t_.size())), '\n'));
  }
  [[nodiscard]] int indent(std::size_t line_start) const {
    std::size_t i = line_start;
    while (i < t_.size() && t_[i] == ' ') ++i;
    return static_cast<int>(i - line_start);
  }
  /// True for a line holding only blanks or a comment.
  [[nodiscard]] bool quiet_line(std::size_t line_start) const {
    std::size_t i = line_start;
    while (i < t_.size() && (t_[i] == ' ' || t_[i] == '\t' || t_[i] == '\r')) ++i;
    return i >= t_.size() || t_[i] == '\n' || t_[i] == '#';
  }
  [[nodiscard]] std::size_t skip_blanks(std::size_t i, bool newlines) const {
    while (i < t_.size()) {
      const char c = t_[i];
      if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++i;
      } else if (newlines && c == '#' && (i == 0 || t_[i - 1] == ' ' || t_[i - 1] == '\t' || t_[i - 1] == '\n')) {
        i = line_end(i);  // a comment inside a flow collection spread over lines
      } else {
        break;
      }
    }
    return i;
  }

  /// Where a node's text starts: yaml-cpp marks a plain scalar inside a flow sequence at the `[`
  /// or `,` before it (and the blanks after that), as the manifest parser notes too.
  [[nodiscard]] std::size_t node_start(const YAML::Node& n, bool flow) const {
    std::size_t i = static_cast<std::size_t>(n.Mark().pos);
    if (!flow || !n.IsScalar()) return i;
    i = skip_blanks(i, true);
    while (at(i) == '[' || at(i) == ',') i = skip_blanks(i + 1, true);
    return i;
  }

  /// The end (exclusive) of the plain text of one line from `i`: before a line break, a ` #`
  /// comment and, in a flow collection, `,`, `]` or `}`; trailing blanks not included.
  [[nodiscard]] std::size_t plain_line_end(std::size_t i, bool flow) const {
    std::size_t e = i;
    while (e < t_.size()) {
      const char c = t_[e];
      if (c == '\n') break;
      if (c == '#' && e > i && (t_[e - 1] == ' ' || t_[e - 1] == '\t')) break;
      if (flow && (c == ',' || c == ']' || c == '}')) break;
      ++e;
    }
    while (e > i && (t_[e - 1] == ' ' || t_[e - 1] == '\t' || t_[e - 1] == '\r')) --e;
    return e;
  }

  /// The end (exclusive) of the scalar starting at `pos`: its closing quote, or the end of its
  /// plain text (continued on the next lines indented deeper than `min_indent`, in block context).
  [[nodiscard]] std::size_t scalar_end(std::size_t pos, bool flow, int min_indent) const {
    if (at(pos) == '"') {
      for (std::size_t i = pos + 1; i < t_.size(); ++i) {
        if (t_[i] == '\\') ++i;
        else if (t_[i] == '"') return i + 1;
      }
      return t_.size();
    }
    if (at(pos) == '\'') {
      for (std::size_t i = pos + 1; i < t_.size(); ++i) {
        if (t_[i] != '\'') continue;
        if (at(i + 1) == '\'') ++i;
        else return i + 1;
      }
      return t_.size();
    }
    std::size_t end = plain_line_end(pos, flow);
    if (flow || end < line_end(pos)) return end;  // a comment ends a plain scalar
    for (std::size_t ls = line_end(pos) + 1; ls < t_.size(); ls = line_end(ls) + 1) {
      if (quiet_line(ls)) {
        if (t_[ls + static_cast<std::size_t>(indent(ls))] == '#') break;
        continue;  // a blank line may sit inside a plain scalar
      }
      if (indent(ls) <= min_indent) break;
      end = plain_line_end(ls + static_cast<std::size_t>(indent(ls)), false);
      if (end < line_end(ls)) break;
    }
    return end;
  }

  /// The end (exclusive) of the map key starting at `pos`: its closing quote, or its `:`.
  [[nodiscard]] std::size_t key_end(std::size_t pos) const {
    if (at(pos) == '"' || at(pos) == '\'') return scalar_end(pos, true, 0);
    std::size_t i = pos;
    while (i < t_.size() &&
           !(t_[i] == ':' && (i + 1 == t_.size() || std::string_view(" \t\r\n,]}").find(t_[i + 1]) != npos)))
      ++i;
    return i;
  }

  /// The end (exclusive, after the bracket) of the flow collection opening at `pos`.
  [[nodiscard]] std::size_t flow_end(std::size_t pos) const {
    int depth = 0;
    for (std::size_t i = pos; i < t_.size(); ++i) {
      const char c = t_[i];
      if (c == '"' || c == '\'') {
        i = scalar_end(i, true, 0) - 1;
      } else if (c == '#' && i > 0 && (t_[i - 1] == ' ' || t_[i - 1] == '\t' || t_[i - 1] == '\n')) {
        i = line_end(i) - 1;
      } else if (c == '[' || c == '{') {
        ++depth;
      } else if (c == ']' || c == '}') {
        if (--depth == 0) return i + 1;
      }
    }
    return t_.size();
  }

  /// The end of the last line that holds lines of a block node begun on the line of `start`:
  /// the following lines indented deeper than `min_indent` (blank and comment lines are not
  /// counted as its end).
  [[nodiscard]] std::size_t indented_end(std::size_t start, int min_indent) const {
    std::size_t end = line_end(start);
    for (std::size_t ls = end + 1; ls < t_.size(); ls = line_end(ls) + 1) {
      if (quiet_line(ls)) continue;
      if (indent(ls) <= min_indent) break;
      end = line_end(ls);
    }
    return end;
  }

  /// The end of the last line holding node `n` (in block context, under a parent at `min_indent`).
  [[nodiscard]] std::size_t last_line_end(const YAML::Node& n, int min_indent) const;

  /// The end of the last line of entry `i` of the block sequence `seq`.
  [[nodiscard]] std::size_t block_item_end(const YAML::Node& seq, std::size_t i) const {
    const int dash_col = seq.Mark().column;
    const YAML::Node item = seq[i];
    return std::max(indented_end(static_cast<std::size_t>(item.Mark().pos), dash_col), last_line_end(item, dash_col));
  }

  /// The offset of the dash of a block sequence entry that starts at `pos`.
  [[nodiscard]] std::optional<std::size_t> dash_before(std::size_t pos) const {
    std::size_t i = pos;
    while (i > 0 && (t_[i - 1] == ' ' || t_[i - 1] == '\t')) --i;
    if (i == 0 || t_[i - 1] != '-') return std::nullopt;
    return i - 1;
  }

  [[nodiscard]] const std::string& str() const { return t_; }

 private:
  const std::string& t_;
};

std::size_t Text::last_line_end(const YAML::Node& n, int min_indent) const {
  const auto pos = static_cast<std::size_t>(n.Mark().pos);
  if (n.IsScalar()) return line_end(scalar_end(pos, false, min_indent) - 1);
  if (n.IsNull() || n.size() == 0) return line_end(pos);
  if (n.Style() == YAML::EmitterStyle::Flow) return line_end(flow_end(pos) - 1);
  if (n.IsSequence()) return block_item_end(n, n.size() - 1);
  // A block map: its last entry.
  YAML::const_iterator last;
  for (auto it = n.begin(); it != n.end(); ++it) last = it;
  const int key_col = last->first.Mark().column;
  std::size_t end = indented_end(static_cast<std::size_t>(last->first.Mark().pos), key_col);
  if (!last->second.IsNull()) end = std::max(end, last_line_end(last->second, key_col));
  return end;
}

// ---- scalars as YAML reads them back -------------------------------------------------------

/// True when `s` written plain reads back as the string `s` (YAML 1.2 plain scalars).
bool plain_ok(std::string_view s, bool flow) {
  if (s.empty() || s != trim(s)) return false;
  if (std::string_view("-?:,[]{}#&*!|>'\"%@`").find(s.front()) != std::string_view::npos) return false;
  if (s.find(": ") != npos || s.find(" #") != npos || s.find('\t') != npos || s.back() == ':') return false;
  if (flow && s.find_first_of(",[]{}") != npos) return false;
  for (std::string_view word : {"~", "null", "Null", "NULL"})
    if (s == word) return false;
  return true;
}

/// `s` as a YAML scalar in `quote` style ('"', '\'', or 0 for plain when plain_ok, else '"'): the
/// list's own style, so the new entry looks like its neighbours; the quoting itself is the one
/// emitter's (src/yaml/emit.hpp).
std::string yaml_scalar(std::string_view s, char quote, bool flow) {
  if (quote == 0 && plain_ok(s, flow)) return std::string(s);
  return quote == '\'' ? yaml::single_quoted(s) : yaml::double_quoted(s);
}

char quote_of(const Text& t, std::size_t pos) {
  const char c = t.at(pos);
  return c == '"' || c == '\'' ? c : 0;
}

// ---- where an environment's lists are -------------------------------------------------------

/// A key of a map and its value (value null when written without one); `present` false when the
/// map has no such key.
struct Slot {
  YAML::Node map;
  YAML::Node key;
  YAML::Node value;
  bool present = false;
};

Slot find_key(const YAML::Node& map, std::string_view name) {
  Slot s;
  s.map = map;
  if (!map.IsMap()) return s;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == name) {
      s.key = it->first;
      s.value = it->second;
      s.present = true;
    }
  }
  return s;
}

/// The `dependencies:` slot of an environment: the top level's for `default` when it has one,
/// else the one in `environments: {NAME: {...}}`.
std::optional<Slot> dependencies_slot(const YAML::Node& root, std::string_view env) {
  if (env == "default") {
    Slot top = find_key(root, "dependencies");
    if (top.present || find_key(root, "pypi-dependencies").present) return top;
  }
  Slot envs = find_key(root, "environments");
  if (!envs.present || !envs.value.IsMap()) return std::nullopt;
  Slot body = find_key(envs.value, env);
  if (!body.present || !body.value.IsMap()) return std::nullopt;
  return find_key(body.value, "dependencies");
}

/// One entry of a dependency list.
struct Entry {
  YAML::Node list;        ///< the sequence holding it
  std::size_t index = 0;  ///< its place in `list`
  YAML::Node scalar;      ///< the spec's scalar (the entry, or the value of `sel(...): spec`)
  std::size_t ordinal = 0;///< its place in ManifestEnvironment::dependencies or ::pip
  std::string name;
  std::string text;
  /// Pypi: true for an entry of `pypi-dependencies:`, false for one of a `pip:` list.
  bool pypi_dependencies = false;
};

/// The `- pip:` entry of a `dependencies` list: (index, its pip slot).
std::optional<std::pair<std::size_t, Slot>> pip_entry(const YAML::Node& deps) {
  if (!deps.IsSequence()) return std::nullopt;
  for (std::size_t i = 0; i < deps.size(); ++i) {
    const YAML::Node item = deps[i];
    if (item.IsMap() && item.size() == 1 && item.begin()->first.IsScalar() && item.begin()->first.Scalar() == "pip")
      return std::make_pair(i, find_key(item, "pip"));
  }
  return std::nullopt;
}

/// Every conda entry of the environment's `dependencies` list, in the order the parser read them
/// (`kind` Pypi: none; pypi_entries reads those).
std::vector<Entry> entries_of(const YAML::Node& deps, const ManifestEnvironment& env, DependencyKind kind) {
  std::vector<Entry> out;
  if (!deps.IsSequence() || kind != DependencyKind::Conda) return out;
  std::size_t conda = 0;
  for (std::size_t i = 0; i < deps.size(); ++i) {
    const YAML::Node item = deps[i];
    if (item.IsMap() && item.size() == 1 && item.begin()->first.IsScalar() &&
        item.begin()->first.Scalar().starts_with("sel(")) {
      if (conda < env.dependencies.size()) {
        const auto& rs = env.dependencies[conda];
        out.push_back({deps, i, item.begin()->second, conda, ascii_lower(rs.spec.exact_name()), rs.text, false});
      }
      ++conda;
    } else if (item.IsMap()) {
      continue;  // a `- pip:` entry
    } else {
      if (conda < env.dependencies.size()) {
        const auto& rs = env.dependencies[conda];
        out.push_back({deps, i, item, conda, ascii_lower(rs.spec.exact_name()), rs.text, false});
      }
      ++conda;
    }
  }
  return out;
}

/// The `pypi-dependencies:` slot of an environment, found as dependencies_slot finds
/// `dependencies:` (the top level's for `default`, else `environments: {NAME: {...}}`).
std::optional<Slot> pypi_dependencies_slot(const YAML::Node& root, std::string_view env) {
  if (env == "default") {
    Slot top = find_key(root, "pypi-dependencies");
    if (top.present || find_key(root, "dependencies").present) return top;
  }
  Slot envs = find_key(root, "environments");
  if (!envs.present || !envs.value.IsMap()) return std::nullopt;
  Slot body = find_key(envs.value, env);
  if (!body.present || !body.value.IsMap()) return std::nullopt;
  return find_key(body.value, "pypi-dependencies");
}

/// Every PyPI entry of the environment, read from the text's tree (not from the parse, which
/// moves the PEP 508 lines of a `pip:` list to pypi_dependencies once the manifest names an index
/// or find-links, and drops its index options; attack 23 F14): the `pypi-dependencies:` list's
/// entries, then each `pip:` list's. `text` is what the parse holds for the entry
/// (pypi_dependencies' redacted text, a pip line's requirement), `name` its PEP 503 name.
std::vector<Entry> pypi_entries(const YAML::Node& root, std::string_view environment) {
  std::vector<Entry> out;
  if (auto slot = pypi_dependencies_slot(root, environment); slot && slot->present && slot->value.IsSequence())
    for (std::size_t i = 0; i < slot->value.size(); ++i) {
      const YAML::Node item = slot->value[i];
      if (!item.IsScalar()) continue;
      const std::string text = redact_text(trim(item.Scalar()));
      out.push_back({slot->value, i, item, 0, parse_pip_requirement(text).name, text, true});
    }
  auto deps = dependencies_slot(root, environment);
  if (!deps || !deps->present || !deps->value.IsSequence()) return out;
  for (std::size_t i = 0; i < deps->value.size(); ++i) {
    const YAML::Node item = deps->value[i];
    if (!item.IsMap() || item.size() != 1 || !item.begin()->first.IsScalar() || item.begin()->first.Scalar() != "pip")
      continue;
    const YAML::Node list = item.begin()->second;
    if (!list.IsSequence()) continue;
    for (std::size_t j = 0; j < list.size(); ++j) {
      if (!list[j].IsScalar()) continue;
      const PipPackage p = parse_pip_requirement(trim(list[j].Scalar()));
      out.push_back({list, j, list[j], 0, p.name, p.requirement, false});
    }
  }
  return out;
}

/// True for a pip line that is one of pip's index options (`--find-links ./wheels`): the parse
/// consumes those as pypi_indexes / find_links once the environment resolves its pip lines.
bool index_option(std::string_view line) {
  for (std::string_view flag : {"--index-url", "-i", "--extra-index-url", "--find-links", "-f"})
    if (line.size() > flag.size() && line.starts_with(flag) &&
        (line[flag.size()] == ' ' || line[flag.size()] == '\t' || line[flag.size()] == '='))
      return true;
  return false;
}

/// True for a pip requirement that names a project by PEP 508 alone (no path, URL, `-e` or other
/// option): what `pypi-dependencies:` may hold (the parser sends paths and URLs to a `pip:` list).
bool named_requirement(std::string_view spec) {
  return !spec.empty() && std::string_view("-./~").find(spec.front()) == std::string_view::npos &&
         spec.find("://") == std::string_view::npos;
}

// ---- the edits ------------------------------------------------------------------------------

/// What a new list entry is: a spec, or a `pip:` entry holding one requirement.
struct NewItem {
  std::string spec;
  bool pip_wrapper = false;
  char quote = 0;  ///< the style of the list's last scalar entry

  [[nodiscard]] std::string flow() const {
    return pip_wrapper ? "{pip: [" + yaml_scalar(spec, quote, true) + "]}" : yaml_scalar(spec, quote, true);
  }
  /// The lines of a block entry whose dash is at `col`, `gap` blanks after it (no final newline).
  [[nodiscard]] std::string block(int col, int gap) const {
    const std::string lead(static_cast<std::size_t>(col), ' ');
    const std::string after(static_cast<std::size_t>(std::max(gap, 1)), ' ');
    if (!pip_wrapper) return lead + "-" + after + yaml_scalar(spec, quote, false);
    return lead + "-" + after + "pip:\n" + lead + std::string(1 + after.size(), ' ') + "- " + yaml_scalar(spec, quote, false);
  }
};

/// Splices that append `item` to the sequence `seq` (block or flow, with entries or empty).
std::vector<Splice> append_to(const Text& t, const YAML::Node& seq, NewItem item) {
  const bool flow = seq.Style() == YAML::EmitterStyle::Flow;
  if (seq.size() > 0 && seq[seq.size() - 1].IsScalar())
    item.quote = quote_of(t, t.node_start(seq[seq.size() - 1], flow));
  const auto seq_pos = static_cast<std::size_t>(seq.Mark().pos);
  if (!flow) {
    const int col = seq.Mark().column;
    const YAML::Node last = seq[seq.size() - 1];
    const auto last_pos = static_cast<std::size_t>(last.Mark().pos);
    int gap = 1;
    if (auto dash = t.dash_before(last_pos)) gap = static_cast<int>(last_pos - *dash) - 1;
    return {{t.block_item_end(seq, seq.size() - 1), 0, "\n" + item.block(col, gap)}};
  }
  if (seq.size() == 0) return {{seq_pos + 1, 0, item.flow()}};
  const std::size_t close = t.flow_end(seq_pos) - 1;
  const YAML::Node last = seq[seq.size() - 1];
  const std::size_t last_start = t.node_start(last, true);
  const std::size_t last_end = last.IsScalar() ? t.scalar_end(last_start, true, 0) : t.flow_end(last_start);
  const std::size_t after = t.skip_blanks(last_end, true);
  const bool trailing_comma = t.at(after) == ',';
  if (t.line_number(close) == t.line_number(last_start)) {
    if (trailing_comma) return {{after + 1, 0, " " + item.flow() + ","}};
    return {{last_end, 0, ", " + item.flow()}};
  }
  // One entry per line: a line of its own, indented as the last entry.
  const std::string lead(static_cast<std::size_t>(t.indent(t.line_start(last_start))), ' ');
  if (trailing_comma) return {{t.line_end(after), 0, "\n" + lead + item.flow() + ","}};
  return {{last_end, 0, ","}, {t.line_end(last_end), 0, "\n" + lead + item.flow()}};
}

/// Splices that give the key of `slot` (present, its value null) a list holding `item`.
std::vector<Splice> fill_null(const Text& t, const Slot& slot, const NewItem& item) {
  const auto key_pos = static_cast<std::size_t>(slot.key.Mark().pos);
  const bool flow_map = slot.map.Style() == YAML::EmitterStyle::Flow;
  std::size_t colon = t.key_end(key_pos);
  colon = t.skip_blanks(colon, false);
  const std::size_t value = t.skip_blanks(colon + 1, false);
  if (flow_map) return {{colon + 1, 0, " [" + item.flow() + "]"}};
  const char c = t.at(value);
  if (c != '\n' && c != '#' && c != '\0')  // an explicit null: `~`, `null`
    return {{value, t.plain_line_end(value, false) - value, "[" + item.flow() + "]"}};
  return {{t.line_end(key_pos), 0, "\n" + item.block(slot.key.Mark().column + 2, 1)}};
}

/// Splices that add `dependencies:` holding `item` to an environment's map that lacks it.
std::vector<Splice> add_key(const Text& t, const YAML::Node& map, const NewItem& item) {
  const auto pos = static_cast<std::size_t>(map.Mark().pos);
  if (map.Style() == YAML::EmitterStyle::Flow) {
    const std::size_t close = t.flow_end(pos) - 1;
    const std::string entry = "dependencies: [" + item.flow() + "]";
    if (map.size() == 0) return {{pos + 1, 0, entry}};
    std::size_t p = close;
    while (p > pos && (t.at(p - 1) == ' ' || t.at(p - 1) == '\t' || t.at(p - 1) == '\n')) --p;
    return {{p, 0, t.at(p - 1) == ',' ? " " + entry : ", " + entry}};
  }
  const int col = map.begin()->first.Mark().column;
  return {{t.last_line_end(map, col - 1), 0,
           "\n" + std::string(static_cast<std::size_t>(col), ' ') + "dependencies:\n" + item.block(col + 2, 1)}};
}

/// Splices that delete entry `i` of the sequence `seq`.
std::vector<Splice> remove_from(const Text& t, const YAML::Node& seq, std::size_t i) {
  if (seq.Style() != YAML::EmitterStyle::Flow) {
    const YAML::Node item = seq[i];
    const auto item_pos = static_cast<std::size_t>(item.Mark().pos);
    const std::size_t start = t.line_start(t.dash_before(item_pos).value_or(item_pos));
    std::size_t end = t.block_item_end(seq, i);
    if (end < t.size()) ++end;  // its line break
    else if (start > 0) return {{start - 1, end - start + 1, ""}};  // the last line of a file without a final newline
    return {{start, end - start, ""}};
  }
  auto start_of = [&](std::size_t k) { return t.node_start(seq[k], true); };
  auto end_of = [&](std::size_t k) {
    const std::size_t s = start_of(k);
    return seq[k].IsScalar() ? t.scalar_end(s, true, 0) : t.flow_end(s);
  };
  if (i + 1 < seq.size()) return {{start_of(i), start_of(i + 1) - start_of(i), ""}};
  if (i > 0) return {{end_of(i - 1), end_of(i) - end_of(i - 1), ""}};
  std::size_t end = t.skip_blanks(end_of(i), true);
  end = t.at(end) == ',' ? end + 1 : end_of(i);
  return {{start_of(i), end - start_of(i), ""}};
}

// ---- checks ---------------------------------------------------------------------------------

/// The names an error lists: the conda specs of the parse, or the PyPI entries of the text
/// (`pypi-dependencies:` and `pip:` lists, index options left out), in the text's order.
std::string names_of(const ManifestEnvironment& env, const std::vector<Entry>& pypi, DependencyKind kind) {
  std::string out;
  if (kind == DependencyKind::Conda) {
    for (const auto& d : env.dependencies) out += (out.empty() ? "" : ", ") + d.text;
  } else {
    for (const auto& e : pypi)
      if (!index_option(e.text)) out += (out.empty() ? "" : ", ") + e.text;
  }
  return out.empty() ? "none" : out;
}

/// What the read-back check compares: the conda specs in order; for Pypi every PyPI requirement
/// the parse holds (pypi_dependencies, from either list, and the carried pip lines; index options
/// left out, as the parse drops them once it resolves), sorted: which of the two fields a pip
/// line lands in depends on whether the manifest names an index, not on the edit.
std::vector<std::string> texts_of(const ManifestEnvironment& env, DependencyKind kind) {
  std::vector<std::string> out;
  if (kind == DependencyKind::Conda) {
    for (const auto& d : env.dependencies) out.push_back(d.text);
    return out;
  }
  for (const auto& r : env.pypi_dependencies) out.push_back(r.text);
  for (const auto& p : env.pip)
    if (!index_option(p.requirement)) out.push_back(p.requirement);
  std::sort(out.begin(), out.end());
  return out;
}

Status check_text(const std::string& value, const std::string& what) {
  for (std::size_t i = 0; i < value.size(); ++i)
    if (is_control_at(value, i))
      return Error{ErrorKind::Usage, "", what + " '" + printable(value) + "' holds a control character or a line break",
                   "", "give one spec per argument, on one line"};
  return ok_status();
}

/// The package a command-line value names (a MatchSpec's exact name in lower case, a pip line's
/// PEP 503 name), checked.
Result<std::string> package_of(const std::string& value, DependencyKind kind) {
  const std::string what = kind == DependencyKind::Conda ? "the spec" : "the pip requirement";
  if (auto st = check_text(value, what); !st) return st.error();
  if (value.empty()) return Error{ErrorKind::Usage, "", what + " is empty", "", "name a package, e.g. numpy"};
  if (kind == DependencyKind::Pypi) {
    // A named requirement (PEP 508): the name, then nothing or extras, a version list, a marker
    // or a direct reference. pip refuses `not a valid req!!`, so does add (attack 21, F7); paths,
    // URLs and pip options (`-e ./src`) are left to the pip line reader.
    if (value.front() != '-' && value.front() != '.' && value.front() != '/' && value.find("://") == std::string::npos) {
      std::size_t end = 0;
      while (end < value.size() && (std::isalnum(static_cast<unsigned char>(value[end])) != 0 ||
                                    std::string_view("._-").find(value[end]) != std::string_view::npos))
        ++end;
      const std::string rest = trim(value.substr(end));
      if (end == 0 || (!rest.empty() && std::string_view("[(<>=!~;@").find(rest.front()) == std::string_view::npos))
        return Error{ErrorKind::Usage, "", "the pip requirement '" + printable(value) + "' is not a PEP 508 requirement",
                     "", "write a requirement such as `requests>=2.31`, `pkg[extra]>=1; python_version>='3.10'` or `pkg @ https://host/pkg.whl`"};
    }
    PipPackage p = parse_pip_requirement(value);
    if (p.name.empty())
      return Error{ErrorKind::Usage, "", "the pip requirement '" + value + "' names no project", "",
                   "write a requirement such as `requests>=2.31`, `pkg @ https://host/pkg.whl` or `-e ./src#egg=pkg`"};
    return p.name;
  }
  auto spec = MatchSpec::parse(value);
  if (!spec) {
    Error e = spec.error();
    e.kind = ErrorKind::Usage;
    return e;
  }
  std::string name = ascii_lower(spec->exact_name());
  if (name.empty())
    return Error{ErrorKind::Usage, "", "the spec '" + value + "' names no single package", "",
                 "start the spec with the package name, e.g. `numpy >=1.26`"};
  return name;
}

Result<std::vector<std::string>> packages_of(const std::vector<std::string>& values, DependencyKind kind) {
  std::vector<std::string> names;
  for (const auto& v : values) {
    auto n = package_of(trim(v), kind);
    if (!n) return n.error();
    if (std::find(names.begin(), names.end(), *n) != names.end())
      return Error{ErrorKind::Usage, "", "'" + *n + "' is given twice", "", "give each package once"};
    names.push_back(*n);
  }
  return names;
}

Error no_environment(const Manifest& m, std::string_view env) {
  std::string names;
  for (const auto& [name, e] : m.environments) names += (names.empty() ? "" : ", ") + name;
  return Error{ErrorKind::Incompatible, m.path.empty() ? "" : m.path.string(),
               "has no environment '" + std::string(env) + "'", "environments in it: " + names,
               "pass one of them with -e"};
}

/// Everything one edit needs: the text, its tree and its parse.
struct State {
  const Manifest& original;
  std::string text;
  YAML::Node root;
  Manifest manifest;
  std::string source() const { return original.path.empty() ? std::string("manifest") : original.path.string(); }
};

Result<Manifest> reparse(const State& s, const std::string& text) {
  auto m = parse_manifest(text, s.source(), s.original.directory, s.original.format);
  if (m) m->path = s.original.path;
  return m;
}

Status load(State& s) {
  yaml::Source src(s.text, s.source());
  auto root = src.load();
  if (!root) return root.error();
  s.root.reset(*root);
  auto m = reparse(s, s.text);
  if (!m) return m.error();
  s.manifest = std::move(*m);
  return ok_status();
}

Error internal(const State& s, const std::string& what) {
  return Error{ErrorKind::Internal, s.source(), "cannot edit the manifest in place: " + what, "",
               "edit the file by hand; please report this with the manifest"};
}

/// Applies `splices` and checks that the environment's list now reads `expected` and every other
/// list as before.
Status commit(State& s, std::string_view env, DependencyKind kind, const std::vector<Splice>& splices,
              std::vector<std::string> expected) {
  if (kind == DependencyKind::Pypi) std::sort(expected.begin(), expected.end());
  std::string next = spliced(s.text, splices);
  auto m = reparse(s, next);
  if (!m) return internal(s, "the edited text does not read: " + m.error().to_string());
  const ManifestEnvironment* after = m->environment(env);
  if (after == nullptr || texts_of(*after, kind) != expected) return internal(s, "the edited list does not read back as written");
  for (const auto& [name, e] : s.manifest.environments) {
    const ManifestEnvironment* now = m->environment(name);
    if (now == nullptr) return internal(s, "environment '" + name + "' would be lost");
    for (DependencyKind k : {DependencyKind::Conda, DependencyKind::Pypi}) {
      if (name == env && k == kind) continue;
      if (texts_of(*now, k) != texts_of(e, k)) return internal(s, "the lists of environment '" + name + "' would change");
    }
  }
  s.text = std::move(next);
  return load(s);
}

/// The checks add and remove both make before their first edit: every value names one package,
/// once (packages_of), the environment exists, and the text reads back (yaml-cpp's tree and
/// parse_manifest) into `s`. Returns the package names in the order given.
Result<std::vector<std::string>> begin_edit(State& s, std::string_view environment,
                                            const std::vector<std::string>& values, DependencyKind kind) {
  auto names = packages_of(values, kind);
  if (!names) return names.error();
  if (s.original.environment(environment) == nullptr) return no_environment(s.original, environment);
  if (auto st = load(s); !st) return st.error();
  return names;
}

/// The environment being edited, as the text last committed reads (it cannot vanish: commit()
/// checks every environment survives, so nullptr would be a bug, reported as the edit's error).
Result<const ManifestEnvironment*> edited_environment(const State& s, std::string_view environment) {
  const ManifestEnvironment* env = s.manifest.environment(environment);
  if (env == nullptr) return no_environment(s.manifest, environment);
  return env;
}

/// The outcome once every edit is committed: the text and its parse.
EditedManifest finish_edit(State& s, std::vector<DependencyEdit> edits) {
  EditedManifest out;
  out.text = std::move(s.text);
  out.manifest = std::move(s.manifest);
  out.edits = std::move(edits);
  return out;
}

}  // namespace

Result<std::string> environment_to_edit(const Manifest& manifest, std::string_view given) {
  if (!given.empty()) {
    if (manifest.environment(given) == nullptr) return no_environment(manifest, given);
    return std::string(given);
  }
  if (manifest.environment("default") != nullptr) return std::string("default");
  if (manifest.environments.size() == 1) return manifest.environments.begin()->first;
  std::string names;
  for (const auto& [name, e] : manifest.environments) names += (names.empty() ? "" : ", ") + name;
  return Error{ErrorKind::Usage, manifest.path.string(), "has no environment 'default' and several others",
               "environments in it: " + names, "pass one of them with -e"};
}

namespace {

/// A UTF-8 byte order mark at the start of the file: yaml-cpp's positions count from after it,
/// so the edits are made on the text without it and it is put back (attack 21, F1: every add of
/// a manifest saved with a BOM was refused by the read-back check).
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

template <class Edit>
Result<EditedManifest> without_byte_order_mark(const std::string& text, Edit edit) {
  if (!text.starts_with(kByteOrderMark)) return edit(text);
  auto edited = edit(text.substr(kByteOrderMark.size()));
  if (edited) edited->text.insert(0, kByteOrderMark);
  return edited;
}

Result<EditedManifest> add_to_text(const Manifest& manifest, const std::string& text, std::string_view environment,
                                   const std::vector<std::string>& specs, DependencyKind kind);
Result<EditedManifest> remove_from_text(const Manifest& manifest, const std::string& text, std::string_view environment,
                                        const std::vector<std::string>& names, DependencyKind kind);

}  // namespace

Result<EditedManifest> add_dependencies(const Manifest& manifest, const std::string& text,
                                        std::string_view environment, const std::vector<std::string>& specs,
                                        DependencyKind kind) {
  return without_byte_order_mark(text, [&](const std::string& t) { return add_to_text(manifest, t, environment, specs, kind); });
}

Result<EditedManifest> remove_dependencies(const Manifest& manifest, const std::string& text,
                                           std::string_view environment, const std::vector<std::string>& names,
                                           DependencyKind kind) {
  return without_byte_order_mark(text, [&](const std::string& t) { return remove_from_text(manifest, t, environment, names, kind); });
}

namespace {

/// `expected` without one entry reading `text` (a Pypi list, compared sorted), or false when it
/// holds none (a bug: the tree and the parse disagree).
bool erase_one(std::vector<std::string>& expected, const std::string& text) {
  auto it = std::find(expected.begin(), expected.end(), text);
  if (it == expected.end()) return false;
  expected.erase(it);
  return true;
}

/// The entries of `kind` in the environment's lists, as the text's tree holds them.
std::vector<Entry> entries_in(const State& s, std::string_view environment, const ManifestEnvironment& env,
                              DependencyKind kind) {
  if (kind == DependencyKind::Pypi) return pypi_entries(s.root, environment);
  auto slot = dependencies_slot(s.root, environment);
  return slot ? entries_of(slot->value, env, kind) : std::vector<Entry>{};
}

Result<EditedManifest> add_to_text(const Manifest& manifest, const std::string& text, std::string_view environment,
                                   const std::vector<std::string>& specs, DependencyKind kind) {
  State s{manifest, text, {}, {}};
  auto names = begin_edit(s, environment, specs, kind);
  if (!names) return names.error();
  const bool pypi = kind == DependencyKind::Pypi;
  std::vector<DependencyEdit> edits;
  for (std::size_t n = 0; n < specs.size(); ++n) {
    const std::string spec = trim(specs[n]);
    const std::string& name = (*names)[n];
    auto current = edited_environment(s, environment);
    if (!current) return current.error();
    const ManifestEnvironment* env = *current;
    const Text t(s.text);
    auto slot = dependencies_slot(s.root, environment);
    if (!slot) return internal(s, "environment '" + std::string(environment) + "' is not where it was read");
    // pixi's `pixi add --pypi` writes [pypi-dependencies]: an environment that has the key gets
    // its named requirements there; paths, URLs and options (and every environment without the
    // key) go to the `pip:` list, conda's environment.yml spelling.
    const auto pypi_slot = pypi ? pypi_dependencies_slot(s.root, environment) : std::nullopt;
    std::vector<std::string> expected = texts_of(*env, kind);
    DependencyEdit edit;
    edit.name = name;
    edit.spec = spec;
    std::vector<Splice> splices;

    std::vector<Entry> found;
    for (auto& e : entries_in(s, environment, *env, kind))
      if (e.name == name) found.push_back(std::move(e));
    if (found.size() > 1) {
      std::string lines;
      for (const auto& e : found) lines += (lines.empty() ? "" : ", ") + std::to_string(e.scalar.Mark().line + 1);
      return Error{ErrorKind::Incompatible, s.source(),
                   "environment '" + std::string(environment) + "' lists '" + name + "' " + std::to_string(found.size()) +
                       " times (lines " + lines + ")",
                   "", "edit those lines by hand, or `envlock rm " + std::string(pypi ? "--pypi " : "") + name + "` first"};
    }
    const bool into_pypi_dependencies =
        found.size() == 1 ? found.front().pypi_dependencies
                          : pypi_slot && pypi_slot->present && named_requirement(spec);
    if (into_pypi_dependencies && !named_requirement(spec))
      return Error{ErrorKind::Usage, s.source(),
                   "'" + printable(redact_text(spec)) + "' is a path, URL or pip option, and '" + name +
                       "' is listed in pypi-dependencies (line " + std::to_string(found.front().scalar.Mark().line + 1) +
                       "), which holds PEP 508 requirements only",
                   "", "`envlock rm --pypi " + name + "` first, then add it again: it goes to the `pip:` list"};
    const std::string written = !pypi ? spec : into_pypi_dependencies ? redact_text(spec) : parse_pip_requirement(spec).requirement;
    edit.pypi_dependencies = into_pypi_dependencies;
    if (found.size() == 1) {
      const Entry& e = found.front();
      const bool flow = e.list.Style() == YAML::EmitterStyle::Flow;
      const std::size_t start = t.node_start(e.scalar, flow);
      const std::size_t end = t.scalar_end(start, flow, flow ? 0 : e.list.Mark().column);
      splices.push_back({start, end - start, yaml_scalar(spec, quote_of(t, start), flow)});
      edit.action = DependencyEdit::Action::Replaced;
      edit.previous = e.text;
      if (!pypi) expected[e.ordinal] = written;
      else if (!erase_one(expected, e.text)) return internal(s, "the entry '" + e.text + "' is not in the list read");
      if (pypi) expected.push_back(written);
    } else {
      edit.action = DependencyEdit::Action::Added;
      expected.push_back(written);
      NewItem item{spec, false, 0};
      if (into_pypi_dependencies) {
        splices = pypi_slot->value.IsSequence() ? append_to(t, pypi_slot->value, item) : fill_null(t, *pypi_slot, item);
      } else if (pypi) {
        auto pip = slot->present ? pip_entry(slot->value) : std::nullopt;
        if (pip && pip->second.value.IsSequence()) {
          splices = append_to(t, pip->second.value, item);
        } else if (pip) {
          splices = fill_null(t, pip->second, item);
        } else {
          item.pip_wrapper = true;
        }
      }
      if (splices.empty()) {
        if (!slot->present) splices = add_key(t, slot->map, item);
        else if (slot->value.IsSequence()) splices = append_to(t, slot->value, item);
        else splices = fill_null(t, *slot, item);
      }
    }
    if (auto st = commit(s, environment, kind, splices, expected); !st) return st.error();
    // The entry's line in the new text: the one entry of that name now.
    for (const auto& e : entries_in(s, environment, *s.manifest.environment(environment), kind))
      if (e.name == name) edit.line = e.scalar.Mark().line + 1;
    edits.push_back(std::move(edit));
  }
  return finish_edit(s, std::move(edits));
}

/// The index in the `dependencies` sequence `deps` of the `- pip:` entry whose list is `list`.
std::optional<std::size_t> pip_wrapper_of(const YAML::Node& deps, const YAML::Node& list) {
  if (!deps.IsSequence()) return std::nullopt;
  for (std::size_t i = 0; i < deps.size(); ++i) {
    const YAML::Node item = deps[i];
    if (item.IsMap() && item.size() == 1 && item.begin()->first.IsScalar() && item.begin()->first.Scalar() == "pip" &&
        item.begin()->second.IsSequence() && item.begin()->second.Mark().pos == list.Mark().pos)
      return i;
  }
  return std::nullopt;
}

Result<EditedManifest> remove_from_text(const Manifest& manifest, const std::string& text, std::string_view environment,
                                        const std::vector<std::string>& names, DependencyKind kind) {
  State s{manifest, text, {}, {}};
  auto packages = begin_edit(s, environment, names, kind);
  if (!packages) return packages.error();
  const bool pypi = kind == DependencyKind::Pypi;
  std::vector<DependencyEdit> edits;
  for (const auto& name : *packages) {
    bool any = false;
    for (;;) {
      auto current = edited_environment(s, environment);
      if (!current) return current.error();
      const ManifestEnvironment* env = *current;
      auto slot = dependencies_slot(s.root, environment);
      std::vector<Entry> entries = entries_in(s, environment, *env, kind);
      auto it = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.name == name; });
      if (it == entries.end()) {
        if (any) break;
        return Error{ErrorKind::Incompatible, s.source(),
                     "environment '" + std::string(environment) + "' has no " +
                         (pypi ? "pip requirement" : "dependency") + " '" + name + "'",
                     std::string(pypi ? "its pip requirements: " : "its dependencies: ") + names_of(*env, entries, kind),
                     pypi ? "name one of them, or drop --pypi for a conda dependency"
                          : "name one of them, or `--pypi` for a pip requirement"};
      }
      const Text t(s.text);
      DependencyEdit edit;
      edit.action = DependencyEdit::Action::Removed;
      edit.name = name;
      edit.spec = it->text;
      edit.line = it->scalar.Mark().line + 1;
      edit.pypi_dependencies = it->pypi_dependencies;
      std::vector<std::string> expected = texts_of(*env, kind);
      if (!pypi) expected.erase(expected.begin() + static_cast<std::ptrdiff_t>(it->ordinal));
      else if (!erase_one(expected, it->text)) return internal(s, "the entry '" + it->text + "' is not in the list read");
      std::vector<Splice> splices;
      const auto wrapper = pypi && !it->pypi_dependencies && it->list.size() == 1 && slot
                               ? pip_wrapper_of(slot->value, it->list)
                               : std::nullopt;
      if (wrapper) splices = remove_from(t, slot->value, *wrapper);  // the `- pip:` entry left empty goes too
      else splices = remove_from(t, it->list, it->index);
      if (auto st = commit(s, environment, kind, splices, expected); !st) return st.error();
      edits.push_back(std::move(edit));
      any = true;
    }
  }
  return finish_edit(s, std::move(edits));
}

}  // namespace

}  // namespace envlock
