// conda explicit spec files (`conda list --explicit`, conda-lock's `conda-<platform>.lock`):
//   # platform: linux-64
//   @EXPLICIT
//   https://conda.anaconda.org/conda-forge/linux-64/zlib-1.3.1-hb9d3cd8_2.conda#<md5>
//   https://.../x.conda#sha256:<64 hex>      (conda >= 23.x)
//   https://.../x.conda#<64 hex>             (bare sha256, as rattler writes)
//   # pip requests @ https://files.pythonhosted.org/...whl#sha256=<hex>     (conda-lock)
#include <cctype>
#include <sstream>

#include "envlock/readers.hpp"
#include "envlock/url.hpp"
#include "reader_util.hpp"

namespace envlock {

using namespace readers;

namespace {

Error line_error(const std::string& source, std::size_t line, std::size_t col,
                 const std::string& message, const std::string& text, const std::string& hint) {
  Error e;
  e.kind = ErrorKind::Parse;
  e.where = source + ":" + std::to_string(line) + ":" + std::to_string(col);
  e.message = message;
  e.detail = redacted_excerpt(text, col > 0 ? col - 1 : 0);  // printed without credentials: the caret follows
  e.hint = hint;
  return e;
}

}  // namespace

Result<Lockfile> read_explicit(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string raw;
  std::size_t lineno = 0;
  bool in_body = false;
  std::string platform;
  struct Pending {
    LockedPackage pkg;
    std::string place;
  };
  std::vector<Pending> conda;
  std::vector<std::pair<PipPackage, std::string>> pips;
  while (std::getline(in, raw)) {
    ++lineno;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const std::string line = trim(raw);
    const std::size_t indent = raw.find_first_not_of(" \t") == std::string::npos ? 0 : raw.find_first_not_of(" \t");
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::string body = trim(std::string_view(line).substr(1));
      if (body.starts_with("platform:")) {
        platform = trim(std::string_view(body).substr(9));
      } else if (in_body && body.starts_with("pip ")) {
        // "pip <name> @ <url>#sha256=<hex>"
        std::string rest = trim(std::string_view(body).substr(4));
        auto at = rest.find(" @ ");
        if (at == std::string::npos) {
          return line_error(source, lineno, indent + 1, "pip line without ' @ <url>'", raw,
                            "conda-lock writes pip entries as '# pip <name> @ <url>'");
        }
        PipPackage pip;
        pip.name = ascii_lower(trim(std::string_view(rest).substr(0, at)));
        pip.url = redact_url(trim(std::string_view(rest).substr(at + 3)));
        if (auto pos = pip.url.find("#sha256="); pos != std::string::npos) {
          pip.sha256 = ascii_lower(pip.url.substr(pos + 8));
        }
        // Version from a wheel or sdist file name: name-version-... / name-version.tar.gz
        std::string file = pip.url.substr(0, pip.url.find_first_of("#?"));
        file = percent_decode(file.substr(file.rfind('/') + 1));  // `torch-2.1.2%2Bcu121-...` is `+cu121`
        if (auto dash = file.find('-'); dash != std::string::npos) {
          std::string v = file.substr(dash + 1);
          if (auto d2 = v.find('-'); d2 != std::string::npos) v.resize(d2);
          else if (v.ends_with(".tar.gz")) v.resize(v.size() - 7);
          else if (v.ends_with(".zip")) v.resize(v.size() - 4);
          pip.version = v;
        }
        pips.emplace_back(std::move(pip), source + ":" + std::to_string(lineno));
      }
      continue;
    }
    if (line == "@EXPLICIT") {
      in_body = true;
      continue;
    }
    if (!in_body) {
      return line_error(source, lineno, indent + 1, "text before the '@EXPLICIT' line", raw,
                        "an explicit file has only comments before '@EXPLICIT'");
    }
    if (line.find("://") == std::string::npos && !line.starts_with("file:")) {
      return line_error(source, lineno, indent + 1, "expected a package URL, found '" + line + "'", raw,
                        "every line after '@EXPLICIT' is a package URL (or a comment)");
    }
    LockedPackage pkg;
    std::string url = line;
    if (auto hash = line.find('#'); hash != std::string::npos) {
      url = line.substr(0, hash);
      std::string frag = line.substr(hash + 1);
      const std::size_t col = indent + hash + 2;
      if (frag.starts_with("sha256:")) {
        frag = frag.substr(7);
        if (!is_hex(frag, 64)) {
          return line_error(source, lineno, col + 7, "'sha256:' must be followed by 64 hexadecimal digits",
                            raw, "copy the package's sha256 from its repodata record");
        }
        pkg.sha256 = ascii_lower(frag);
      } else if (is_hex(frag, 64)) {
        pkg.sha256 = ascii_lower(frag);
      } else if (is_hex(frag, 32)) {
        pkg.md5 = ascii_lower(frag);
      } else {
        return line_error(source, lineno, col,
                          "unrecognized hash fragment '#" + frag +
                              "' (expected #<32-hex md5>, #sha256:<64 hex> or #<64-hex sha256>)",
                          raw, "fix or remove the fragment");
      }
    }
    pkg.url = url;
    std::string path = url.substr(0, url.find('?'));
    if (!path.ends_with(".conda") && !path.ends_with(".tar.bz2")) {
      return line_error(source, lineno, indent + 1,
                        "'" + redact_url(url) + "' is not a conda package archive (.conda or .tar.bz2)",
                        raw, "explicit files list package archive URLs");
    }
    const std::string place = source + ":" + std::to_string(lineno);
    if (auto st = complete_record_from_url(pkg, place); !st) return st.error();
    conda.push_back({std::move(pkg), place});
  }
  if (!in_body) {
    Error e;
    e.kind = ErrorKind::Parse;
    e.where = source;
    e.message = "no '@EXPLICIT' line found";
    e.hint = "explicit files list package URLs after a line '@EXPLICIT'";
    return e;
  }
  if (platform.empty()) {
    for (const auto& p : conda) {
      if (!p.pkg.subdir.empty() && p.pkg.subdir != "noarch") {
        platform = p.pkg.subdir;
        break;
      }
    }
    if (platform.empty()) platform = "noarch";
  }
  Lockfile lock;
  auto& env = lock.environments["default"];
  env.name = "default";
  auto& plat = env.platforms[platform];
  plat.platform = platform;
  DuplicateIndex index;
  for (auto& p : conda) {
    if (std::find(plat.channels.begin(), plat.channels.end(), p.pkg.channel) == plat.channels.end() &&
        !p.pkg.channel.empty()) {
      plat.channels.push_back(p.pkg.channel);
    }
    if (auto st = add_package(lock, index, "default", platform, platform, std::move(p.pkg), p.place); !st) {
      return st.error();
    }
  }
  for (auto& [pip, place] : pips) {
    if (auto st = add_pip(lock, index, "default", platform, platform, std::move(pip), place); !st) {
      return st.error();
    }
  }
  sort_lockfile(lock);
  return lock;
}

}  // namespace envlock
