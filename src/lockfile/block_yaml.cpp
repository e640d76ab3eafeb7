// block_yaml: envlock's block subset of YAML read in one pass, and the same tree from yaml-cpp.
#include "block_yaml.hpp"

#include <algorithm>
#include <cstdint>

namespace envlock::block_yaml {

const Node& Node::operator[](std::string_view key) const {
  static const Node kUndefined;
  if (kind != Kind::Map) return kUndefined;
  for (const auto& [k, v] : entries)
    if (k.kind == Kind::Scalar && k.scalar == key) return v;
  return kUndefined;
}

YAML::Mark Node::Mark() const {
  if (kind == Kind::Undefined) return YAML::Mark::null_mark();
  YAML::Mark m;
  m.line = line - 1;
  m.column = column - 1;
  return m;
}

std::string kind_name(const Node& node) {
  switch (node.kind) {
    case Node::Kind::Map: return "a map";
    case Node::Kind::Sequence: return "a list";
    case Node::Kind::Scalar: return "a scalar '" + node.scalar + "'";
    case Node::Kind::Null: return "nothing (null)";
    case Node::Kind::Undefined: return "nothing";
  }
  return "nothing";
}

namespace {

struct Line {
  int indent = 0;
  std::string_view text;   ///< after the indentation, trailing spaces removed
  const char* start = nullptr;  ///< the first character of the line, for columns
  int number = 0;          ///< 1-based
};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

/// A double-quoted scalar at the start of `s` (s[0] == '"'), on one line. Sets `end` to the index
/// after the closing quote. False for anything this subset leaves to yaml-cpp.
bool double_quoted(std::string_view s, std::string& out, std::size_t& end) {
  if (std::size_t close = s.find_first_of("\"\\", 1); close != std::string_view::npos && s[close] == '"') {
    out.assign(s.substr(1, close - 1));  // no escapes: the common case
    end = close + 1;
    return true;
  }
  out.clear();
  for (std::size_t i = 1; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') {
      end = i + 1;
      return true;
    }
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= s.size()) return false;
    int digits = 0;
    switch (s[i]) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '0': out += '\0'; break;
      case 'x': digits = 2; break;
      case 'u': digits = 4; break;
      case 'U': digits = 8; break;
      default: return false;
    }
    if (digits > 0) {
      if (i + static_cast<std::size_t>(digits) >= s.size()) return false;
      std::uint32_t cp = 0;
      for (int d = 1; d <= digits; ++d) {
        const int v = hex_value(s[i + static_cast<std::size_t>(d)]);
        if (v < 0) return false;
        cp = cp * 16 + static_cast<std::uint32_t>(v);
      }
      if (cp > 0x10FFFF) return false;
      append_utf8(out, cp);
      i += static_cast<std::size_t>(digits);
    }
  }
  return false;  // no closing quote on this line
}

bool starts_plain(std::string_view s) {
  if (s.empty()) return false;
  if (std::string_view("[]{}'\"&*!|>%@`#,?:").find(s.front()) != std::string_view::npos) return false;
  if (s.front() == '-' && (s.size() == 1 || s[1] == ' ')) return false;
  return true;
}

bool is_null_word(std::string_view s) { return s == "~" || s == "null" || s == "Null" || s == "NULL"; }

bool is_item(std::string_view text) { return text == "-" || text.starts_with("- "); }

class Parser {
 public:
  explicit Parser(std::string_view text) {
    lines_.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
    int number = 0;
    std::size_t pos = 0;
    while (pos <= text.size() && ok_) {
      std::size_t nl = text.find('\n', pos);
      if (nl == std::string_view::npos) nl = text.size();
      std::string_view raw = text.substr(pos, nl - pos);
      ++number;
      const char* start = raw.data();
      pos = nl + 1;
      if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
      std::size_t ind = 0;
      while (ind < raw.size() && raw[ind] == ' ') ++ind;
      std::string_view t = raw.substr(ind);
      while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
      if (t.empty() || t.front() == '#') continue;
      if (t.front() == '\t' || t.starts_with("---") || t.starts_with("...") || t.front() == '%') ok_ = false;
      lines_.push_back(Line{static_cast<int>(ind), t, start, number});
      if (nl == text.size()) break;
    }
  }

  std::optional<Node> parse() {
    if (!ok_ || lines_.empty() || lines_[0].indent != 0) return std::nullopt;
    Node root;
    if (!node(0, root) || i_ != lines_.size()) return std::nullopt;
    return root;
  }

 private:
  int column(const Line& l, std::string_view part) const { return static_cast<int>(part.data() - l.start) + 1; }

  /// A scalar (or [] / {}) written after `key: ` or `- `.
  bool scalar(const Line& l, std::string_view s, Node& out) const {
    out.line = l.number;
    out.column = column(l, s);
    if (s == "[]") {
      out.kind = Node::Kind::Sequence;
      return true;
    }
    if (s == "{}") {
      out.kind = Node::Kind::Map;
      return true;
    }
    if (s.front() == '"') {
      std::size_t end = 0;
      if (!double_quoted(s, out.scalar, end) || end != s.size()) return false;
      out.kind = Node::Kind::Scalar;
      return true;
    }
    if (!starts_plain(s) || is_null_word(s) || s.back() == ':' || s.find(": ") != std::string_view::npos ||
        s.find(" #") != std::string_view::npos || s.find('\t') != std::string_view::npos)
      return false;
    out.kind = Node::Kind::Scalar;
    out.scalar = std::string(s);
    return true;
  }

  /// Splits `key: rest` / `key:`; false when the line is not a map entry of this subset.
  bool key(const Line& l, Node& k, std::string_view& rest) const {
    std::string_view t = l.text;
    std::size_t after = 0;
    k.line = l.number;
    k.column = column(l, t);
    k.kind = Node::Kind::Scalar;
    if (t.front() == '"') {
      if (!double_quoted(t, k.scalar, after)) return false;
    } else {
      std::size_t p = t.find(": ");
      if (p == std::string_view::npos) {
        if (t.back() != ':') return false;
        p = t.size() - 1;
      }
      std::string_view name = t.substr(0, p);
      if (!starts_plain(name) || name.find(" #") != std::string_view::npos || name.back() == ' ' ||
          is_null_word(name))
        return false;
      k.scalar = std::string(name);
      after = p;
    }
    if (after >= t.size() || t[after] != ':' || (after + 1 < t.size() && t[after + 1] != ' ')) return false;
    rest = t.substr(after + 1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (!rest.empty() && rest.front() == '#') return false;  // a comment after the key: leave it to yaml-cpp
    return true;
  }

  /// The block node whose first line is lines_[i_], at indentation `indent`.
  bool node(int indent, Node& out) {
    if (is_item(lines_[i_].text)) return sequence(indent, out);
    return map(indent, out);
  }

  bool sequence(int indent, Node& out) {
    out.kind = Node::Kind::Sequence;
    out.line = lines_[i_].number;
    out.column = indent + 1;
    while (i_ < lines_.size() && lines_[i_].indent == indent && is_item(lines_[i_].text)) {
      Line& l = lines_[i_];
      if (l.text.size() < 3) return false;  // "-" alone: a nested block, not written by envlock
      std::string_view content = l.text.substr(2);
      std::size_t extra = 0;
      while (extra < content.size() && content[extra] == ' ') ++extra;
      content.remove_prefix(extra);
      if (content.empty() || is_item(content)) return false;
      Node item;
      Node k;
      std::string_view rest;
      Line probe = l;
      probe.text = content;
      probe.indent = indent + 2 + static_cast<int>(extra);
      if (key(probe, k, rest)) {
        l = probe;  // the item is a map whose first key stands on the item's line
        if (!map(probe.indent, item)) return false;
      } else {
        if (!scalar(l, content, item)) return false;
        ++i_;
      }
      out.items.push_back(std::move(item));
      if (i_ < lines_.size() && lines_[i_].indent > indent) return false;
    }
    return true;
  }

  bool map(int indent, Node& out) {
    out.kind = Node::Kind::Map;
    out.line = lines_[i_].number;
    out.column = indent + 1;
    out.entries.reserve(8);
    while (i_ < lines_.size() && lines_[i_].indent == indent) {
      const Line l = lines_[i_];
      if (is_item(l.text)) return false;
      Node k, v;
      std::string_view rest;
      if (!key(l, k, rest)) return false;
      ++i_;
      if (!rest.empty()) {
        if (!scalar(l, rest, v)) return false;
      } else if (i_ < lines_.size() && lines_[i_].indent > indent) {
        if (!node(lines_[i_].indent, v)) return false;
      } else if (i_ < lines_.size() && lines_[i_].indent == indent && is_item(lines_[i_].text)) {
        if (!sequence(indent, v)) return false;
      } else {
        v.kind = Node::Kind::Null;
        v.line = l.number;
        v.column = column(l, l.text) + static_cast<int>(l.text.size());
      }
      out.entries.emplace_back(std::move(k), std::move(v));
    }
    return !(i_ < lines_.size() && lines_[i_].indent > indent);
  }

  std::vector<Line> lines_;
  std::size_t i_ = 0;
  bool ok_ = true;
};

}  // namespace

std::optional<Node> parse_block_yaml(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) return std::nullopt;
  return Parser(text).parse();
}

Node from_yaml_cpp(const YAML::Node& node) {
  Node out;
  if (!node.IsDefined()) return out;
  const YAML::Mark m = node.Mark();
  out.line = m.line + 1;
  out.column = m.column + 1;
  switch (node.Type()) {
    case YAML::NodeType::Undefined: out.kind = Node::Kind::Undefined; break;
    case YAML::NodeType::Null: out.kind = Node::Kind::Null; break;
    case YAML::NodeType::Scalar:
      out.kind = Node::Kind::Scalar;
      out.scalar = node.Scalar();
      break;
    case YAML::NodeType::Sequence:
      out.kind = Node::Kind::Sequence;
      for (const auto& item : node) out.items.push_back(from_yaml_cpp(item));
      break;
    case YAML::NodeType::Map:
      out.kind = Node::Kind::Map;
      for (const auto& kv : node) out.entries.emplace_back(from_yaml_cpp(kv.first), from_yaml_cpp(kv.second));
      break;
  }
  return out;
}

}  // namespace envlock::block_yaml
