// Rendering of snapshot changes (snapshot_render.hpp).
#include "snapshot_render.hpp"

#include <string>

#include "envlock/text.hpp"

namespace envlock::cli {

const char* kind_word(SnapshotChange::Kind k) {
  switch (k) {
    case SnapshotChange::Kind::Added: return "added";
    case SnapshotChange::Kind::Removed: return "removed";
    case SnapshotChange::Kind::Changed: return "changed";
  }
  return "changed";
}

nlohmann::json snapshot_changes_json(const std::vector<SnapshotChange>& changes) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& c : changes) {
    j.push_back({{"kind", kind_word(c.kind)}, {"section", c.section}, {"name", c.name}, {"before", c.before}, {"after", c.after}});
  }
  return j;
}

void print_snapshot_changes(std::ostream& out, const std::vector<SnapshotChange>& changes) {
  std::string section;
  bool first = true;
  for (const auto& c : changes) {
    if (first || c.section != section) {
      section = c.section;
      first = false;
      out << printable(section) << ":\n";
    }
    const std::string name = printable(c.name), before = printable(c.before), after = printable(c.after);
    switch (c.kind) {
      case SnapshotChange::Kind::Added: out << "  + " << name << (after.empty() ? "" : " " + after) << "\n"; break;
      case SnapshotChange::Kind::Removed: out << "  - " << name << (before.empty() ? "" : " " + before) << "\n"; break;
      case SnapshotChange::Kind::Changed: out << "  ~ " << name << ": " << before << " -> " << after << "\n"; break;
    }
  }
}

}  // namespace envlock::cli
