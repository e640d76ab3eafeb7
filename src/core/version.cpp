// Version and VersionSpec: conda's VersionOrder / VersionSpec (conda/models/version.py).
#include "envlock/version.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

#include "envlock/text.hpp"
#include "glob.hpp"

namespace envlock {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// conda's version_check_re: ^[\*\.\+!_0-9a-z]+$ (after lower-casing).
bool is_version_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || c == '*' || c == '.' || c == '+' || c == '!' ||
         c == '_';
}

Version::Part number_part(std::string_view digits) {
  Version::Part p;
  p.is_number = true;
  std::size_t i = 0;
  while (i + 1 < digits.size() && digits[i] == '0') ++i;
  p.text = std::string(digits.substr(i));
  p.number = 0;
  for (char c : p.text) {
    std::uint64_t d = static_cast<std::uint64_t>(c - '0');
    if (p.number > (UINT64_MAX - d) / 10) {
      p.number = UINT64_MAX;  // saturates; comparisons use `text`
      break;
    }
    p.number = p.number * 10 + d;
  }
  return p;
}

const Version::Part& zero_part() {
  static const Version::Part zero = number_part("0");
  return zero;
}

// conda spells "dev" as "DEV" so that it sorts below every other (lower-case) string.
std::string_view sort_key(const Version::Part& p) {
  return p.text == "dev" ? std::string_view("DEV") : std::string_view(p.text);
}

// The order of one part, as conda's VersionOrder.__lt__: strings < numbers < "post" (infinity);
// numbers compare as integers; strings compare as text, with "dev" spelled "DEV" so that
// '*' < 'DEV' < '_' < 'a'...
int compare_part(const Version::Part& a, const Version::Part& b) {
  auto rank = [](const Version::Part& p) {
    if (p.is_number) return 1;
    return p.text == "post" ? 2 : 0;
  };
  int ra = rank(a), rb = rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  if (ra == 2) return 0;
  if (ra == 1) {
    if (a.text.size() != b.text.size()) return a.text.size() < b.text.size() ? -1 : 1;
    int c = a.text.compare(b.text);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  int c = sort_key(a).compare(sort_key(b));
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

// zip_longest(v1, v2, fillvalue=0)
int compare_component(const Version::Component& a, const Version::Component& b) {
  std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const auto& pa = i < a.size() ? a[i] : zero_part();
    const auto& pb = i < b.size() ? b[i] : zero_part();
    if (int c = compare_part(pa, pb)) return c;
  }
  return 0;
}

// zip_longest(t1, t2, fillvalue=[])
int compare_components(const std::vector<Version::Component>& a,
                       const std::vector<Version::Component>& b) {
  static const Version::Component empty;
  std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const auto& ca = i < a.size() ? a[i] : empty;
    const auto& cb = i < b.size() ? b[i] : empty;
    if (int c = compare_component(ca, cb)) return c;
  }
  return 0;
}


// Splits one component into runs of digits, runs of '*', and runs of anything else
// (conda's version_split_re = "([0-9]+|[*]+|[^0-9*]+)"), converting as conda does.
Version::Component split_component(std::string_view comp) {
  Version::Component parts;
  std::size_t i = 0;
  while (i < comp.size()) {
    std::size_t j = i + 1;
    if (is_digit(comp[i])) {
      while (j < comp.size() && is_digit(comp[j])) ++j;
      parts.push_back(number_part(comp.substr(i, j - i)));
    } else {
      bool star = comp[i] == '*';
      while (j < comp.size() && !is_digit(comp[j]) && (comp[j] == '*') == star) ++j;
      Version::Part p;
      p.text = std::string(comp.substr(i, j - i));
      parts.push_back(std::move(p));
    }
    i = j;
  }
  // Components that do not start with a digit get a leading 0 so numbers and strings stay in
  // phase (conda: `if v[k][0].isdigit(): ... else: [fillvalue] + c`).
  if (!comp.empty() && !is_digit(comp[0])) parts.insert(parts.begin(), zero_part());
  return parts;
}

// Splits `text` (already lower-cased, '_' as separator) on '.', checking for empty components.
// `offset` is the position of text[0] in the user's input, for error messages.
Result<std::vector<Version::Component>> split_components(std::string_view text, std::size_t offset,
                                                        const std::string& input) {
  std::vector<Version::Component> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = start;
    while (end < text.size() && text[end] != '.' && text[end] != '_') ++end;
    if (end == start) {
      return parse_error("invalid version", input, offset + start,
                         "empty version component (two separators in a row, or one at an end)");
    }
    out.push_back(split_component(text.substr(start, end - start)));
    if (end == text.size()) break;
    start = end + 1;
  }
  return out;
}

}  // namespace

Result<Version> Version::parse(std::string_view text) {
  const std::string input(text);
  std::size_t first = 0, last = text.size();
  while (first < last && is_space(text[first])) ++first;
  while (last > first && is_space(text[last - 1])) --last;
  if (first == last) {
    Error e = parse_error("invalid version", input, 0, "empty version string");
    e.hint = "a conda version looks like 1.2.3, 2024.1, 1.0rc1 or 1!2.0+local";
    return e;
  }
  std::string v = ascii_lower(std::string(text.substr(first, last - first)));
  auto bad_char = std::find_if(v.begin(), v.end(), [](char c) { return !is_version_char(c); });
  if (bad_char != v.end() && v.find('-') != std::string::npos && v.find('_') == std::string::npos) {
    // conda allows '-' as a separator when the version has no '_': it becomes '_'.
    std::replace(v.begin(), v.end(), '-', '_');
    bad_char = std::find_if(v.begin(), v.end(), [](char c) { return !is_version_char(c); });
  }
  if (bad_char != v.end()) {
    std::size_t pos = first + static_cast<std::size_t>(bad_char - v.begin());
    std::string rule = "invalid character '" + std::string(1, *bad_char) +
                       "'; versions use letters, digits and . _ + ! *";
    if (*bad_char == '-') rule += " (and '-' only when there is no '_')";
    Error e = parse_error("invalid version", input, pos, rule);
    return e;
  }

  Version out;
  out.source_ = std::string(text.substr(first, last - first));

  std::string_view rest = v;
  std::size_t rest_off = first;
  if (std::size_t bang = rest.find('!'); bang != std::string_view::npos) {
    if (rest.find('!', bang + 1) != std::string_view::npos) {
      return parse_error("invalid version", input, first + rest.find('!', bang + 1),
                         "duplicated epoch separator '!'");
    }
    std::string_view epoch = rest.substr(0, bang);
    if (epoch.empty() || !std::all_of(epoch.begin(), epoch.end(), is_digit)) {
      return parse_error("invalid version", input, first, "epoch must be an integer (as in 1!2.0)");
    }
    Part e = number_part(epoch);
    if (e.text.size() > 19) {
      return parse_error("invalid version", input, first, "epoch is too large");
    }
    out.epoch_ = e.number;
    rest = rest.substr(bang + 1);
    rest_off += bang + 1;
  }

  std::string_view release = rest;
  if (std::size_t plus = rest.find('+'); plus != std::string_view::npos) {
    if (rest.find('+', plus + 1) != std::string_view::npos) {
      return parse_error("invalid version", input, rest_off + rest.find('+', plus + 1),
                         "duplicated local version separator '+'");
    }
    release = rest.substr(0, plus);
    if (release.empty()) {
      return parse_error("invalid version", input, rest_off,
                         "missing version before local version separator '+'");
    }
    auto local = split_components(rest.substr(plus + 1), rest_off + plus + 1, input);
    if (!local) return local.error();
    out.local_ = std::move(*local);
  }
  if (release.empty()) {
    return parse_error("invalid version", input, rest_off, "empty version after the epoch");
  }
  // A trailing '_' (or '-') stays attached to the last component (openssl-like `1.0.2_`):
  // conda splits the text before it and appends "_" to the last piece, which may be empty
  // (`1._` -> [1], [0, "_"]; `_` -> [0, "_"]).
  bool trailing_underscore = release.back() == '_';
  std::string_view body = trailing_underscore ? release.substr(0, release.size() - 1) : release;
  bool empty_last = trailing_underscore && (body.empty() || body.back() == '.' || body.back() == '_');
  if (empty_last && !body.empty()) body.remove_suffix(1);
  if (!body.empty()) {
    auto rel = split_components(body, rest_off, input);
    if (!rel) return rel.error();
    out.release_ = std::move(*rel);
  } else if (!trailing_underscore) {
    return parse_error("invalid version", input, rest_off, "empty version component");
  }
  if (empty_last) {
    out.release_.push_back(split_component("_"));
  } else if (trailing_underscore) {
    // conda appends '_' to the last component's text before splitting it into parts.
    Component& lastc = out.release_.back();
    if (!lastc.empty() && !lastc.back().is_number && lastc.back().text != "*") {
      lastc.back().text += "_";
    } else {
      Part p;
      p.text = "_";
      lastc.push_back(std::move(p));
    }
  }
  return out;
}

std::strong_ordering Version::compare(const Version& other) const {
  if (epoch_ != other.epoch_) return epoch_ < other.epoch_ ? std::strong_ordering::less : std::strong_ordering::greater;
  int c = compare_components(release_, other.release_);
  if (c == 0) c = compare_components(local_, other.local_);
  return c < 0 ? std::strong_ordering::less : (c > 0 ? std::strong_ordering::greater : std::strong_ordering::equal);
}

bool Version::starts_with(const Version& prefix) const {
  // conda's VersionOrder.startswith, where `version` is [epoch] + release; without copies.
  const bool local = !prefix.local_.empty();
  if (local && (epoch_ != prefix.epoch_ || compare_components(release_, prefix.release_) != 0)) return false;
  const Component e1{number_part(std::to_string(epoch_))};
  const Component e2{number_part(std::to_string(prefix.epoch_))};
  auto size = [&](const Version& v) { return local ? v.local_.size() : v.release_.size() + 1; };
  auto at = [&](const Version& v, const Component& epoch, std::size_t i) -> const Component& {
    if (local) return v.local_[i];
    return i == 0 ? epoch : v.release_[i - 1];
  };
  static const Component empty;
  const std::size_t n1 = size(*this), nt = size(prefix) - 1;
  // Every component before the prefix's last one is equal (missing ones count as 0).
  for (std::size_t i = 0; i < nt; ++i) {
    if (compare_component(i < n1 ? at(*this, e1, i) : empty, at(prefix, e2, i)) != 0) return false;
  }
  // In the prefix's last component, every part before its last one is equal ...
  const Component& v1 = nt < n1 ? at(*this, e1, nt) : empty;
  const Component& v2 = at(prefix, e2, nt);
  if (v2.empty()) return true;
  const std::size_t np = v2.size() - 1;
  for (std::size_t i = 0; i < np; ++i) {
    if (compare_part(i < v1.size() ? v1[i] : zero_part(), v2[i]) != 0) return false;
  }
  // ... and the last part is equal, or for a string, a prefix of this version's string.
  const Part& c1 = v1.size() <= np ? zero_part() : v1[np];
  const Part& c2 = v2[np];
  if (!c2.is_number && c2.text != "post") {
    return !c1.is_number && c1.text != "post" && sort_key(c1).starts_with(sort_key(c2));
  }
  return compare_part(c1, c2) == 0;
}

bool Version::compatible_with(const Version& base) const {
  if (*this < base) return false;
  // conda: startswith(VersionOrder(".".join(str(base).split(".")[:-1]))); libsolv the same.
  std::string text = ascii_lower(base.source_);
  std::size_t dot = text.rfind('.');
  if (dot == std::string::npos || dot == 0) return false;
  auto prefix = Version::parse(text.substr(0, dot));
  return prefix && starts_with(*prefix);
}

// ---------------------------------------------------------------------------------------------
// VersionSpec

class VersionSpecParser {
 public:
  explicit VersionSpecParser(std::string_view text) : text_(text), input_(text) {}

  Result<VersionSpec> run() {
    skip_space();
    if (pos_ == text_.size()) {
      return parse_error("invalid version constraint", input_, pos_, "empty version constraint");
    }
    auto spec = parse_or();
    if (!spec) return spec;
    skip_space();
    if (pos_ != text_.size()) {
      return parse_error("invalid version constraint", input_, pos_,
                         text_[pos_] == ')' ? "unbalanced ')'" : "unexpected character");
    }
    return spec;
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }

  Result<VersionSpec> parse_or() {
    std::vector<VersionSpec> terms;
    for (;;) {
      auto t = parse_and();
      if (!t) return t;
      if (t->op_ == VersionSpec::Op::Or) {
        for (auto& c : t->children_) terms.push_back(std::move(c));
      } else {
        terms.push_back(std::move(*t));
      }
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == '|') {
        ++pos_;
        continue;
      }
      break;
    }
    if (terms.size() == 1) return std::move(terms.front());
    VersionSpec s;
    s.op_ = VersionSpec::Op::Or;
    s.children_ = std::move(terms);
    return s;
  }

  Result<VersionSpec> parse_and() {
    std::vector<VersionSpec> terms;
    for (;;) {
      auto t = parse_term();
      if (!t) return t;
      if (t->op_ == VersionSpec::Op::And) {
        for (auto& c : t->children_) terms.push_back(std::move(c));
      } else {
        terms.push_back(std::move(*t));
      }
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      break;
    }
    if (terms.size() == 1) return std::move(terms.front());
    VersionSpec s;
    s.op_ = VersionSpec::Op::And;
    s.children_ = std::move(terms);
    return s;
  }

  Result<VersionSpec> parse_term() {
    skip_space();
    if (pos_ == text_.size()) {
      return parse_error("invalid version constraint", input_, pos_,
                         "expected a version after ',', '|' or '('");
    }
    char c = text_[pos_];
    if (c == '(') {
      std::size_t open = pos_++;
      if (++depth_ > VersionSpec::kMaxNesting) {
        return parse_error("invalid version constraint", input_, open,
                           "parentheses nested deeper than " + std::to_string(VersionSpec::kMaxNesting));
      }
      auto inner = parse_or();
      --depth_;
      if (!inner) return inner;
      skip_space();
      if (pos_ == text_.size() || text_[pos_] != ')') {
        return parse_error("invalid version constraint", input_, open, "unbalanced '('");
      }
      ++pos_;
      return inner;
    }
    if (c == ')' || c == ',' || c == '|') {
      return parse_error("invalid version constraint", input_, pos_,
                         std::string("expected a version before '") + c + "'");
    }
    std::size_t start = pos_;
    if (c == '^') {
      // A regex runs to the first '$' (conda's VSPEC_TOKENS).
      std::size_t dollar = text_.find('$', pos_);
      if (dollar == std::string_view::npos) {
        return parse_error("invalid version constraint", input_, pos_,
                           "a regex must start with '^' and end with '$'");
      }
      pos_ = dollar + 1;
    } else {
      while (pos_ < text_.size() && text_[pos_] != '(' && text_[pos_] != ')' && text_[pos_] != ',' &&
             text_[pos_] != '|') {
        ++pos_;
      }
    }
    std::size_t end = pos_;
    while (end > start && is_space(text_[end - 1])) --end;
    return parse_leaf(start, end);
  }

  Result<VersionSpec> version_at(std::size_t start, std::size_t end) {
    std::string_view vt = text_.substr(start, end - start);
    if (vt.empty()) {
      return parse_error("invalid version constraint", input_, start, "missing version after the operator");
    }
    for (std::size_t i = 0; i < vt.size(); ++i) {
      if (is_space(vt[i])) {
        return parse_error("invalid version constraint", input_, start + i,
                           "a space inside a version (join the parts with ',' or '|')");
      }
    }
    auto v = Version::parse(vt);
    if (!v) {
      Error e = v.error();
      // Re-anchor the message on the whole constraint.
      Error out = parse_error("invalid version constraint", input_, start, e.message);
      out.hint = e.hint;
      return out;
    }
    VersionSpec s;
    s.version_ = std::move(*v);
    return s;
  }

  Result<VersionSpec> parse_leaf(std::size_t start, std::size_t end) {
    std::string_view leaf = text_.substr(start, end - start);
    using Op = VersionSpec::Op;
    if (leaf.front() == '^' || leaf.back() == '$') {
      if (leaf.front() != '^' || leaf.back() != '$') {
        return parse_error("invalid version constraint", input_, start,
                           "a regex must start with '^' and end with '$'");
      }
      if (std::size_t q = leaf.find_first_of("'\""); q != std::string_view::npos) {
        return parse_error("invalid version constraint", input_, start + q, "quotes are not allowed in a version regex");
      }
      try {
        std::regex check{std::string(leaf)};
      } catch (const std::regex_error&) {
        return parse_error("invalid version constraint", input_, start, "invalid regular expression");
      }
      VersionSpec s;
      s.op_ = Op::Regex;
      s.pattern_ = std::string(leaf);
      return s;
    }
    char c = leaf.front();
    if (c == '=' || c == '<' || c == '>' || c == '!' || c == '~') {
      static const std::pair<std::string_view, Op> kOps[] = {
          {"==", Op::Eq}, {"!=", Op::Ne}, {"<=", Op::Le}, {">=", Op::Ge}, {"~=", Op::Compatible},
          {"=", Op::StartsWith}, {"<", Op::Lt}, {">", Op::Gt}};
      std::string_view op_text;
      Op op = Op::Eq;
      for (const auto& [t, o] : kOps) {
        if (leaf.starts_with(t)) {
          op_text = t;
          op = o;
          break;
        }
      }
      std::size_t vstart = start + op_text.size();
      if (op_text.empty() || (vstart < end && std::string_view("=<>!~").find(text_[vstart]) != std::string_view::npos)) {
        return parse_error("invalid version constraint", input_, start,
                           "invalid operator; use one of == != < <= > >= ~= =");
      }
      while (vstart < end && is_space(text_[vstart])) ++vstart;
      std::size_t vend = end;
      if (vend - vstart >= 2 && text_[vend - 2] == '.' && text_[vend - 1] == '*') {
        if (op == Op::Compatible) {
          return parse_error("invalid version constraint", input_, vend - 2, "'~=' cannot be combined with '.*'");
        }
        if (op == Op::Ne) op = Op::NotStartsWith;
        vend -= 2;  // conda: `.*` after another relational operator is ignored
      }
      auto s = version_at(vstart, vend);
      if (!s) return s;
      s->op_ = op;
      return s;
    }
    if (leaf == "*") return VersionSpec{};
    std::string_view stripped = leaf;
    while (!stripped.empty() && stripped.back() == '*') stripped.remove_suffix(1);
    if (stripped.find('*') != std::string_view::npos) {
      for (std::size_t i = 0; i < leaf.size(); ++i) {
        char lc = static_cast<char>(std::tolower(static_cast<unsigned char>(leaf[i])));
        if (!is_version_char(lc) && lc != '-') {
          return parse_error("invalid version constraint", input_, start + i,
                             "invalid character '" + std::string(1, leaf[i]) + "' in a version glob");
        }
      }
      VersionSpec s;
      s.op_ = Op::Glob;
      s.pattern_ = std::string(leaf);
      return s;
    }
    if (leaf.back() == '*') {
      // `1.2.*` and conda's legacy `1.2*` both mean "starts with 1.2" (conda strips every
      // trailing '*', then every trailing '.').
      std::size_t vend = start + stripped.size();
      while (vend > start && text_[vend - 1] == '.') --vend;
      auto s = version_at(start, vend);
      if (!s) return s;
      s->op_ = Op::StartsWith;
      return s;
    }
    auto s = version_at(start, end);
    if (!s) return s;
    s->op_ = Op::Eq;
    return s;
  }

  std::string_view text_;
  std::string input_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;  ///< parentheses open at pos_
};

Result<VersionSpec> VersionSpec::parse(std::string_view text) { return VersionSpecParser(text).run(); }

std::size_t VersionSpec::nesting(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  for (char c : text) {
    if (c == '(') deepest = std::max(deepest, ++depth);
    else if (c == ')' && depth > 0) --depth;
  }
  return deepest;
}

bool VersionSpec::matches(const Version& v) const {
  switch (op_) {
    case Op::Any: return true;
    case Op::Eq: return v == version_;
    case Op::Ne: return v != version_;
    case Op::Lt: return v < version_;
    case Op::Le: return v <= version_;
    case Op::Gt: return v > version_;
    case Op::Ge: return v >= version_;
    case Op::StartsWith: return v.starts_with(version_);
    case Op::NotStartsWith: return !v.starts_with(version_);
    case Op::Compatible: return v.compatible_with(version_);
    case Op::Glob: return detail::glob_match(ascii_lower(pattern_), ascii_lower(v.to_string()));
    case Op::Regex: {
      try {
        return std::regex_search(v.to_string(), std::regex(pattern_));
      } catch (const std::regex_error&) {
        return false;
      }
    }
    case Op::And:
      return std::all_of(children_.begin(), children_.end(), [&](const VersionSpec& c) { return c.matches(v); });
    case Op::Or:
      return std::any_of(children_.begin(), children_.end(), [&](const VersionSpec& c) { return c.matches(v); });
  }
  return false;
}

std::string VersionSpec::to_string() const {
  const std::string& v = version_.to_string();
  switch (op_) {
    case Op::Any: return "*";
    case Op::Eq: return "==" + v;
    case Op::Ne: return "!=" + v;
    case Op::Lt: return "<" + v;
    case Op::Le: return "<=" + v;
    case Op::Gt: return ">" + v;
    case Op::Ge: return ">=" + v;
    case Op::StartsWith: return v.find('*') == std::string::npos ? v + ".*" : "=" + v;
    case Op::NotStartsWith: return "!=" + v + ".*";
    case Op::Compatible: return "~=" + v;
    case Op::Glob:
    case Op::Regex: return pattern_;
    case Op::And:
    case Op::Or: {
      std::string out;
      for (const auto& c : children_) {
        if (!out.empty()) out += op_ == Op::And ? "," : "|";
        bool paren = op_ == Op::And && c.op_ == Op::Or;
        out += paren ? "(" + c.to_string() + ")" : c.to_string();
      }
      return out;
    }
  }
  return "*";
}

bool operator==(const VersionSpec& a, const VersionSpec& b) {
  if (a.op_ != b.op_) return false;
  switch (a.op_) {
    case VersionSpec::Op::Any: return true;
    case VersionSpec::Op::Glob:
    case VersionSpec::Op::Regex: return a.pattern_ == b.pattern_;
    case VersionSpec::Op::And:
    case VersionSpec::Op::Or: return a.children_ == b.children_;
    default: return a.version_ == b.version_;
  }
}

}  // namespace envlock
