// The one YAML emitter and quoting policy (emit.hpp).
#include "emit.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace envlock::yaml {
namespace {

bool ascii_alpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool ascii_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/// The boolean and null words of YAML 1.1 (PyYAML) and 1.2 (yaml-cpp), compared without case.
bool reserved_word(std::string_view s) {
  if (s.size() > 5) return false;
  std::string lower(s);
  for (auto& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  static constexpr std::string_view kWords[] = {"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"};
  return std::find(std::begin(kWords), std::end(kWords), lower) != std::end(kWords);
}

/// The length of the UTF-8 sequence at `s[i]` that YAML readers must see escaped (C1 controls,
/// NEL, the line and paragraph separators, U+FFFE/U+FFFF: line breaks in YAML 1.1 or
/// non-printable to PyYAML's reader), with its code point; 0 for anything else.
std::size_t escaped_sequence(std::string_view s, std::size_t i, unsigned& code_point) {
  const auto b = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  if (b(0) == 0xc2 && b(1) >= 0x80 && b(1) <= 0x9f) {
    code_point = b(1);
    return 2;
  }
  if (b(0) == 0xe2 && b(1) == 0x80 && (b(2) == 0xa8 || b(2) == 0xa9)) {
    code_point = 0x2000u + (b(2) - 0x80u);
    return 3;
  }
  if (b(0) == 0xef && b(1) == 0xbf && (b(2) == 0xbe || b(2) == 0xbf)) {
    code_point = 0xff00u + (b(2) - 0x40u);
    return 3;
  }
  return 0;
}

bool needs_double_quotes(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    unsigned cp = 0;
    if (c < 0x20 || c == 0x7f || escaped_sequence(s, i, cp) != 0) return true;
  }
  return false;
}

}  // namespace

bool plain_safe(std::string_view s, Context context) {
  if (s.empty() || reserved_word(s)) return false;
  const auto first = static_cast<unsigned char>(s.front());
  if (!(ascii_alpha(first) || first == '_' || first == '/')) return false;  // never a number or an indicator
  if (s.back() == ' ' || s.back() == ':') return false;
  const std::string_view extra = context == Context::Flow ? "_.+-/=<>!*@%~&#| " : "_.+-/=<>!*,:@%~?&#| ";
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (!(ascii_alpha(c) || ascii_digit(c) || extra.find(static_cast<char>(c)) != std::string_view::npos)) return false;
    if (c == ':' && i + 1 < s.size() && s[i + 1] == ' ') return false;  // "a: b" would be a map
    if (c == '#' && s[i - 1] == ' ') return false;                     // " #" starts a comment
  }
  return true;
}

std::string double_quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    char buf[12];
    unsigned cp = 0;
    if (const std::size_t n = escaped_sequence(s, i, cp); n != 0) {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      out += buf;
      i += n - 1;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string single_quoted(std::string_view s) {
  if (needs_double_quotes(s)) return double_quoted(s);
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  out += '\'';
  return out;
}

std::string scalar(std::string_view s, Context context) {
  return plain_safe(s, context) ? std::string(s) : double_quoted(s);
}

// ----- BlockWriter ------------------------------------------------------------------------------

void BlockWriter::key_line(std::string_view key) {
  if (dash_) {
    out_.append(static_cast<std::size_t>(indent_ - 2), ' ');
    out_ += "- ";
    dash_ = false;
  } else {
    out_.append(static_cast<std::size_t>(indent_), ' ');
  }
  out_ += scalar(key);
  out_ += ':';
}

void BlockWriter::comment(std::string_view text) {
  out_.append(static_cast<std::size_t>(indent_), ' ');
  out_ += "# ";
  out_ += text;
  out_ += '\n';
}

void BlockWriter::begin_value(std::string_view key) {
  key_line(key);
  out_ += ' ';
}

void BlockWriter::kv(std::string_view key, std::string_view value) { kv_raw(key, scalar(value)); }

void BlockWriter::kv_nonempty(std::string_view key, std::string_view value) {
  if (!value.empty()) kv(key, value);
}

void BlockWriter::kv_raw(std::string_view key, std::string_view token) {
  begin_value(key);
  out_ += token;
  out_ += '\n';
}

void BlockWriter::kv_num(std::string_view key, std::uint64_t value) { kv_raw(key, std::to_string(value)); }
void BlockWriter::kv_num(std::string_view key, std::int64_t value) { kv_raw(key, std::to_string(value)); }
void BlockWriter::kv_bool(std::string_view key, bool value) { kv_raw(key, value ? "true" : "false"); }

void BlockWriter::open(std::string_view key, bool empty, std::string_view empty_token) {
  key_line(key);
  if (empty) {
    out_ += ' ';
    out_ += empty_token;
  }
  out_ += '\n';
  indent_ += 2;
}

void BlockWriter::close() { indent_ -= 2; }

void BlockWriter::list(std::string_view key, const std::vector<std::string>& values) {
  open(key, values.empty(), "[]");
  for (const auto& v : values) {
    begin_item();
    raw(scalar(v));
    end_line();
  }
  close();
}

void BlockWriter::begin_item_map() {
  indent_ += 2;
  dash_ = true;
}

void BlockWriter::end_item_map() {
  indent_ -= 2;
  dash_ = false;
}

void BlockWriter::begin_item() {
  out_.append(static_cast<std::size_t>(indent_), ' ');
  out_ += "- ";
}

void BlockWriter::raw(std::string_view token) { out_ += token; }

}  // namespace envlock::yaml
