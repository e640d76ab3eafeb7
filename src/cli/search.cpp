// envlock search MATCHSPEC [-c CHANNEL...] [--platform P] [--offline] [--json]
// Lists the records of the channels that match a MatchSpec, newest first per name (version, then
// build number, then timestamp), as `micromamba search` does. Channels default to conda-forge;
// the platform defaults to this host's subdir, and noarch is always searched.
// Exit codes: 0 matches found, 1 no match or a channel error, 2 usage error.
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "envlock/manifest.hpp"
#include "envlock/platform.hpp"
#include "envlock/repodata.hpp"
#include "envlock/solver.hpp"
#include "envlock/url.hpp"
#include "registry.hpp"

namespace envlock::cli {
namespace {

struct SearchArgs {
  std::string spec;
  std::vector<std::string> channels;
  std::string platform;
  bool offline = false;
};

nlohmann::json record_json(const RepoDataRecord& r) {
  nlohmann::json j = {{"name", r.name},
                      {"version", r.version.to_string()},
                      {"build", r.build},
                      {"build_number", r.build_number},
                      {"subdir", r.subdir},
                      {"channel", redact_url(r.channel)},
                      {"url", redact_url(r.url)},
                      {"file_name", r.file_name},
                      {"depends", r.depends},
                      {"constrains", r.constrains},
                      {"license", r.license},
                      {"md5", r.md5},
                      {"sha256", r.sha256}};
  j["size"] = r.size ? nlohmann::json(*r.size) : nlohmann::json();
  j["timestamp"] = r.timestamp ? nlohmann::json(*r.timestamp) : nlohmann::json();
  return j;
}

int run_search(const Context& ctx, const SearchArgs& args) {
  auto spec = MatchSpec::parse(args.spec);
  if (!spec) {
    Error e = spec.error();
    e.kind = ErrorKind::Usage;
    return report_error(ctx, e);
  }
  std::string platform = args.platform.empty() ? Platform::host().to_string() : args.platform;
  if (auto p = Platform::parse(platform); !p) {
    Error e = p.error();
    e.kind = ErrorKind::Usage;
    return report_error(ctx, e);
  }
  std::vector<std::string> spellings = args.channels;
  if (spellings.empty()) spellings.push_back(spec->channel ? *spec->channel : "conda-forge");
  std::vector<Channel> channels;
  for (const auto& s : spellings) {
    auto ch = resolve_channel(s, std::filesystem::current_path());
    if (!ch) {
      Error e = ch.error();
      e.kind = ErrorKind::Usage;
      if (e.where.empty()) e.where = "-c " + redact_url(s);
      return report_error(ctx, e);
    }
    channels.push_back(*ch);
  }
  RepodataOptions options;
  options.offline = args.offline;
  options.lazy = true;  // only the names the spec can match are parsed
  auto data = load_repodata(channels, {platform}, options);
  if (!data) {
    Error e = data.error();
    // search has no manifest: its -c directories are relative to the current directory.
    if (e.hint.find("manifest's folder") != std::string::npos)
      e.hint = "check the path given with -c (a relative path is resolved against the current directory)";
    return report_error(ctx, e);
  }
  std::vector<SolverRepo> repos;
  for (std::size_t i = 0; i < data->size(); ++i) {
    const auto& d = (*data)[i];
    repos.push_back({d.channel, d.subdir, static_cast<int>(i), nullptr, d.index.get()});
  }
  // Without -c the channel part of the spec chose the channel above, and its records are all
  // that was loaded. With -c it filters the records as `lock` does (conda's ChannelMatch: a name
  // matches a named channel, a URL its channel; a directory has no name but its file:// URL).
  MatchSpec query = *spec;
  if (args.channels.empty()) query.channel.reset();
  auto found = find_records(repos, query);

  if (ctx.json) {
    nlohmann::json j = {{"query", args.spec}, {"platform", platform}, {"packages", nlohmann::json::array()}};
    for (const auto& c : channels) j["channels"].push_back(c.public_url());
    for (const auto* r : found) j["packages"].push_back(record_json(*r));
    std::cout << json_text(j) << "\n";
  }
  if (found.empty()) {
    std::string names;
    for (const auto& c : channels) names += (names.empty() ? "" : ", ") + c.public_url();
    std::cerr << "error: " << terminal_text("no package matches '" + redact_text(args.spec) + "' in " + names + " (" +
                                            platform + " and noarch)")
              << "\n"
              << (query.channel ? "hint: the spec's channel part must name one of the channels searched (a "
                                  "directory by its file:// URL), or leave it out\n"
                                : "hint: check the name, or search another platform with --platform\n");
    return 1;
  }
  if (ctx.json) return 0;
  // The table shows channel data: names and build strings through terminal_text() (a record's
  // "\e]0;...\a" must not retitle or clear the user's terminal), padded by their escaped width.
  struct Row {
    std::string name, version, build, where;
  };
  std::vector<Row> rows;
  std::size_t wn = 4, wv = 7, wb = 5;
  for (const auto* r : found) {
    rows.push_back({terminal_text(r->name), terminal_text(r->version.to_string()), terminal_text(r->build),
                    terminal_text(redact_url(r->channel) + "/" + r->subdir)});
    wn = std::max(wn, rows.back().name.size());
    wv = std::max(wv, rows.back().version.size());
    wb = std::max(wb, rows.back().build.size());
  }
  std::cout << std::left << std::setw(static_cast<int>(wn)) << "Name"
            << "  " << std::setw(static_cast<int>(wv)) << "Version"
            << "  " << std::setw(static_cast<int>(wb)) << "Build"
            << "  Channel/subdir\n";
  for (const auto& r : rows)
    std::cout << std::left << std::setw(static_cast<int>(wn)) << r.name << "  " << std::setw(static_cast<int>(wv))
              << r.version << "  " << std::setw(static_cast<int>(wb)) << r.build << "  " << r.where << "\n";
  return 0;
}

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<SearchArgs>();
  sub.add_option("spec", args->spec, "a MatchSpec, e.g. 'numpy >=1.26' or 'pytorch 2.* *cuda*'")->required();
  sub.add_option("-c,--channel", args->channels, "channel name, URL or directory (repeatable; default conda-forge)");
  sub.add_option("--platform", args->platform, "subdir to search besides noarch (default: this host's)");
  sub.add_flag("--offline", args->offline, "use cached repodata only");
  sub.callback([&ctx, args] { ctx.exit_code = run_search(ctx, *args); });
}

const RegisterCommand reg{"search", "list the channel records matching a MatchSpec, newest first", &setup};

}  // namespace
}  // namespace envlock::cli
