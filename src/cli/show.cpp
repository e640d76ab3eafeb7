// envlock show FILE — a normalized, sorted, one-package-per-line view of any lockfile, for
// `git diff` textconv (docs/review.md). Exit codes: 0 ok, 2 the input cannot be read.
#include <iostream>
#include <nlohmann/json.hpp>

#include "envlock/diff.hpp"
#include "envlock/pip.hpp"
#include "envlock/url.hpp"
#include "lock_input.hpp"
#include "registry.hpp"

namespace envlock::cli {
namespace {

int run_show(const Context& ctx, const std::string& arg) {
  // Channels as the file holds them: git's textconv hands show a temporary copy, which must
  // print exactly as the working-tree file does (docs/review.md, "Readable git diff").
  auto in = read_lock_input(arg, LocalChannels::AsWritten);
  if (!in) {
    report_error(ctx, in.error());
    return 2;
  }
  for (const auto& w : in->read.warnings) warn(w);
  const Lockfile& lock = in->read.lockfile;
  // conda-lock's categories (main, dev, extras) decide what `conda-lock install --no-dev` installs;
  // other formats' layer is a label (envlock.lock's base layer) that installs nothing differently.
  const bool categories = in->read.format.format == LockFormat::CondaLock && !in->read.format.by_pixi;
  if (ctx.json) {
    nlohmann::json j;
    j["format"] = in->read.format.to_string();
    j["packages"] = nlohmann::json::array();
    j["platforms"] = nlohmann::json::array();
    for (const auto& [env_name, env] : lock.environments) {
      for (const auto& [key, plat] : env.platforms) {
        // The solve inputs diff compares (shown_platform_fields, as the text view prints them).
        nlohmann::json pj = {{"environment", env_name}, {"platform", key}};
        for (const auto& f : shown_platform_fields()) pj[std::string(f.name)] = f.values(plat);
        if (const auto& b = env.base_lockfile)  // the base lockfile it was locked on (issue 18), as diff compares it
          pj["base_lockfile"] = {{"lockfile", redact_url(b->lockfile)}, {"environment", b->environment}, {"sha256", b->sha256}};
        j["platforms"].push_back(std::move(pj));
        for (const auto& p : plat.packages) {
          j["packages"].push_back({{"environment", env_name}, {"platform", key}, {"source", "conda"},
                                   {"name", p.name}, {"version", p.version.to_string()},
                                   {"build", p.build}, {"channel", p.channel}, {"url", redact_url(p.url)},
                                   {"sha256", p.sha256}, {"md5", p.md5}, {"build_number", p.build_number},
                                   {"depends", p.depends}, {"constrains", p.constrains},
                                   {"track_features", p.track_features},
                                   {"category", categories ? nlohmann::json(p.layer) : nlohmann::json(nullptr)}});
          // The other fields diff compares (envlock/diff.hpp, shown_record_fields).
          auto& pj_out = j["packages"].back();
          pj_out["file_name"] = p.file_name;
          pj_out["subdir"] = p.subdir;
          pj_out["noarch"] = p.noarch == NoArchKind::Python ? "python" : p.noarch == NoArchKind::Generic ? "generic" : "";
          pj_out["python_site_packages_path"] = p.python_site_packages_path;
          pj_out["size"] = p.size ? nlohmann::json(*p.size) : nlohmann::json(nullptr);
          pj_out["license"] = p.license;
          pj_out["features"] = split_features(p.features);
        }
        for (const auto& p : plat.pip) {
          // A pip line that names no project (`-e .`) is named by its text, as in the text view; the
          // other fields diff compares (shown_pip_fields) are keys of their own.
          j["packages"].push_back({{"environment", env_name}, {"platform", key}, {"source", "pypi"},
                                   {"name", p.name.empty() ? redact_text(p.requirement) : p.name},
                                   {"version", p.version}, {"build", ""}, {"channel", ""},
                                   {"url", redact_url(p.url)}, {"sha256", p.sha256}, {"md5", ""},
                                   {"pip_source", pip_source_info(p).to_string()}, {"editable", p.editable},
                                   {"requirement", redact_text(p.requirement)},
                                   {"requires_python", p.requires_python}, {"requires_dist", p.requires_dist}});
          auto& pip_out = j["packages"].back();  // a pinned wheel's record (issue 20)
          pip_out["file_name"] = p.file_name;
          pip_out["size"] = p.size ? nlohmann::json(*p.size) : nlohmann::json(nullptr);
          pip_out["index"] = redact_url(p.index);
          pip_out["required_by"] = p.required_by;
        }
      }
    }
    std::cout << json_text(j) << "\n";
    return 0;
  }
  std::cout << render_show(lock, categories);
  return 0;
}

void setup(CLI::App& sub, Context& ctx) {
  auto file = std::make_shared<std::string>();
  sub.add_option("FILE", *file, "lockfile, '-' for stdin, REV:PATH, or environment prefix")->required();
  sub.callback([&ctx, file] { ctx.exit_code = exit_2_when_out_of_memory(ctx, *file, [&] { return run_show(ctx, *file); }); });
}

const RegisterCommand reg{"show", "print a lockfile as sorted lines, one package each (git textconv)",
                          &setup};

}  // namespace
}  // namespace envlock::cli
