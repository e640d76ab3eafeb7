// envlock snapshot capture|check|deploy|diff|lock — freeze a drifted host, check a target, redeploy,
// compare snapshots, turn a snapshot into a lockfile. Exit codes: 0 ok; 1 failure (or, for check, an
// incompatible target); 2 usage; 3 capture wrote a partial snapshot (problems listed).
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

#include "envlock/package_cache.hpp"
#include "envlock/paths.hpp"
#include "envlock/pip.hpp"
#include "envlock/snapshot.hpp"
#include "envlock/snapshot_deploy.hpp"
#include "envlock/url.hpp"
#include "envlock/work_folder.hpp"
#include "heap.hpp"
#include "lock_input.hpp"
#include "network_options.hpp"
#include "registry.hpp"
#include "snapshot_render.hpp"

namespace envlock::cli {
namespace {

namespace fs = std::filesystem;

nlohmann::json problems_json(const std::vector<CaptureProblem>& problems) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& p : problems) j.push_back({{"where", p.where}, {"message", p.message}});
  return j;
}

// Missing files of an environment, and how many of them belong to conda packages pip replaced
// (pip's uninstall removed what the conda package's RECORD listed: expected, not damage).
struct MissingCount {
  std::size_t all = 0;
  std::size_t of_shadowed = 0;
};
MissingCount count_missing(const CapturedEnvironment& e) {
  std::set<std::string> shadowed;
  for (const auto& p : e.packages)
    if (!p.shadowed_by.empty()) shadowed.insert(p.record.name);
  MissingCount n;
  for (const auto& [pkg, files] : e.drift.missing) {
    n.all += files.size();
    if (shadowed.count(pkg)) n.of_shadowed += files.size();
  }
  return n;
}

// A snapshot file, or the snapshot inside a bundle (FILE.tar.zst, unpacked into a temporary
// folder that is removed again).
Result<Snapshot> read_snapshot(const std::string& file) {
  if (!file.ends_with(".tar.zst")) return Snapshot::read(file);
  auto tmp = WorkFolder::create(fs::temp_directory_path(), "envlock-bundle-");
  if (!tmp) return tmp.error();
  return open_bundle(file, tmp->path());
}

// ----- capture -------------------------------------------------------------------------------

struct CaptureArgs {
  std::string root = "/";
  std::vector<std::string> prefixes;
  std::string output;
  bool include_ids = false;
  bool no_hash = false;
  bool timestamp = false;
  std::string nvidia_smi_xml;
  std::string rpm_qa;
  std::string bundle;
  std::vector<std::string> pkgs_dirs;
};

// Issue 17, point 9: a snapshot names no home folder. An editable or local pip source is written
// `~/…` under the home folder (snapshot_file.cpp) and kept as it is elsewhere; one outside the
// project (the folder of the snapshot file, or the current folder without -o) names a folder of
// this machine: said in a warning, as `envlock lock` says it of a home-folder channel.
void warn_local_sources_outside_project(const Snapshot& snap, const std::string& output) {
  std::error_code ec;
  const fs::path project = (output.empty() ? fs::current_path(ec) : fs::absolute(output, ec).parent_path()).lexically_normal();
  const fs::path home = home_folder();
  for (const auto& env : snap.environments) {
    for (const auto& d : env.pip) {
      if (!d.url.starts_with("file:")) continue;
      const auto path = path_from_file_url(d.url);
      if (!path) continue;
      const fs::path p = fs::path(*path).lexically_normal();
      if (is_under(p, project)) continue;
      const bool in_home = is_under(p, home);
      const std::string shown = in_home ? tilde_path(p, home) : p.string();
      warn("pip package " + d.name + " " + d.version + " (environment " + env.name + ") is " +
           (d.source == PipSource::Editable ? "an editable install of " : "installed from ") + shown +
           ", outside the project (" + tilde_path(project, home) + "): the snapshot records it as " + shown +
           ", which deploy looks for " + (in_home ? "in the home folder of whoever deploys" : "at that path on the target") +
           "; to make the snapshot portable, keep the source in the project folder");
    }
  }
}

int run_capture(const Context& ctx, const CaptureArgs& a) {
  prepare_heap_for_large_inputs();
  if (ctx.json && a.output.empty() && a.bundle.empty()) {
    // Without -o the snapshot goes to standard output, which --json gives to the summary.
    return report_error(ctx, Error{ErrorKind::Usage, "--json", "--json prints the capture's summary; the snapshot itself needs -o FILE", "",
                                   "envlock snapshot capture -o host.yaml --json"});
  }
  // Where the outputs go is checked before the host is read: a bundle is written last, after
  // minutes of re-packing.
  for (const std::string* out : {&a.output, &a.bundle}) {
    if (out->empty()) continue;
    if (auto target = output_file_target(*out); !target) return report_error(ctx, target.error());
  }
  Host seam = fs::path(a.root) == fs::path("/") ? Host::system() : Host::tree(a.root);
  if (!fs::is_directory(seam.root)) {
    // What is (not) at the named path: exit 1, as for a -p that does not exist (docs/cli.md).
    return report_error(ctx, Error{ErrorKind::Io, a.root, fs::exists(a.root) ? "--root is not a folder" : "--root does not exist", "",
                                   "pass the folder that holds the host's /"});
  }
  CaptureOptions opt;
  for (const auto& p : a.prefixes) {
    fs::path pp(p);
    if (pp.is_relative()) {
      if (!seam.live) {
        return report_error(ctx, Error{ErrorKind::Usage, p, "a prefix inside --root must be an absolute host path", "",
                                       "write it as the host sees it, e.g. /opt/conda/envs/train"});
      }
      pp = fs::absolute(pp);
    }
    opt.prefixes.push_back(pp.lexically_normal());
  }
  opt.include_ids = a.include_ids;
  opt.hash_files = !a.no_hash;
  if (!a.nvidia_smi_xml.empty()) opt.command_outputs["nvidia-smi"] = a.nvidia_smi_xml;
  if (!a.rpm_qa.empty()) opt.command_outputs["rpm"] = a.rpm_qa;
  // A saved output the user named is read on this machine; one that cannot be read is an error,
  // not a problem of the host (a partial capture that silently lacks the GPUs or the rpm list).
  for (const auto& [option, file] : {std::pair{"--nvidia-smi-xml", a.nvidia_smi_xml}, std::pair{"--rpm-qa", a.rpm_qa}}) {
    if (file.empty()) continue;
    std::error_code ec;
    const bool regular = fs::is_regular_file(file, ec);
    if (!regular || ::access(file.c_str(), R_OK) != 0) {
      return report_error(ctx, Error{ErrorKind::Io, file,
                                     std::string(option) + ": " + (fs::exists(file, ec) ? (regular ? "cannot read the file" : "not a file") : "no such file"),
                                     "", "pass a saved output on this machine, or leave the option out"});
    }
  }
  // The named rpm list is what is recorded, also on a host with dpkg: say what is not read.
  if (!a.rpm_qa.empty() && seam.resolve("/var/lib/dpkg/status")) {
    warn("--rpm-qa " + a.rpm_qa + ": the system packages are recorded from this file; the host's /var/lib/dpkg/status is not read");
  }
  if (a.timestamp) {
    char buf[32];
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    opt.timestamp = buf;
  }
  // A named prefix must be a conda prefix (a conda-meta/ folder): refused before anything is
  // captured or written, so a typo never yields a snapshot of zero environments.
  // Under --root a host path is looked up in the tree (links inside it followed within it, as
  // capture reads it), never on this machine.
  for (const auto& pp : opt.prefixes) {
    const auto real = seam.resolve(pp);
    std::error_code ec;
    if (!real) {
      return report_error(ctx, Error{ErrorKind::Io, pp.string(), seam.live ? "no such prefix" : "no such prefix under --root " + a.root, "",
                                     "check the path given with -p (a conda environment folder)"});
    }
    const auto meta = seam.resolve(pp / "conda-meta");
    if (!meta || !fs::is_directory(*meta, ec)) {
      return report_error(ctx, Error{ErrorKind::Io, pp.string(), "is not a conda prefix (it has no conda-meta/ folder)", "",
                                     "pass the folder of a conda, mamba, pixi or envlock environment with -p"});
    }
  }
  Snapshot snap = capture(seam, opt);
  warn_local_sources_outside_project(snap, a.output);
  if (opt.prefixes.empty() && snap.environments.empty() && !ctx.json) {
    // A host without conda is a snapshot too: its system packages, OS, kernel, ABI, CPU, driver
    // and GPUs are what a team freezes (docs/snapshot.md, "A host without conda").
    std::cerr << "no conda environments found (none listed in ~/.conda/environments.txt and no envs/ folder with a "
                 "conda-meta/ inside): the snapshot holds the host facts only; name environments with -p PREFIX\n";
  }
  if (!a.bundle.empty()) {
    if (!a.bundle.ends_with(".tar.zst")) {
      return report_error(ctx, Error{ErrorKind::Usage, a.bundle, "a bundle's file name ends in .tar.zst", "", "e.g. --bundle host.tar.zst"});
    }
    BundleOptions bo;
    for (const auto& d : a.pkgs_dirs) bo.package_dirs.emplace_back(d);
    if (a.pkgs_dirs.empty()) {
      if (auto ds = default_package_cache_dirs()) bo.package_dirs = *ds;  // ENVLOCK_PKGS_DIRS: every folder
    }
    auto b = write_bundle(seam, snap, a.bundle, bo);
    if (!b) return report_error(ctx, b.error());
    // -o gets the capture as it is (byte-identical to one without --bundle, deployable from the
    // live prefix); only the bundle's own snapshot.yaml describes its re-packed archives and its
    // redacted pip files.
    if (!ctx.json) {
      std::cerr << "wrote bundle " << a.bundle << ": " << b->archives << " package archives, " << b->repacked.size()
                << " re-packed from installed files, " << b->pip_files << " pip files\n";
      for (const auto& r : b->repacked) std::cerr << "  re-packed (archive gone): " << r << "\n";
    }
  }
  if (!a.output.empty()) {
    if (auto st = snap.write(a.output); !st) return report_error(ctx, st.error());
  } else if (!ctx.json && a.bundle.empty()) {
    std::cout << snap.to_yaml();
  }
  if (ctx.json) {
    nlohmann::json j;
    j["output"] = a.output;
    j["complete"] = snap.complete();
    j["problems"] = problems_json(snap.problems);
    j["environments"] = nlohmann::json::array();
    for (const auto& e : snap.environments) {
      const MissingCount missing = count_missing(e);
      j["environments"].push_back({{"name", e.name},
                                   {"prefix", e.prefix},
                                   {"platform", e.platform},
                                   {"packages", e.packages.size()},
                                   {"pip", e.pip.size()},
                                   {"modified_files", e.drift.modified.size()},
                                   {"unowned_files", e.drift.unowned.size()},
                                   {"missing_files", missing.all},
                                   {"missing_files_of_shadowed", missing.of_shadowed}});
    }
    std::cout << json_text(j) << "\n";
  } else {
    for (const auto& e : snap.environments) {
      const MissingCount missing = count_missing(e);
      const auto shadowed = static_cast<std::size_t>(
          std::count_if(e.packages.begin(), e.packages.end(), [](const CapturedPackage& p) { return !p.shadowed_by.empty(); }));
      std::cerr << "captured " << e.name << " (" << e.prefix << "): " << e.packages.size() << " conda packages"
                << (shadowed ? " (" + std::to_string(shadowed) + " shadowed by pip)" : std::string()) << ", " << e.pip.size()
                << " pip distributions; drift: " << e.drift.modified.size() << " modified, " << e.drift.unowned.size()
                << " unowned, " << missing.all << " missing files"
                << (missing.of_shadowed ? " (" + std::to_string(missing.of_shadowed) + " of them removed by pip as it replaced a conda package)"
                                        : std::string())
                << "\n";
    }
  }
  if (!snap.complete()) {
    warn("the snapshot is PARTIAL: " + std::to_string(snap.problems.size()) + " fact(s) could not be captured:");
    for (const auto& p : snap.problems) std::cerr << "  " << p.where << ": " << p.message << "\n";
    return 3;
  }
  return 0;
}

// ----- check ------------------------------------------------------------------------------------

int run_check(const Context& ctx, const std::string& file, const std::string& env_name) {
  auto snap = read_snapshot(file);
  if (!snap) return report_error(ctx, snap.error());
  Host seam = Host::system();
  std::vector<CaptureProblem> problems;
  const HostFacts target = capture_host_facts(seam, {}, problems);
  nlohmann::json j = nlohmann::json::array();
  bool any = false, matched = false;
  for (const auto& env : snap->environments) {
    if (!env_name.empty() && env.name != env_name) continue;
    matched = true;
    const auto failed = check_compatibility(*snap, env, target);
    any = any || !failed.empty();
    nlohmann::json fj = nlohmann::json::array();
    for (const auto& f : failed) fj.push_back({{"requirement", f.requirement}, {"needed_by", f.needed_by}, {"target_has", f.target_has}});
    j.push_back({{"environment", env.name}, {"compatible", failed.empty()}, {"failed", fj}});
    if (!ctx.json) {
      std::cout << env.name << ": " << (failed.empty() ? "this host can run it" : "this host cannot run it") << "\n";
      for (const auto& f : failed) std::cout << "  - " << f.to_string() << "\n";
    }
  }
  if (snap->environments.empty()) {
    return report_error(ctx, Error{ErrorKind::Usage, file, "the snapshot holds no conda environment (host facts only): nothing to check", "",
                                   "capture the environments with `envlock snapshot capture -p PREFIX`"});
  }
  if (!matched) {
    return report_error(ctx, Error{ErrorKind::Usage, file, "no environment named '" + env_name + "' in the snapshot", "",
                                   "list them with `envlock snapshot check " + file + "`"});
  }
  if (ctx.json) std::cout << json_text(j) << "\n";
  return any ? 1 : 0;
}

// ----- deploy -----------------------------------------------------------------------------------

struct DeployArgs {
  std::string file;
  std::string prefix;
  std::string env;
  std::string pip_source;
  std::string pkgs_dir;
  bool without_pip = false;
  bool skip_missing_sources = false;
  bool allow_partial = false;
};

int run_deploy(const Context& ctx, const DeployArgs& a) {
  // A bundle is unpacked beside the new prefix (same filesystem) and removed afterwards.
  const fs::path prefix = fs::absolute(a.prefix);
  const bool bundle = a.file.ends_with(".tar.zst");
  // `.<name>.envlock-bundle-<pid>`; one a killed deploy left is removed (work_folder.hpp).
  std::optional<WorkFolder> work;
  fs::path unpacked;
  Result<Snapshot> snap = Error{ErrorKind::Usage, a.file, "unread", "", ""};
  if (bundle) {
    std::error_code ec;
    fs::create_directories(prefix.parent_path(), ec);  // as deploy makes the prefix's folder
    auto w = WorkFolder::create(prefix.parent_path(), "." + prefix.filename().string() + ".envlock-bundle-");
    if (!w) return report_error(ctx, w.error());
    work.emplace(std::move(w).value());
    unpacked = work->path();
    snap = open_bundle(a.file, unpacked);
  } else {
    snap = Snapshot::read(a.file);
  }
  if (!snap) return report_error(ctx, snap.error());
  if (!snap->complete()) warn("the snapshot is partial: what was not captured is not deployed");
  Host seam = Host::system();
  std::vector<CaptureProblem> problems;
  const HostFacts target = capture_host_facts(seam, {}, problems);
  DeployOptions opt;
  opt.environment = a.env;
  opt.pip_source = a.pip_source;
  opt.package_cache = a.pkgs_dir;
  opt.without_pip = a.without_pip;
  opt.skip_missing_sources = a.skip_missing_sources;
  opt.allow_partial = a.allow_partial;
  if (bundle) {
    opt.bundle_dir = unpacked;
    opt.bundle_name = a.file;
  }
  // History names the file as given; its bytes are the generation's lockfile (a snapshot reads
  // as one).
  opt.snapshot_name = fs::path(a.file).filename().string();
  if (std::ifstream in(bundle ? unpacked / "snapshot.yaml" : fs::path(a.file), std::ios::binary); in)
    opt.snapshot_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  auto report = deploy_snapshot(*snap, prefix, target, opt);
  if (!report) return report_error(ctx, report.error());
  for (const auto& w : report->warnings) warn(w);
  if (ctx.json) {
    std::cout << json_text({{"environment", report->environment},
                            {"prefix", fs::absolute(a.prefix).string()},
                            {"installed", report->installed},
                            {"pip_restored", report->pip_restored},
                            {"checklist", report->checklist},
                            {"generation", report->generation},
                            {"previous", report->previous == 0 ? nlohmann::json(nullptr) : nlohmann::json(report->previous)},
                            {"warnings", report->warnings}})
              << "\n";
    return 0;
  }
  std::cout << "deployed " << report->environment << " into " << fs::absolute(a.prefix).string() << ": " << report->installed.size()
            << " conda packages, " << report->pip_restored.size() << " pip distributions\n";
  if (report->previous != 0)
    std::cout << terminal_text("the environment it replaced is kept as generation " + std::to_string(report->previous) +
                               ": envlock rollback -p " + fs::absolute(a.prefix).string() + " returns to it")
              << "\n";
  if (!report->checklist.empty()) {
    std::cout << "to do by hand (envlock never installs system packages or drivers):\n";
    for (const auto& line : report->checklist) std::cout << "  [ ] " << line << "\n";
  }
  return 0;
}

// ----- diff -------------------------------------------------------------------------------------

int run_diff(const Context& ctx, const std::string& a, const std::string& b) {
  auto sa = read_snapshot(a);
  if (!sa) return report_error(ctx, sa.error());
  auto sb = read_snapshot(b);
  if (!sb) return report_error(ctx, sb.error());
  // The packages as `envlock diff` compares the two files' lockfile parts (envlock.lock fields).
  const auto changes = diff_snapshots(*sa, *sb, format_recorded_fields(FormatInfo{}));
  if (ctx.json) {
    std::cout << json_text(snapshot_changes_json(changes)) << "\n";
    return 0;
  }
  if (changes.empty()) {
    std::cout << "no differences\n";
    return 0;
  }
  print_snapshot_changes(std::cout, changes);
  return 0;
}

// ----- lock -------------------------------------------------------------------------------------

int run_lock(const Context& ctx, const std::string& file, const std::string& output) {
  auto snap = read_snapshot(file);
  if (!snap) return report_error(ctx, snap.error());
  if (!snap->complete()) {
    warn("the snapshot is partial (" + std::to_string(snap->problems.size()) + " problem(s)); the lockfile holds what it captured");
  }
  const Lockfile lock = to_lockfile(*snap, ShadowedRecords::Kept);
  if (auto st = lock.write(output); !st) return report_error(ctx, st.error());
  std::size_t packages = 0, pip = 0;  // conda packages and pip distributions, counted apart
  for (const auto& [name, env] : lock.environments) {
    for (const auto& [plat, lp] : env.platforms) {
      packages += lp.packages.size();
      pip += lp.pip.size();
    }
  }
  if (ctx.json) {
    std::cout << json_text({{"output", output}, {"environments", lock.environments.size()}, {"packages", packages}, {"pip", pip}})
              << "\n";
  } else {
    std::cerr << "wrote " << output << ": " << lock.environments.size() << " environment(s), " << packages << " conda package(s), " << pip
              << " pip package(s)\n";
  }
  return 0;
}

void setup(CLI::App& sub, Context& ctx) {
  sub.require_subcommand(1);

  auto* cap = sub.add_subcommand("capture", "record this host (or a host tree) exactly: conda prefixes, pip, drift, system facts");
  cap->fallthrough();
  static CaptureArgs ca;
  cap->add_option("--root", ca.root, "read a host tree mounted at DIR instead of this machine")->capture_default_str();
  cap->add_option("-p,--prefix", ca.prefixes, "capture these prefixes (default: ~/.conda/environments.txt and envs folders)");
  cap->add_option("-o,--output", ca.output, "write the snapshot here (default: standard output)");
  cap->add_flag("--include-ids", ca.include_ids, "record GPU UUIDs");
  cap->add_flag("--no-hash", ca.no_hash, "compare file sizes only (faster; modified files of equal size go unnoticed)");
  cap->add_flag("--timestamp", ca.timestamp, "record the capture time (makes the file differ between captures)");
  cap->add_option("--nvidia-smi-xml", ca.nvidia_smi_xml, "a saved `nvidia-smi -q -x` output to read instead of running it");
  cap->add_option("--rpm-qa", ca.rpm_qa, "a saved `rpm -qa --queryformat ...` output (see docs/snapshot.md)");
  cap->add_option("--bundle", ca.bundle,
                  "also write FILE.tar.zst: the snapshot, every package archive (re-packed when gone) and the pip files, "
                  "for an offline deploy");
  cap->add_option("--pkgs-dir", ca.pkgs_dirs, "where to look for package archives first (default: the envlock package cache)");
  cap->callback([&ctx] { ctx.exit_code = run_capture(ctx, ca); });

  auto* chk = sub.add_subcommand("check", "can this host run a snapshot? every failed requirement is named");
  chk->fallthrough();
  static std::string check_file, check_env;
  chk->add_option("SNAPSHOT", check_file, "the snapshot file (or a bundle, .tar.zst)")->required();
  chk->add_option("-e,--env", check_env, "only this environment");
  chk->callback([&ctx] { ctx.exit_code = run_check(ctx, check_file, check_env); });

  auto* dep = sub.add_subcommand("deploy", "bring a captured environment up in a prefix, without solving");
  dep->fallthrough();
  static DeployArgs da;
  dep->add_option("SNAPSHOT", da.file, "the snapshot file, or a bundle (.tar.zst: deployed without network)")->required();
  dep->add_option("-p,--prefix", da.prefix, "the prefix: new, empty, or an environment envlock made (kept as a generation)")->required();
  dep->add_option("-e,--env", da.env, "the environment to deploy (needed when the snapshot holds several)");
  dep->add_option("--pip-source", da.pip_source, "where the captured prefix's pip files are (default: its recorded path)");
  dep->add_option("--pkgs-dir", da.pkgs_dir, "package cache folder (default: $ENVLOCK_PKGS_DIR or the user cache)");
  dep->add_flag("--without-pip", da.without_pip, "deploy the conda packages only; pip installs are listed to do by hand");
  dep->add_flag("--skip-missing-sources", da.skip_missing_sources,
                "leave out pip installs whose local source (editable or path) is not on this host; each is listed to do by hand");
  dep->add_flag("--allow-partial", da.allow_partial,
                "deploy a partial snapshot even when it lacks packages its environment needs (they are listed to do by hand)");
  add_network_options(*dep);
  dep->callback([&ctx] { ctx.exit_code = run_deploy(ctx, da); });

  auto* dif = sub.add_subcommand("diff", "what changed between two snapshots: packages, pip, drift, host facts");
  dif->fallthrough();
  static std::string diff_a, diff_b;
  dif->add_option("A", diff_a, "the older snapshot")->required();
  dif->add_option("B", diff_b, "the newer snapshot")->required();
  dif->callback([&ctx] { ctx.exit_code = run_diff(ctx, diff_a, diff_b); });

  auto* lck = sub.add_subcommand("lock", "turn a snapshot into an envlock.lock");
  lck->fallthrough();
  static std::string lock_file, lock_out = "envlock.lock";
  lck->add_option("SNAPSHOT", lock_file, "the snapshot file (or a bundle, .tar.zst)")->required();
  auto* lock_out_opt = lck->add_option("-o,--output", lock_out, "the lockfile to write (default: ./envlock.lock, never replaced unless named)")
                           ->capture_default_str();
  lck->callback([&ctx, lock_out_opt] {
    std::error_code ec;
    if (lock_out_opt->count() == 0 && fs::exists(lock_out, ec)) {
      // The default lands in the current folder, often a project with its own lockfile.
      ctx.exit_code = report_error(ctx, Error{ErrorKind::Usage, lock_out, "exists already; `snapshot lock` replaces a lockfile only when -o names it", "",
                                              "pass -o envlock.lock to replace it, or -o another path"});
      return;
    }
    ctx.exit_code = run_lock(ctx, lock_file, lock_out);
  });
}

const RegisterCommand reg{"snapshot", "capture a drifted host, redeploy it, compare snapshots, make a lockfile", &setup};

}  // namespace
}  // namespace envlock::cli
