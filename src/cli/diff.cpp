// envlock diff OLD NEW — what a lockfile change really does (docs/review.md).
// Exit codes: 0 no change of a --fail-on kind (or no --fail-on), 1 such a change exists,
// 2 an input cannot be read or the options are wrong.
#include <algorithm>
#include <future>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <iostream>
#include <nlohmann/json.hpp>

#include "envlock/diff.hpp"
#include "envlock/snapshot.hpp"
#include "envlock/text.hpp"
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
  std::string environment;     ///< -e ENV: compare this environment only
  std::size_t max_bytes = kMarkdownBudget;  ///< --format markdown budget; 0: none
  bool format_given = false;  ///< --format was on the command line (it must agree with --json)
};

std::string environment_names(const Lockfile& lock) {
  std::string out;
  for (const auto& [name, _] : lock.environments) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none" : out;
}

// The error of a side without environment `name`. Worded as every other command with -e words it
// (export, list, probe, verify --reference, install: conda's EnvironmentLocationNotFound is about
// what exists, so kind incompatible); diff still exits 2 for it, as for every error
// (docs/review.md, "Exit codes").
Error no_such_environment(const Lockfile& lock, const std::string& name, const std::string& label,
                          const std::string& why) {
  return Error{ErrorKind::Incompatible, label, "has no environment '" + name + "'" + (why.empty() ? "" : " (" + why + ")"),
               "environments in it: " + environment_names(lock), "pass one of them with -e"};
}

// Keeps environment `name` of `lock` only; an error naming the side and its environments when it
// has none of that name. A side with one environment is left as it is (lone environments pair
// whatever their names).
Status keep_environment(Lockfile& lock, const std::string& name, const std::string& label, const std::string& why) {
  if (lock.environments.size() <= 1 && !lock.environments.contains(name)) return ok_status();
  auto it = lock.environments.find(name);
  if (it == lock.environments.end()) {
    return no_such_environment(lock, name, label, why);
  }
  LockedEnvironment env = std::move(it->second);
  lock.environments.clear();
  lock.environments.emplace(name, std::move(env));
  return ok_status();
}

// A prefix holds one environment for one platform: the other side is compared on that
// environment (the one the prefix was installed from, conda-meta/envlock, else -e ENV) and that
// platform; a prefix of noarch packages alone takes the other side's platform when it has one.
Status pair_with_prefix(const Lockfile& prefix, Lockfile& other, const std::string& prefix_label,
                        const std::string& other_label, bool env_chosen) {
  if (prefix.environments.size() != 1) return ok_status();
  const auto& [penv, pe] = *prefix.environments.begin();
  if (!env_chosen && other.environments.size() > 1) {
    if (!other.environments.contains(penv)) {
      return Error{ErrorKind::Usage, other_label,
                   "has environments " + environment_names(other) + "; the prefix " + prefix_label +
                       " does not say which one it was installed from",
                   "", "choose one with -e ENV"};
    }
    if (auto st = keep_environment(other, penv, other_label, "the environment of " + prefix_label); !st) return st;
  }
  if (pe.platforms.size() != 1 || other.environments.size() != 1) return ok_status();
  const std::string& plat = pe.platforms.begin()->first;
  auto& oenv = other.environments.begin()->second;
  if (oenv.platforms.contains(plat)) {
    for (auto it = oenv.platforms.begin(); it != oenv.platforms.end();) it = it->first == plat ? std::next(it) : oenv.platforms.erase(it);
  }
  return ok_status();
}

// The noarch platform of a prefix that holds noarch packages only and no envlock metadata is the
// other side's one platform.
void adopt_platform(Lockfile& prefix, const Lockfile& other) {
  if (prefix.environments.size() != 1 || other.environments.size() != 1) return;
  auto& pe = prefix.environments.begin()->second;
  const auto& oe = other.environments.begin()->second;
  if (pe.platforms.size() != 1 || pe.platforms.begin()->first != "noarch" || oe.platforms.size() != 1) return;
  const std::string& plat = oe.platforms.begin()->first;
  if (plat == "noarch") return;
  LockedPlatform p = std::move(pe.platforms.begin()->second);
  p.platform = plat;
  pe.platforms.clear();
  pe.platforms.emplace(plat, std::move(p));
}

// The record fields each format holds (docs/review.md, "Compared fields"): a field is compared
// only when both sides hold it, so a format that leaves it out never shows it as changed.
RecordedFields recorded_fields(const FormatInfo& f) {
  RecordedFields r;  // envlock.lock and prefixes: every conda field
  switch (f.format) {
    case LockFormat::Envlock:
      r.requires_dist = r.requires_python = false;  // unless its pins say so (compared_fields)
      r.pypi_indexes = false;  // unless a platform records them (compared_fields)
      break;
    case LockFormat::CondaMeta:
      r.sha256 = r.pip_hashes = false;
      r.channels = r.virtual_packages = r.pypi_indexes = false;  // a prefix's channels are its records'
      break;
    case LockFormat::PixiLock:
      // pixi.lock 4-7 write depends and constrains of every record and pypi requires_dist /
      // requires_python; build_number and noarch only where the file name does not give them.
      r.noarch = r.build_number = r.python_site_packages_path = false;
      r.virtual_packages = f.version >= 7;  // the `platforms` list of pixi.lock 7
      break;
    case LockFormat::CondaLock:
      // conda-lock (and pixi.lock 1-3): `dependencies` only; `metadata.channels`.
      r.constrains = r.track_features = r.noarch = r.build_number = r.python_site_packages_path = false;
      r.requires_dist = r.requires_python = false;
      r.categories = !f.by_pixi;
      r.virtual_packages = r.pypi_indexes = false;
      break;
    case LockFormat::Explicit:
      r = RecordedFields{false, false, false, false, false, false, false, false};
      r.sha256 = false;  // md5 or sha256 fragments, as the render chose; each line's pip hash is its own
      r.channels = r.virtual_packages = r.pypi_indexes = false;  // channels from the URLs
      break;
  }
  return r;
}

// The fields compared for each side: what its format holds (recorded_fields), and the solve
// inputs (channels, virtual packages, PyPI indexes) only between two files of one format — each
// tool spells them its own way — and never for a snapshot, whose channels come from its records
// and which was never solved (docs/review.md, "Solve inputs").
std::pair<RecordedFields, RecordedFields> compared_fields(const LockInput& a, const LockInput& b) {
  RecordedFields fa = recorded_fields(a.read.format), fb = recorded_fields(b.read.format);
  const bool one_format = a.read.format.format == b.read.format.format && a.read.format.by_pixi == b.read.format.by_pixi;
  // An envlock.lock whose pins carry `file_name` (written by `envlock lock` since issue 20) records
  // their requires_dist and requires_python; an older one, or a snapshot, does not.
  for (auto [in, f] : {std::pair{&a, &fa}, std::pair{&b, &fb}}) {
    if (in->read.format.format != LockFormat::Envlock) continue;
    for (const auto& [env_name, env] : in->read.lockfile.environments)
      for (const auto& [plat, lp] : env.platforms)
        for (const auto& p : lp.pip)
          if (!p.file_name.empty()) f->requires_dist = f->requires_python = true;
  }
  // One whose platforms record `pypi_indexes` (written by `envlock lock` since issue 20 for a
  // platform pinned from an index) holds them; an older one does not, and is not compared on them.
  for (auto [in, f] : {std::pair{&a, &fa}, std::pair{&b, &fb}}) {
    if (in->read.format.format != LockFormat::Envlock) continue;
    for (const auto& [env_name, env] : in->read.lockfile.environments)
      for (const auto& [plat, lp] : env.platforms)
        if (!lp.pypi_indexes.empty()) f->pypi_indexes = true;
  }
  for (auto [in, f] : {std::pair{&a, &fa}, std::pair{&b, &fb}}) {
    if (one_format && in->snapshot_text.empty()) continue;
    f->channels = f->virtual_packages = f->pypi_indexes = false;
  }
  return {fa, fb};
}

// A snapshot's lockfile part leaves out the conda records pip shadowed (its `shadowed:` section
// holds them); they are compared as `snapshot lock` writes them and the prefix still holds them
// (docs/review.md, "pip over conda"), so a snapshot, its lockfile and its prefix read alike.
void add_shadowed_records(Lockfile& lock, const Snapshot& snap) {
  for (const auto& env : snap.environments) {
    auto e = lock.environments.find(env.name);
    if (e == lock.environments.end()) continue;
    auto p = e->second.platforms.find(env.platform);
    if (p == e->second.platforms.end()) continue;
    auto& packages = p->second.packages;
    for (const auto& c : env.packages) {
      if (c.shadowed_by.empty()) continue;
      if (std::any_of(packages.begin(), packages.end(), [&](const LockedPackage& l) { return l.name == c.record.name; }))
        continue;
      LockedPackage l;
      static_cast<RepoDataRecord&>(l) = c.record;
      l.layer = env.name;
      packages.push_back(std::move(l));
    }
    std::sort(packages.begin(), packages.end(), [](const LockedPackage& a, const LockedPackage& b) { return a.name < b.name; });
  }
}

// A project on a base lockfile (issue 18): the base's pins (layer `base:…`) are compared in a
// section of their own, `ENV (base layer)`, so a base change and the project's own changes read
// apart. Applied to both sides for each environment either side builds on a base lockfile.
void split_base_layers(Lockfile& a, Lockfile& b) {
  std::set<std::string> names;
  for (const Lockfile* l : {&a, &b})
    for (const auto& [name, env] : l->environments)
      if (env.base_lockfile) names.insert(name);
  for (Lockfile* l : {&a, &b})
    for (const auto& name : names) {
      auto e = l->environments.find(name);
      if (e == l->environments.end()) continue;
      LockedEnvironment base;
      base.name = name + " (base layer)";
      base.base_lockfile = std::exchange(e->second.base_lockfile, std::nullopt);  // which base: its section's
      for (auto& [platform, lp] : e->second.platforms) {
        LockedPlatform bp = lp;
        bp.pip.clear();
        std::erase_if(bp.packages, [](const LockedPackage& p) { return !p.layer.starts_with("base:"); });
        std::erase_if(lp.packages, [](const LockedPackage& p) { return p.layer.starts_with("base:"); });
        base.platforms.emplace(platform, std::move(bp));
      }
      l->environments.emplace(base.name, std::move(base));
    }
}

int fail(const Context& ctx, const Error& e) {
  report_error(ctx, e);
  return 2;
}

// A note `LABEL OLD -> NEW` whose two sides read the same once shown as written says why they
// differ instead of printing `./wheels -> ./wheels` (attack 23, F18): a relative location is
// compared resolved against each file's folder, as install reads it (a conda channel `./chan`
// and a find-links wheel `./wheels/x.whl` alike), and shown as the file holds it (issue 17
// point 2), so two lockfiles in different folders name another folder in the same text.
std::string same_sides_said(const std::string& note) {
  const std::size_t arrow = note.find(" -> ");
  if (arrow == std::string::npos || note.find(" -> ", arrow + 4) != std::string::npos) return note;
  const std::string left = note.substr(0, arrow), right = note.substr(arrow + 4);
  if (right.empty() || left.size() <= right.size() || !left.ends_with(right) || left[left.size() - right.size() - 1] != ' ')
    return note;
  return left + " in both files, resolved against each file's folder to another location";
}

// The locations of each side as its file holds them (docs/review.md, "Output"): a relative local
// channel is compared resolved (as install reads it) but shown as written (`../channel`, not the
// folder the file was read from), a file:// URL under the home folder as `~/…`. Notes name both
// sides' locations.
void show_locations_as_written(LockDiff& diff, const LockInput& old_in, const LockInput& new_in) {
  const auto old_spelling = [&](const std::string& s) { return old_in.read.lockfile.written_locations(s, old_in.directory); };
  const auto new_spelling = [&](const std::string& s) { return new_in.read.lockfile.written_locations(s, new_in.directory); };
  const auto respell = [](std::optional<PackageSide>& side, const auto& spell) {
    if (!side) return;
    side->channel = spell(side->channel);
    side->url = spell(side->url);
  };
  for (auto& g : diff.groups) {
    for (auto& c : g.changes) {
      respell(c.old_side, old_spelling);
      respell(c.new_side, new_spelling);
      for (auto& n : c.notes) n = same_sides_said(new_spelling(old_spelling(n)));
    }
  }
}

int run_diff(const Context& ctx, const DiffOptions& opt) {
  prepare_heap_for_large_inputs();
  if (ctx.json && opt.format_given && opt.format != "json") {
    // Two output formats asked for: neither is chosen silently (a CI step meant to post markdown
    // must not post JSON).
    return fail(ctx, Error{ErrorKind::Usage, "--format " + opt.format + " --json",
                           "two output formats asked for: --format " + opt.format + " and --json (JSON)", "",
                           "give one of them; --json is the same as --format json"});
  }
  std::string format = ctx.json ? "json" : opt.format;
  std::set<ChangeKind> fail_kinds;
  bool fail_on_host = false;  // `host-changed`: a host fact of two snapshots differs
  if (opt.fail_on_given) {
    auto k = parse_fail_on(opt.fail_on, &fail_on_host);
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
  Lockfile& old_lock = old_in->read.lockfile;
  Lockfile& new_lock = new_in->read.lockfile;
  // Snapshot sides: read whole (shadowed records, and the host facts of two snapshots below).
  std::optional<Snapshot> old_snap, new_snap;
  for (auto [in, snap, lock] : {std::tuple{&*old_in, &old_snap, &old_lock}, std::tuple{&*new_in, &new_snap, &new_lock}}) {
    if (in->snapshot_text.empty()) continue;
    auto s = Snapshot::parse(in->snapshot_text, in->label);
    if (!s) return fail(ctx, s.error());
    add_shadowed_records(*lock, *s);
    *snap = std::move(s).value();
  }
  if (!opt.environment.empty()) {
    // -e names an environment at least one side that names its environments (envlock.lock, a
    // snapshot, pixi.lock; not a prefix, @EXPLICIT file or conda-lock.yml, whose one environment
    // has no name of its own) holds: `-e nosuchenv` of two one-environment lockfiles compared
    // them and said "no changes", where every other command refuses it.
    std::vector<std::pair<const Lockfile*, const std::string*>> named;
    for (auto [in, lock] : {std::pair{&*old_in, &old_lock}, std::pair{&*new_in, &new_lock}})
      if (in->read.format.format == LockFormat::Envlock || in->read.format.format == LockFormat::PixiLock)
        named.emplace_back(lock, &in->label);
    if (!named.empty() && std::none_of(named.begin(), named.end(), [&](const auto& side) {
          return side.first->environments.contains(opt.environment);
        }))
      return fail(ctx, no_such_environment(*named.front().first, opt.environment, *named.front().second, ""));
    for (auto [lock, label] : {std::pair{&old_lock, &old_in->label}, std::pair{&new_lock, &new_in->label}}) {
      if (auto st = keep_environment(*lock, opt.environment, *label, ""); !st) return fail(ctx, st.error());
    }
  }
  const bool old_prefix = old_in->read.format.format == LockFormat::CondaMeta;
  const bool new_prefix = new_in->read.format.format == LockFormat::CondaMeta;
  if (old_prefix != new_prefix) {
    Lockfile& prefix = old_prefix ? old_lock : new_lock;
    Lockfile& other = old_prefix ? new_lock : old_lock;
    auto st = pair_with_prefix(prefix, other, old_prefix ? old_in->label : new_in->label,
                               old_prefix ? new_in->label : old_in->label, !opt.environment.empty());
    if (!st) return fail(ctx, st.error());
  }
  // An @EXPLICIT file is one platform's render of a lockfile (conda-lock render, `envlock export`):
  // against a lockfile of several platforms it is compared on its own platform, as a prefix is,
  // not reported as every other platform removed.
  for (auto [explicit_side, other] : {std::pair{&old_in->read, &new_lock}, std::pair{&new_in->read, &old_lock}}) {
    const Lockfile& e = explicit_side->lockfile;
    if (explicit_side->format.format != LockFormat::Explicit || e.environments.size() != 1 || other->environments.size() != 1)
      continue;
    const auto& eplats = e.environments.begin()->second.platforms;
    auto& oplats = other->environments.begin()->second.platforms;
    if (eplats.size() != 1 || oplats.size() < 2 || !oplats.contains(eplats.begin()->first)) continue;
    std::erase_if(oplats, [&](const auto& kv) { return kv.first != eplats.begin()->first; });
  }
  if (old_prefix) adopt_platform(old_lock, new_lock);
  if (new_prefix) adopt_platform(new_lock, old_lock);

  split_base_layers(old_lock, new_lock);
  const auto [old_fields, new_fields] = compared_fields(*old_in, *new_in);
  LockDiff diff = diff_lockfiles(old_lock, new_lock, old_fields, new_fields);
  show_locations_as_written(diff, *old_in, *new_in);
  DiffLabels labels{old_in->label, new_in->label, old_in->read.format.to_string(),
                    new_in->read.format.to_string()};
  // Two snapshots: their host facts too (capture completeness, host, system packages), as
  // `envlock snapshot diff` shows them; the packages are the lockfile diff above.
  std::vector<SnapshotChange> host;
  if (old_snap && new_snap) {
    for (auto& c : diff_snapshots(*old_snap, *new_snap)) {
      if (c.section == "capture" || c.section == "host" || c.section == "system" || c.section == "system-python")
        host.push_back(std::move(c));
    }
  }
  if (format == "json") {
    auto j = diff_to_json(diff, labels);
    if (old_snap && new_snap) j["host_changes"] = snapshot_changes_json(host);
    std::cout << json_text(j) << "\n";
  } else if (format == "markdown") {
    std::string md = render_markdown(diff, labels, opt.max_bytes);
    // Two snapshots' host block takes what the package diff left of the budget (folded likewise).
    if (!host.empty())
      md += host_block_markdown(host, opt.max_bytes == 0 ? 0 : md.size() < opt.max_bytes ? opt.max_bytes - md.size() : 1);
    // The title, summary line and summary table are never folded: a budget below them is exceeded.
    if (opt.max_bytes != 0 && md.size() > opt.max_bytes)
      warn("the comment takes " + std::to_string(md.size()) + " bytes, more than --max-bytes " +
           std::to_string(opt.max_bytes) + ": its title and " + (diff.empty() ? "'No changes' line " : "summary table ") +
           (host.empty() ? "" : "(and the host block's heading) ") + "are never left out");
    std::cout << md;
  } else {
    std::cout << render_text(diff, labels, ctx.color);
    if (!host.empty()) {
      std::cout << "\nhost facts of the two snapshots (" << host.size() << (host.size() == 1 ? " change" : " changes") << "):\n";
      print_snapshot_changes(std::cout, host);
    }
  }
  std::cout.flush();
  const bool host_fails = fail_on_host && !host.empty();
  if ((!fail_kinds.empty() && diff.has_any(fail_kinds)) || host_fails) {
    // Changes are counted as the summary line counts them (one per package); the kinds after them
    // count a change under its kind and under each of its flags (`variant-switch+metadata-changed`).
    std::size_t changes = 0, by_kind = 0;
    for (const auto& g : diff.groups) {
      for (const auto& c : g.changes) {
        if (std::any_of(fail_kinds.begin(), fail_kinds.end(), [&](ChangeKind k) { return c.has(k); })) ++changes;
      }
    }
    std::string kinds;
    for (ChangeKind k : all_change_kinds()) {
      if (!fail_kinds.contains(k)) continue;
      auto it = diff.counts_any.find(k);
      if (it == diff.counts_any.end() || it->second == 0) continue;
      by_kind += it->second;
      kinds += (kinds.empty() ? "" : ", ") + std::to_string(it->second) + " " + std::string(change_kind_name(k));
    }
    std::string found;
    if (changes != 0) {
      found = std::to_string(changes) + (changes == 1 ? " change (" : " changes (") + kinds +
              (by_kind > changes ? "; a change counts under its kind and each of its flags)" : ")");
    }
    if (host_fails) {
      found += (found.empty() ? "" : " and ") + std::to_string(host.size()) +
               (host.size() == 1 ? " host fact" : " host facts") + " of the two snapshots (host-changed)";
    }
    std::cerr << "envlock diff: failing on " << found << " (--fail-on " << printable(opt.fail_on) << ")\n";
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
  sub.add_option("-e,--environment", opt->environment,
                 "compare this environment only (a prefix is paired with the environment it was installed from)");
  // Decimal digits only: CLI11 reads integers with strtoull(.., 0), so `0x10` would be 16 and
  // `010` 8. A leading '-' is left to the range check, which names the range.
  const CLI::Validator decimal(
      [](std::string& v) -> std::string {
        const std::string_view digits = std::string_view(v).substr(v.starts_with('-') ? 1 : 0);
        if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos) return "";
        return "'" + v.substr(0, 40) + "' is not a whole number of bytes (decimal digits only)";
      },
      "");
  sub.add_option_function<std::string>(
         "--max-bytes", [opt](const std::string& v) { opt->max_bytes = std::stoull(v, nullptr, 10); },
         "--format markdown: fold the least important changes to stay within N bytes (default 65536, "
         "a GitHub comment; 0: no limit)")
      ->type_name("N")
      ->check(decimal)
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 40));
  auto* format = sub.add_option("--format", opt->format, "output: text (default), markdown (PR comment), json")
                     ->check(CLI::IsMember({"text", "markdown", "json"}));
  auto* fail_on = sub.add_option("--fail-on", opt->fail_on,
                 "exit 1 when a change of these kinds exists: 'any' or a comma-separated list of "
                 "added, removed, upgraded, downgraded, rebuilt, variant-switch, channel-changed, "
                 "re-uploaded, hash-changed, license-changed, host-floor-raised, source-changed, "
                 "metadata-changed, inputs-changed (channels, virtual packages, PyPI indexes); and host-changed (a host fact of two snapshots: OS, kernel, driver, glibc...)");
  sub.callback([&ctx, opt, fail_on, format] {
    opt->fail_on_given = fail_on->count() > 0;
    opt->format_given = format->count() > 0;
    ctx.exit_code =
        exit_2_when_out_of_memory(ctx, opt->old_arg + " " + opt->new_arg, [&] { return run_diff(ctx, *opt); });
  });
}

const RegisterCommand reg{"diff",
                          "explain a lockfile change per environment and platform (CI gate with --fail-on)",
                          &setup};

}  // namespace

RecordedFields format_recorded_fields(const FormatInfo& f) {
  RecordedFields r = recorded_fields(f);
  r.channels = r.virtual_packages = r.pypi_indexes = false;  // snapshots: never solved (compared_fields)
  return r;
}

}  // namespace envlock::cli
