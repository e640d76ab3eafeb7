#pragma once
// How snapshot changes (envlock/snapshot.hpp, diff_snapshots) are shown: by `envlock snapshot
// diff`, and as the host part of `envlock diff` when both sides are snapshot files.
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "envlock/snapshot.hpp"

namespace envlock::cli {

/// "added", "removed" or "changed".
const char* kind_word(SnapshotChange::Kind k);

/// [{kind, section, name, before, after}] in the given order.
nlohmann::json snapshot_changes_json(const std::vector<SnapshotChange>& changes);

/// One header line per section ("host:") and one line per change ("  + name after",
/// "  - name before", "  ~ name: before -> after"); control characters of any field as \xNN.
void print_snapshot_changes(std::ostream& out, const std::vector<SnapshotChange>& changes);

/// The `### Host (snapshots)` block `envlock diff --format markdown` adds for two snapshot files,
/// in at most `budget` bytes (0: no limit): the lines of print_snapshot_changes() in order (capture,
/// host, then system packages), whole changes only, then a note naming how many were left out
/// and `envlock snapshot diff`, which lists them all. The heading, fence and note are always
/// written, so a budget below them is exceeded (the caller warns).
std::string host_block_markdown(const std::vector<SnapshotChange>& changes, std::size_t budget);

}  // namespace envlock::cli
