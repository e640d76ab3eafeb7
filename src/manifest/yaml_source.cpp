#include "yaml_source.hpp"

#include <set>

#include "envlock/url.hpp"

namespace envlock::yaml {

Source::Source(std::string text, std::string name) : text_(std::move(text)), name_(std::move(name)) {
  std::string_view all(text_);
  std::size_t start = 0;
  while (start <= all.size()) {
    std::size_t end = all.find('\n', start);
    if (end == std::string_view::npos) end = all.size();
    std::string_view l = all.substr(start, end - start);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    lines_.push_back(l);
    start = end + 1;
  }
}

Result<YAML::Node> Source::load() const {
  try {
    return YAML::Load(text_);
  } catch (const YAML::Exception& e) {
    return error_at(e.mark, "invalid YAML: " + e.msg, "fix the YAML syntax at this place");
  }
}

std::string_view Source::line(int one_based) const {
  if (one_based < 1 || static_cast<std::size_t>(one_based) > lines_.size()) return {};
  return lines_[static_cast<std::size_t>(one_based - 1)];
}

std::string Source::where(const YAML::Mark& mark) const {
  if (mark.is_null() || mark.line < 0) return name_;
  return name_ + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

Error Source::error_at(const YAML::Mark& mark, const std::string& message, const std::string& hint) const {
  Error e;
  e.kind = ErrorKind::Parse;
  e.where = where(mark);
  e.message = message;
  e.hint = hint;
  if (!mark.is_null() && mark.line >= 0) {
    std::string_view l = line(mark.line + 1);
    if (!l.empty()) e.detail = redacted_excerpt(l, static_cast<std::size_t>(std::max(mark.column, 0)));
  }
  return e;
}

std::string kind_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar '" + node.Scalar() + "'";
    case YAML::NodeType::Null: return "nothing (null)";
    case YAML::NodeType::Undefined: return "nothing";
  }
  return "nothing";
}

Status check_unique_keys(const Source& src, const YAML::Node& map) {
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) return src.error_at(kv.first, "a key must be a plain string, found " + kind_name(kv.first));
    if (!seen.insert(kv.first.Scalar()).second)
      return src.error_at(kv.first, "duplicate key '" + kv.first.Scalar() + "'",
                          "remove one of the two entries");
  }
  return ok_status();
}

}  // namespace envlock::yaml
