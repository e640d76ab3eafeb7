// RECORD paths of pip-installed files (envlock/record_path.hpp).
#include "envlock/record_path.hpp"

#include <vector>

namespace envlock {

std::optional<std::string> normalize_relative(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto slash = path.find('/', start);
    const std::string_view part = path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part == "..") {
      if (parts.empty()) return std::nullopt;
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += '/';
    out += p;
  }
  return out;
}

std::optional<std::string> record_path_in_prefix(std::string_view site, std::string_view record_path, std::string_view host_prefix) {
  if (!record_path.empty() && record_path.front() == '/') {
    const auto path = normalize_relative(record_path);
    const auto prefix = normalize_relative(host_prefix);
    if (!path || !prefix || prefix->empty()) return std::nullopt;
    if (path->size() <= prefix->size() + 1 || !path->starts_with(*prefix) || (*path)[prefix->size()] != '/') return std::nullopt;
    return path->substr(prefix->size() + 1);
  }
  std::string joined(site);
  joined += '/';
  joined += record_path;
  return normalize_relative(joined);
}

}  // namespace envlock
