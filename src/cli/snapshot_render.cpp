// Rendering of snapshot changes (snapshot_render.hpp).
#include "snapshot_render.hpp"

#include <string>

#include "envlock/paths.hpp"
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
    // No home paths (docs/snapshot.md): a prefix or pip source under it as `~/…`.
    const auto home = home_folder();
    j.push_back({{"kind", kind_word(c.kind)}, {"section", c.section}, {"name", tilde_paths_in(c.name, home)},
                 {"before", tilde_paths_in(c.before, home)}, {"after", tilde_paths_in(c.after, home)}});
  }
  return j;
}

namespace {

// The lines of change `i` (its section's header line first when the section starts there).
std::string change_lines(const std::vector<SnapshotChange>& changes, std::size_t i) {
  const auto& c = changes[i];
  std::string out;
  if (i == 0 || c.section != changes[i - 1].section) out += printable(c.section) + ":\n";
  // No home paths (docs/snapshot.md): a prefix or pip source under it as `~/…`, as `envlock diff`
  // prints a channel under it.
  const auto home = home_folder();
  const std::string name = printable(tilde_paths_in(c.name, home)), before = printable(tilde_paths_in(c.before, home)),
                    after = printable(tilde_paths_in(c.after, home));
  switch (c.kind) {
    case SnapshotChange::Kind::Added: out += "  + " + name + (after.empty() ? "" : " " + after) + "\n"; break;
    case SnapshotChange::Kind::Removed: out += "  - " + name + (before.empty() ? "" : " " + before) + "\n"; break;
    case SnapshotChange::Kind::Changed: out += "  ~ " + name + ": " + before + " -> " + after + "\n"; break;
  }
  return out;
}

}  // namespace

void print_snapshot_changes(std::ostream& out, const std::vector<SnapshotChange>& changes) {
  for (std::size_t i = 0; i < changes.size(); ++i) out << change_lines(changes, i);
}

std::string host_block_markdown(const std::vector<SnapshotChange>& changes, std::size_t budget) {
  const std::string head = "\n### Host (snapshots)\n\n```text\n", fence = "```\n";
  auto note = [](std::size_t left) {
    return "\n_" + std::to_string(left) + (left == 1 ? " more host change is" : " more host changes are") +
           " left out to fit --max-bytes: `envlock snapshot diff OLD NEW` lists them all._\n";
  };
  std::string body;
  std::size_t shown = 0;
  for (; shown < changes.size(); ++shown) {
    const std::string piece = change_lines(changes, shown);
    const std::size_t left_after = changes.size() - shown - 1;
    const std::size_t need = head.size() + body.size() + piece.size() + fence.size() + (left_after ? note(left_after).size() : 0);
    if (budget != 0 && need > budget) break;
    body += piece;
  }
  std::string out = head + body + fence;
  if (shown < changes.size()) out += note(changes.size() - shown);
  return out;
}

}  // namespace envlock::cli
