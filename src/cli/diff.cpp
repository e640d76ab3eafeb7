// envlock diff OLD NEW — what a lockfile change really does (docs/review.md).
// Exit codes: 0 no change of a --fail-on kind (or no --fail-on), 1 such a change exists,
// 2 an input cannot be read or the options are wrong.
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>

#include "envlock/diff.hpp"
#include "lock_input.hpp"
#include "heap.hpp"
#include "registry.hpp"

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
  if (format == "json") {
    std::cout << diff_to_json(diff, labels).dump(2) << "\n";
  } else if (format == "markdown") {
    std::cout << render_markdown(diff, labels);
  } else {
    std::cout << render_text(diff, labels, ctx.color);
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
