// envlock diff OLD NEW — what a lockfile change really does (docs/review.md).
// Exit codes: 0 no change of a --fail-on kind (or no --fail-on), 1 such a change exists,
// 2 an input cannot be read or the options are wrong.
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>

#include "envlock/diff.hpp"
#include "envlock/snapshot.hpp"
#include "lock_input.hpp"
#include "heap.hpp"
#include "registry.hpp"
#include "snapshot_render.hpp"

namespace envlock::cli {
namespace {

struct DiffOptions {
  std::string old_arg;
  std::string new_arg;
  std::string format = "text";
  std::string fail_on;
  bool fail_on_given = false;  ///< `--fail-on ""` (an empty CI variable) is a usage error, not "off"
};

int fail(const Context& ctx, const Error& e) {
  report_error(ctx, e);
  return 2;
}

int run_diff(const Context& ctx, const DiffOptions& opt) {
  prepare_heap_for_large_inputs();
  std::string format = ctx.json ? "json" : opt.format;
  std::set<ChangeKind> fail_kinds;
  if (opt.fail_on_given) {
    auto k = parse_fail_on(opt.fail_on);
    if (!k) return fail(ctx, k.error());
    fail_kinds = std::move(k).value();
  }
  if (opt.old_arg == "-" && opt.new_arg == "-") {
    return fail(ctx, Error{ErrorKind::Usage, "OLD NEW", "only one side can be read from standard input",
                           "", "name the other side as a file, REV:PATH or prefix"});
  }
  // The two sides are read at the same time (reading is most of a diff's time); an error of the
  // old side is still the one reported first.
  auto new_reading = std::async(std::launch::async, [&opt] { return read_lock_input(opt.new_arg); });
  auto old_in = read_lock_input(opt.old_arg);
  auto new_in = new_reading.get();
  if (!old_in) return fail(ctx, old_in.error());
  if (!new_in) return fail(ctx, new_in.error());
  for (const auto& w : old_in->read.warnings) warn(w);
  for (const auto& w : new_in->read.warnings) warn(w);

  const LockDiff diff = diff_lockfiles(old_in->read.lockfile, new_in->read.lockfile);
  DiffLabels labels{old_in->label, new_in->label, old_in->read.format.to_string(),
                    new_in->read.format.to_string()};
  // Two snapshots: their host facts too (capture completeness, host, system packages), as
  // `envlock snapshot diff` shows them; the packages are the lockfile diff above.
  std::vector<SnapshotChange> host;
  if (!old_in->snapshot_text.empty() && !new_in->snapshot_text.empty()) {
    auto a = Snapshot::parse(old_in->snapshot_text, old_in->label);
    if (!a) return fail(ctx, a.error());
    auto b = Snapshot::parse(new_in->snapshot_text, new_in->label);
    if (!b) return fail(ctx, b.error());
    for (auto& c : diff_snapshots(*a, *b)) {
      if (c.section == "capture" || c.section == "host" || c.section == "system") host.push_back(std::move(c));
    }
  }
  if (format == "json") {
    auto j = diff_to_json(diff, labels);
    if (!old_in->snapshot_text.empty() && !new_in->snapshot_text.empty()) j["host_changes"] = snapshot_changes_json(host);
    std::cout << json_text(j) << "\n";
  } else if (format == "markdown") {
    std::cout << render_markdown(diff, labels);
    if (!host.empty()) {
      std::cout << "\n### Host (snapshots)\n\n```text\n";
      print_snapshot_changes(std::cout, host);
      std::cout << "```\n";
    }
  } else {
    std::cout << render_text(diff, labels, ctx.color);
    if (!host.empty()) {
      std::cout << "\nhost facts of the two snapshots (" << host.size() << (host.size() == 1 ? " change" : " changes") << "):\n";
      print_snapshot_changes(std::cout, host);
    }
  }
  std::cout.flush();
  if (!fail_kinds.empty() && diff.has_any(fail_kinds)) {
    std::string found;
    for (ChangeKind k : all_change_kinds()) {
      if (!fail_kinds.contains(k)) continue;
      auto it = diff.counts_any.find(k);
      if (it == diff.counts_any.end() || it->second == 0) continue;
      found += (found.empty() ? "" : ", ") + std::to_string(it->second) + " " + std::string(change_kind_name(k));
    }
    std::cerr << "envlock diff: failing on " << found << " (--fail-on " << opt.fail_on << ")\n";
    return 1;
  }
  return 0;
}

void setup(CLI::App& sub, Context& ctx) {
  auto opt = std::make_shared<DiffOptions>();
  sub.add_option("OLD", opt->old_arg,
                 "old side: lockfile, '-' for stdin, REV:PATH (git show), or environment prefix")
      ->required();
  sub.add_option("NEW", opt->new_arg, "new side: same forms as OLD")->required();
  sub.add_option("--format", opt->format, "output: text (default), markdown (PR comment), json")
      ->check(CLI::IsMember({"text", "markdown", "json"}));
  auto* fail_on = sub.add_option("--fail-on", opt->fail_on,
                 "exit 1 when a change of these kinds exists: 'any' or a comma-separated list of "
                 "added, removed, upgraded, downgraded, rebuilt, variant-switch, channel-changed, "
                 "hash-changed, license-changed, host-floor-raised");
  sub.callback([&ctx, opt, fail_on] {
    opt->fail_on_given = fail_on->count() > 0;
    ctx.exit_code = run_diff(ctx, *opt);
  });
}

const RegisterCommand reg{"diff",
                          "explain a lockfile change per environment and platform (CI gate with --fail-on)",
                          &setup};

}  // namespace
}  // namespace envlock::cli
