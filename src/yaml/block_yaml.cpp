// block_yaml: envlock's block subset of YAML read in one pass, and the same tree from yaml-cpp.
#include "block_yaml.hpp"

#include <algorithm>
#include <cstdint>

namespace envlock::block_yaml {

Node Node::operator[](std::string_view key) const {
  if (kind() != Kind::Map) return {};
  for (auto [k, v] : entries())
    if (k.IsScalar() && k.Scalar() == key) return v;
  return {};
}

Node Node::item(std::size_t i) const {
  for (Node n : items())
    if (i-- == 0) return n;
  return {};
}

Node::Range Node::items() const {
  const std::uint32_t first = kind() == Kind::Sequence && slot()->count > 0 ? index_ + 1 : 0;
  return {Iterator(doc_, first), Iterator(doc_, 0)};
}

Node::EntryRange Node::entries() const {
  const std::uint32_t first = kind() == Kind::Map && slot()->count > 0 ? index_ + 1 : 0;
  return {EntryIterator(Iterator(doc_, first)), EntryIterator(Iterator(doc_, 0))};
}

YAML::Mark Node::Mark() const {
  if (kind() == Kind::Undefined) return YAML::Mark::null_mark();
  YAML::Mark m;
  m.line = line() - 1;
  m.column = column() - 1;
  return m;
}

std::string kind_name(const Node& node) {
  switch (node.kind()) {
    case Kind::Map: return "a map";
    case Kind::Sequence: return "a list";
    case Kind::Scalar: return "a scalar '" + std::string(node.Scalar()) + "'";
    case Kind::Null: return "nothing (null)";
    case Kind::Undefined: return "nothing";
  }
  return "nothing";
}

/// Appends nodes to a Document in document order and links each container's children.
class Builder {
 public:
  explicit Builder(Document& doc) : doc_(doc) {}
  /// Appends a node; returns its index.
  std::uint32_t add(Kind kind, int line, int column) {
    Slot s;
    s.kind = kind;
    s.line = static_cast<std::uint32_t>(line);
    s.column = static_cast<std::uint32_t>(column);
    doc_.slots_.push_back(s);
    return static_cast<std::uint32_t>(doc_.slots_.size() - 1);
  }
  std::uint32_t add_scalar(std::string_view text, int line, int column) {
    const std::uint32_t i = add(Kind::Scalar, line, column);
    set_text(i, text);
    return i;
  }
  std::uint32_t add_owned_scalar(std::string text, int line, int column) {
    doc_.owned_.push_back(std::move(text));
    return add_scalar(doc_.owned_.back(), line, column);
  }
  void set_text(std::uint32_t i, std::string_view text) {
    doc_.slots_[i].data = text.data();
    doc_.slots_[i].size = static_cast<std::uint32_t>(text.size());
  }
  Slot& slot(std::uint32_t i) { return doc_.slots_[i]; }
  /// Links `child` after `previous` (0: `child` is the first) under `parent`.
  void link(std::uint32_t previous, std::uint32_t child) {
    if (previous != 0) doc_.slots_[previous].next = child;
  }
  [[nodiscard]] std::uint32_t size() const { return static_cast<std::uint32_t>(doc_.slots_.size()); }
  void reserve(std::size_t n) { doc_.slots_.reserve(n); }

 private:
  Document& doc_;
};

namespace {

struct Line {
  std::string_view text;   ///< after the indentation, trailing spaces removed
  const char* start = nullptr;  ///< the first character of the line, for columns
  int indent = 0;
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

/// A scalar's text: a slice of the parsed text, or the decoded text when escapes were resolved.
struct Text {
  std::string_view view;
  std::string decoded;
  bool owned = false;
};

/// A double-quoted scalar at the start of `s` (s[0] == '"'), on one line. Sets `end` to the index
/// after the closing quote. False for anything this subset leaves to yaml-cpp.
bool double_quoted(std::string_view s, Text& out, std::size_t& end) {
  std::size_t close = 1;  // (a loop: find_first_of calls memchr once per character)
  while (close < s.size() && s[close] != '"' && s[close] != '\\') ++close;
  if (close < s.size() && s[close] == '"') {
    out.view = s.substr(1, close - 1);  // no escapes: the common case
    out.owned = false;
    end = close + 1;
    return true;
  }
  out.owned = true;
  std::string& o = out.decoded;
  o.clear();
  for (std::size_t i = 1; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') {
      end = i + 1;
      return true;
    }
    if (c != '\\') {
      o += c;
      continue;
    }
    if (++i >= s.size()) return false;
    int digits = 0;
    switch (s[i]) {
      case '"': o += '"'; break;
      case '\\': o += '\\'; break;
      case '/': o += '/'; break;
      case 'n': o += '\n'; break;
      case 't': o += '\t'; break;
      case 'r': o += '\r'; break;
      case '0': o += '\0'; break;
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
      append_utf8(o, cp);
      i += static_cast<std::size_t>(digits);
    }
  }
  return false;  // no closing quote on this line
}

/// A single-quoted scalar at the start of `s` (s[0] == '\''), on one line: `''` stands for one
/// quote, nothing else is an escape. Sets `end` to the index after the closing quote. False when
/// the quote does not close on this line (a multi-line scalar, left to yaml-cpp).
bool single_quoted(std::string_view s, Text& out, std::size_t& end) {
  std::size_t close = s.find('\'', 1);
  if (close == std::string_view::npos) return false;
  if (close + 1 >= s.size() || s[close + 1] != '\'') {  // no doubled quote: the common case
    out.view = s.substr(1, close - 1);
    out.owned = false;
    end = close + 1;
    return true;
  }
  out.owned = true;
  std::string& o = out.decoded;
  o.clear();
  for (std::size_t i = 1; i < s.size(); ++i) {
    if (s[i] != '\'') {
      o += s[i];
    } else if (i + 1 < s.size() && s[i + 1] == '\'') {
      o += '\'';
      ++i;
    } else {
      end = i + 1;
      return true;
    }
  }
  return false;
}

bool starts_plain(std::string_view s) {
  if (s.empty()) return false;
  if (std::string_view("[]{}'\"&*!|>%@`#,?:").find(s.front()) != std::string_view::npos) return false;
  if (s.front() == '-' && (s.size() == 1 || s[1] == ' ')) return false;
  return true;
}

bool is_null_word(std::string_view s) { return s == "~" || s == "null" || s == "Null" || s == "NULL"; }

bool is_item(std::string_view text) { return text == "-" || text.starts_with("- "); }

/// A map key read from a line, before it is added to the document.
struct Key {
  Text text;
  int line = 0;
  int column = 0;
};

class Parser {
 public:
  Parser(std::string_view text, Document& doc) : b_(doc), source_(text) { advance(); }

  bool parse() {
    if (!ok_ || !has_ || cur_.indent != 0) return false;
    // At most a map, a key and a value per line.
    b_.reserve(static_cast<std::size_t>(std::count(source_.begin(), source_.end(), '\n')) * 3 + 4);
    std::uint32_t root = 0;
    return node(0, root) && ok_ && !has_;
  }

 private:
  static int column(const Line& l, std::string_view part) { return static_cast<int>(part.data() - l.start) + 1; }

  std::uint32_t add(const Text& t, int line, int column) {
    return t.owned ? b_.add_owned_scalar(t.decoded, line, column) : b_.add_scalar(t.view, line, column);
  }

  /// A scalar (or [] / {}) written after `key: ` or `- `; appends it as `out`.
  bool scalar(const Line& l, std::string_view s, std::uint32_t& out) {
    const int col = column(l, s);
    if (s == "[]") {
      out = b_.add(Kind::Sequence, l.number, col);
      return true;
    }
    if (s == "{}") {
      out = b_.add(Kind::Map, l.number, col);
      return true;
    }
    if (s.front() == '"' || s.front() == '\'') {
      std::size_t end = 0;
      if (!(s.front() == '"' ? double_quoted(s, text_, end) : single_quoted(s, text_, end)) || end != s.size())
        return false;
      out = add(text_, l.number, col);
      return true;
    }
    if (is_null_word(s)) {  // `key: null` / `- ~`: a null node, as yaml-cpp reads it
      out = b_.add(Kind::Null, l.number, col);
      return true;
    }
    if (!starts_plain(s) || s.back() == ':') return false;
    for (std::size_t i = 0; i < s.size(); ++i) {  // no ": ", " #" or tab: one pass
      const char c = s[i];
      if (c == '\t' || (i + 1 < s.size() && ((c == ':' && s[i + 1] == ' ') || (c == ' ' && s[i + 1] == '#'))))
        return false;
    }
    out = b_.add_scalar(s, l.number, col);
    return true;
  }

  /// Splits `key: rest` / `key:`; false when the line is not a map entry of this subset.
  static bool key(const Line& l, Key& k, std::string_view& rest) {
    std::string_view t = l.text;
    std::size_t after = 0;
    k.line = l.number;
    k.column = column(l, t);
    if (t.front() == '"') {
      if (!double_quoted(t, k.text, after)) return false;
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
      k.text.view = name;
      k.text.owned = false;
      after = p;
    }
    if (after >= t.size() || t[after] != ':' || (after + 1 < t.size() && t[after + 1] != ' ')) return false;
    rest = t.substr(after + 1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (!rest.empty() && rest.front() == '#') return false;  // a comment after the key: leave it to yaml-cpp
    return true;
  }

  /// The block node whose first line is cur_, at indentation `indent`.
  bool node(int indent, std::uint32_t& out) {
    if (is_item(cur_.text)) return sequence(indent, out);
    return map(indent, out);
  }

  bool sequence(int indent, std::uint32_t& out) {
    out = b_.add(Kind::Sequence, cur_.number, indent + 1);
    std::uint32_t previous = 0, count = 0;
    while (has_ && cur_.indent == indent && is_item(cur_.text)) {
      Line& l = cur_;
      if (l.text.size() < 3) return false;  // "-" alone: a nested block, not written by envlock
      std::string_view content = l.text.substr(2);
      std::size_t extra = 0;
      while (extra < content.size() && content[extra] == ' ') ++extra;
      content.remove_prefix(extra);
      if (content.empty() || is_item(content)) return false;
      std::uint32_t item = 0;
      std::string_view rest;
      Line probe = l;
      probe.text = content;
      probe.indent = indent + 2 + static_cast<int>(extra);
      if (key(probe, key_, rest)) {
        l = probe;  // the item is a map whose first key stands on the item's line
        if (!map(probe.indent, item)) return false;
      } else {
        if (!scalar(l, content, item)) return false;
        advance();
      }
      b_.link(previous, item);
      previous = item;
      ++count;
      if (has_ && cur_.indent > indent) return false;
    }
    b_.slot(out).count = count;
    return true;
  }

  bool map(int indent, std::uint32_t& out) {
    out = b_.add(Kind::Map, cur_.number, indent + 1);
    std::uint32_t previous = 0, count = 0;
    while (has_ && cur_.indent == indent) {
      const Line l = cur_;
      if (is_item(l.text)) return false;
      std::string_view rest;
      if (!key(l, key_, rest)) return false;
      advance();
      const std::uint32_t k = add(key_.text, key_.line, key_.column);
      b_.link(previous, k);
      std::uint32_t v = 0;
      if (!rest.empty()) {
        if (!scalar(l, rest, v)) return false;
      } else if (has_ && cur_.indent > indent) {
        if (!node(cur_.indent, v)) return false;
      } else if (has_ && cur_.indent == indent && is_item(cur_.text)) {
        if (!sequence(indent, v)) return false;
      } else {
        v = b_.add(Kind::Null, l.number, column(l, l.text) + static_cast<int>(l.text.size()));
      }
      b_.link(k, v);  // a value follows its key
      previous = v;
      ++count;
    }
    b_.slot(out).count = count;
    return !(has_ && cur_.indent > indent);
  }

  /// Moves cur_ to the next line with content (lines are read as the parse reaches them, not
  /// listed first). has_ is false at the end of the text, and at a line this subset leaves to
  /// yaml-cpp (a tab, `---`, `...`, a directive), where ok_ turns false too.
  void advance() {
    has_ = false;
    while (ok_ && pos_ <= source_.size()) {
      std::size_t nl = source_.find('\n', pos_);
      if (nl == std::string_view::npos) nl = source_.size();
      std::string_view raw = source_.substr(pos_, nl - pos_);
      ++number_;
      const char* start = raw.data();
      pos_ = nl + 1;
      if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
      std::size_t ind = 0;
      while (ind < raw.size() && raw[ind] == ' ') ++ind;
      std::string_view t = raw.substr(ind);
      while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
      if (t.empty() || t.front() == '#') continue;
      if (t.front() == '\t' || t.starts_with("---") || t.starts_with("...") || t.front() == '%') {
        ok_ = false;
        return;
      }
      cur_ = Line{t, start, static_cast<int>(ind), number_};
      has_ = true;
      return;
    }
  }

  Builder b_;
  std::string_view source_;
  std::size_t pos_ = 0;  ///< where the next line starts
  int number_ = 0;       ///< 1-based number of the last line read
  Line cur_;             ///< the line the parse is at, when has_
  bool has_ = false;
  bool ok_ = true;
  Text text_;  ///< scratch for scalars
  Key key_;    ///< scratch for keys
};

std::uint32_t convert(Builder& b, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  const int line = m.line + 1, column = m.column + 1;
  switch (node.Type()) {
    case YAML::NodeType::Undefined: return b.add(Kind::Undefined, 0, 0);
    case YAML::NodeType::Null: return b.add(Kind::Null, line, column);
    case YAML::NodeType::Scalar: return b.add_owned_scalar(node.Scalar(), line, column);
    case YAML::NodeType::Sequence: {
      const std::uint32_t out = b.add(Kind::Sequence, line, column);
      std::uint32_t previous = 0, count = 0;
      for (const auto& item : node) {
        const std::uint32_t i = convert(b, item);
        b.link(previous, i);
        previous = i;
        ++count;
      }
      b.slot(out).count = count;
      return out;
    }
    case YAML::NodeType::Map: {
      const std::uint32_t out = b.add(Kind::Map, line, column);
      std::uint32_t previous = 0, count = 0;
      for (const auto& kv : node) {
        const std::uint32_t k = convert(b, kv.first);
        b.link(previous, k);
        const std::uint32_t v = convert(b, kv.second);
        b.link(k, v);
        previous = v;
        ++count;
      }
      b.slot(out).count = count;
      return out;
    }
  }
  return b.add(Kind::Undefined, 0, 0);
}

}  // namespace

std::optional<Document> parse_block_yaml(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) return std::nullopt;
  Document doc;
  if (!Parser(text, doc).parse()) return std::nullopt;
  return doc;
}

Document from_yaml_cpp(const YAML::Node& node) {
  Document doc;
  if (!node.IsDefined()) return doc;
  Builder b(doc);
  convert(b, node);
  return doc;
}

}  // namespace envlock::block_yaml
