// Relocation primitives: text and binary prefix placeholders, long shebangs (conda's rules,
// conda/core/portability.py).
#include <string>

#include "envlock/install.hpp"

namespace envlock {

std::size_t replace_text_placeholder(std::string& data, std::string_view placeholder,
                                     std::string_view prefix) {
  if (placeholder.empty()) return 0;
  std::size_t count = 0;
  std::string out;
  std::size_t from = 0;
  for (std::size_t at = data.find(placeholder); at != std::string::npos;
       at = data.find(placeholder, from)) {
    if (count == 0) out.reserve(data.size());
    out.append(data, from, at - from);
    out.append(prefix);
    from = at + placeholder.size();
    ++count;
  }
  if (count == 0) return 0;
  out.append(data, from, std::string::npos);
  data.swap(out);
  return count;
}

Result<std::size_t> replace_binary_placeholder(std::string& data, std::string_view placeholder,
                                               std::string_view prefix, const std::string& where) {
  if (placeholder.empty()) return std::size_t{0};
  if (prefix.size() > placeholder.size() && data.find(placeholder) != std::string::npos) {
    return Error{ErrorKind::Incompatible, where,
                 "the prefix is longer than the binary prefix placeholder (" +
                     std::to_string(prefix.size()) + " > " + std::to_string(placeholder.size()) +
                     " bytes), so it cannot be written into this binary file",
                 "prefix:      " + std::string(prefix) + "\nplaceholder: " + std::string(placeholder),
                 "install into a shorter prefix path (at most " +
                     std::to_string(placeholder.size()) + " characters)"};
  }
  std::size_t count = 0;
  std::size_t at = data.find(placeholder);
  while (at != std::string::npos) {
    // The C string runs from the placeholder to the next NUL (or the end of the data).
    std::size_t end = data.find('\0', at + placeholder.size());
    if (end == std::string::npos) end = data.size();
    const std::size_t length = end - at;
    std::string replacement;
    replacement.reserve(length);
    replacement.append(prefix);
    replacement.append(data, at + placeholder.size(), end - at - placeholder.size());
    replacement.append(length - replacement.size(), '\0');
    data.replace(at, length, replacement);
    ++count;
    at = data.find(placeholder, at + length);
  }
  return count;
}

bool rewrite_long_shebang(std::string& data) {
  if (!data.starts_with("#!")) return false;
  std::size_t eol = data.find('\n');
  if (eol == std::string::npos) eol = data.size();
  std::string_view line(data.data(), eol);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() <= kMaxShebangLength) return false;
  // The interpreter is the first run of non-blank characters (a backslash-escaped space counts
  // as part of it, as conda's SHEBANG_REGEX allows); the rest are its arguments.
  std::size_t i = 2;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  const std::size_t exe_begin = i;
  while (i < line.size()) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == ' ') {
      i += 2;
      continue;
    }
    if (line[i] == ' ' || line[i] == '\t') break;
    ++i;
  }
  std::string_view exe = line.substr(exe_begin, i - exe_begin);
  if (exe.empty()) return false;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  std::string_view args = line.substr(i);
  const std::size_t slash = exe.rfind('/');
  std::string_view name = slash == std::string_view::npos ? exe : exe.substr(slash + 1);
  if (name.empty()) return false;
  std::string replacement = "#!/usr/bin/env " + std::string(name);
  if (!args.empty()) replacement += " " + std::string(args);
  data.replace(0, line.size(), replacement);
  return true;
}

std::string python_exec_trampoline(std::string_view interpreter) {
  std::string quoted(interpreter);
  for (std::size_t at = 0; (at = quoted.find('\'', at)) != std::string::npos; at += 4) quoted.replace(at, 1, "'\\''");
  return "#!/bin/sh\n'''exec' '" + quoted + "' \"$0\" \"$@\"\n' '''\n";
}

std::string python_shebang(std::string_view interpreter) {
  const std::string line = "#!" + std::string(interpreter) + "\n";
  if (line.size() > kMaxShebangLength || interpreter.find_first_of(" \t") != std::string_view::npos)
    return python_exec_trampoline(interpreter);
  return line;
}

bool trampoline_python_shebang(std::string& data, std::string_view prefix) {
  const std::string start = "#!" + std::string(prefix) + "/";
  if (prefix.empty() || !data.starts_with(start)) return false;
  std::size_t eol = data.find('\n');
  if (eol == std::string::npos) eol = data.size();
  std::string_view line(data.data(), eol);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() <= kMaxShebangLength && prefix.find_first_of(" \t") == std::string_view::npos) return false;
  // The interpreter is the prefix plus the path up to the next blank after it.
  const std::size_t blank = line.find_first_of(" \t", start.size());
  const std::string interpreter(line.substr(2, (blank == std::string_view::npos ? line.size() : blank) - 2));
  const std::size_t slash = interpreter.rfind('/');
  if (!std::string_view(interpreter).substr(slash + 1).starts_with("python")) return false;
  data.replace(0, eol == data.size() ? eol : eol + 1, python_exec_trampoline(interpreter));
  return true;
}

}  // namespace envlock
