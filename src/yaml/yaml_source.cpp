#include "yaml_source.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include <limits>
#include <set>
#include <sstream>
#include <unordered_map>

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

namespace {

// May the text hold an anchor? `&name` starts a node property: after white space, a flow
// indicator, a `-` item, a `:` value or at a line start; a URL's query (`?a=1&b=2`) does not.
bool may_hold_anchor(std::string_view text) {
  for (std::size_t i = text.find('&'); i != std::string_view::npos; i = text.find('&', i + 1)) {
    const char before = i == 0 ? '\n' : text[i - 1];
    if (std::string_view(" \t\n\r[{,-:").find(before) != std::string_view::npos) return true;
  }
  return false;
}

struct BudgetExceeded {
  YAML::Mark mark;
};

// Counts the expanded document: every node once, and every alias as the expanded size of the node
// its anchor marks. Throws BudgetExceeded at the alias that takes the aliases' share past the budget.
class ExpansionCounter : public YAML::EventHandler {
 public:
  explicit ExpansionCounter(std::size_t budget) : budget_(budget) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override { leaf(anchor); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    leaf(anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto it = sizes_.find(anchor);
    const std::size_t size = it == sizes_.end() ? 1 : it->second;
    expanded_ = size > budget_ - expanded_ ? budget_ + 1 : expanded_ + size;
    if (expanded_ > budget_) throw BudgetExceeded{mark};
    add(size);
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open_.push_back({anchor, 1});
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open_.push_back({anchor, 1});
  }
  void OnMapEnd() override { close(); }

 private:
  struct Open {
    YAML::anchor_t anchor;
    std::size_t size;  ///< expanded nodes so far, this one included
  };
  void add(std::size_t n) {
    if (!open_.empty()) open_.back().size = std::min(open_.back().size + n, budget_ + 1);
  }
  void leaf(YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) sizes_[anchor] = 1;
    add(1);
  }
  void close() {
    if (open_.empty()) return;
    const Open done = open_.back();
    open_.pop_back();
    if (done.anchor != YAML::NullAnchor) sizes_[done.anchor] = done.size;
    add(done.size);
  }

  std::size_t budget_;
  std::size_t expanded_ = 0;  ///< nodes the aliases add, capped at budget_ + 1
  std::vector<Open> open_;
  std::unordered_map<YAML::anchor_t, std::size_t> sizes_;
};

}  // namespace

Status check_alias_expansion(std::string_view text, const std::string& source, std::size_t budget) {
  if (!may_hold_anchor(text)) return ok_status();
  std::istringstream in{std::string(text)};
  ExpansionCounter counter(budget);
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(counter)) {
    }
  } catch (const BudgetExceeded& over) {
    Error e;
    e.kind = ErrorKind::Parse;
    e.where = source + ":" + std::to_string(over.mark.line + 1) + ":" + std::to_string(over.mark.column + 1);
    e.message = "YAML aliases expand the document by more than " + std::to_string(budget) +
                " nodes (an alias bomb); the file is not read";
    e.hint = "lockfiles, manifests and snapshots need no aliases this large: regenerate the file with the "
             "tool that wrote it";
    return e;
  } catch (const YAML::Exception&) {
    // A syntax error: the loader reports it with its position.
  }
  return ok_status();
}

Result<YAML::Node> Source::load() const {
  if (auto st = check_alias_expansion(text_, name_); !st) return st.error();
  try {
    return YAML::Load(text_);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp 0.7's parser refuses nesting past 500 levels (DepthGuard<500>, message "bad file"):
    // a clear message instead (attack 22 A8: 100000 `[`), at the place the parser had reached.
    return error_at(e.mark, "invalid YAML: lists and maps nested more than 500 levels deep",
                    "no manifest, lockfile or snapshot nests this deep: is this the right file?");
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

Error Source::error_at_unquoted(const YAML::Mark& mark, const std::string& message, const std::string& hint) const {
  return Error{ErrorKind::Parse, where(mark), message, "", hint};
}

Error Source::error_at_key(const YAML::Mark& mark, const std::string& message, const std::string& hint) const {
  Error e = error_at_unquoted(mark, message, hint);
  if (mark.is_null() || mark.line < 0) return e;
  const std::string_view l = line(mark.line + 1);
  const auto column = static_cast<std::size_t>(std::max(mark.column, 0));
  const auto colon = l.find(':', column);
  if (colon != std::string_view::npos) e.detail = redacted_excerpt(l.substr(0, colon + 1), column);
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
