// Linking one extracted package: paths.json (or files + has_prefix), relocation, noarch: python.
#include "link.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cerrno>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "envlock/text.hpp"
#include "fs_util.hpp"

namespace envlock::detail {

namespace fs = std::filesystem;

namespace {

Error integrity(const PackageToLink& p, const std::string& message, const std::string& hint = "") {
  return Error{ErrorKind::Integrity, p.record.dist_name(), message, "", hint};
}

/// The refusal of a path-valued field: names the package, the field and the value (escaped).
Error unsafe_field(const PackageToLink& p, const std::string& field, std::string_view value) {
  return Error{ErrorKind::Integrity, p.record.dist_name(),
               field + " \"" + printable(value) + "\" is not a relative path inside the prefix",
               "nothing was installed; the prefix was not touched",
               "refusing a package that would write outside the environment (or into conda-meta/); remove it from "
               "the lockfile or rebuild it"};
}

/// Splits a has_prefix line as shlex would for the simple cases conda-build writes:
/// whitespace-separated tokens, double or single quotes grouping.
std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool in_token = false;
  char quote = 0;
  for (char c : line) {
    if (quote) {
      if (c == quote) quote = 0;
      else cur += c;
    } else if (c == '"' || c == '\'') {
      quote = c;
      in_token = true;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      if (in_token) out.push_back(cur), cur.clear(), in_token = false;
    } else {
      cur += c;
      in_token = true;
    }
  }
  if (in_token) out.push_back(cur);
  return out;
}

Result<std::vector<SourceEntry>> read_paths(const PackageToLink& p) {
  const fs::path info = p.extracted_dir / "info";
  std::vector<SourceEntry> out;
  std::error_code ec;
  if (fs::exists(info / "paths.json", ec)) {
    auto text = read_file(info / "paths.json");
    if (!text) return text.error();
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("paths") || !j["paths"].is_array()) {
      return integrity(p, "info/paths.json is not valid JSON with a \"paths\" list",
                       "the cached package is damaged; delete it from the package cache and retry");
    }
    for (const auto& e : j["paths"]) {
      if (!e.is_object() || !e.contains("_path") || !e["_path"].is_string()) {
        return integrity(p, "info/paths.json has an entry without a \"_path\" string");
      }
      SourceEntry s;
      s.path = e["_path"].get<std::string>();
      // Every field checked for its type: a package is untrusted, and nlohmann's value() throws
      // on a field of the wrong type (tests/fuzz/regressions/package_info).
      auto text_of = [&e](const char* key, const char* fallback) {
        const auto it = e.find(key);
        return it != e.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
      };
      const std::string type = text_of("path_type", "hardlink");
      if (type == "softlink") s.type = PathEntry::Type::SoftLink;
      else if (type == "directory") s.type = PathEntry::Type::Directory;
      else s.type = PathEntry::Type::HardLink;
      if (e.contains("sha256") && e["sha256"].is_string()) s.sha256 = e["sha256"].get<std::string>();
      if (e.contains("size_in_bytes") && e["size_in_bytes"].is_number_unsigned())
        s.size = e["size_in_bytes"].get<std::uint64_t>();
      if (e.contains("prefix_placeholder") && e["prefix_placeholder"].is_string()) {
        s.placeholder = e["prefix_placeholder"].get<std::string>();
        s.mode = text_of("file_mode", "text") == "binary" ? PathEntry::PlaceholderMode::Binary : PathEntry::PlaceholderMode::Text;
      }
      s.no_link = e.contains("no_link") && e["no_link"].is_boolean() && e["no_link"].get<bool>();
      out.push_back(std::move(s));
    }
    return out;
  }
  // Old packages: info/files lists the paths; info/has_prefix names placeholders; info/no_link.
  if (!fs::exists(info / "files", ec)) {
    return integrity(p, "the package has neither info/paths.json nor info/files",
                     "the cached package is damaged; delete it from the package cache and retry");
  }
  std::map<std::string, std::pair<std::string, PathEntry::PlaceholderMode>> prefixed;
  if (fs::exists(info / "has_prefix", ec)) {
    std::ifstream in(info / "has_prefix");
    std::string line;
    while (std::getline(in, line)) {
      auto words = split_words(line);
      if (words.size() == 1) {
        prefixed[words[0]] = {std::string(kDefaultPrefixPlaceholder), PathEntry::PlaceholderMode::Text};
      } else if (words.size() == 3) {
        prefixed[words[2]] = {words[0], words[1] == "binary" ? PathEntry::PlaceholderMode::Binary
                                                             : PathEntry::PlaceholderMode::Text};
      }
    }
  }
  std::set<std::string> no_link;
  if (fs::exists(info / "no_link", ec)) {
    std::ifstream in(info / "no_link");
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) no_link.insert(line);
  }
  std::ifstream in(info / "files");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    SourceEntry s;
    s.path = line;
    if (auto it = prefixed.find(line); it != prefixed.end()) {
      s.placeholder = it->second.first;
      s.mode = it->second.second;
    }
    s.no_link = no_link.count(line) > 0;
    struct stat st {};
    if (::lstat((p.extracted_dir / line).c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      s.type = PathEntry::Type::SoftLink;
    out.push_back(std::move(s));
  }
  return out;
}

Result<NoarchPython> read_link_json(const PackageToLink& p) {
  NoarchPython out;
  out.active = p.record.noarch == NoArchKind::Python;
  const fs::path link = p.extracted_dir / "info" / "link.json";
  std::error_code ec;
  if (!fs::exists(link, ec)) return out;
  auto text = read_file(link);
  if (!text) return text.error();
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return integrity(p, "info/link.json is not valid JSON");
  if (j.contains("noarch") && j["noarch"].is_object()) {
    const auto& n = j["noarch"];
    if (n.contains("type") && n["type"].is_string() && n["type"].get<std::string>() == "python") out.active = true;
    if (n.contains("entry_points") && n["entry_points"].is_array())
      for (const auto& e : n["entry_points"])
        if (e.is_string()) out.entry_points.push_back(e.get<std::string>());
  }
  return out;
}

/// Removes whatever is at `target` (clobbering: an earlier package's file or link; never followed),
/// refusing a directory.
Status clear_destination(const LinkContext& ctx, const std::string& target, LinkResult& result) {
  struct stat st {};
  auto there = ctx.tree->lstat(target, st);
  if (!there) return there.error();
  if (*there) {
    if (S_ISDIR(st.st_mode)) {
      return Error{ErrorKind::Integrity, target, "a file would replace a directory another package installed",
                   "", "two packages in this environment disagree about this path"};
    }
    if (auto s = ctx.tree->unlink(target); !s) return s;
    ctx.tree->forget();  // it may have been a symlink to a folder
    result.clobbered.push_back(target);
  }
  return ok_status();
}

/// Runs `create()` (a Tree operation at `target`: true made, false EEXIST or a reason to copy) and,
/// only when something is already there (EEXIST, rare: another package's file), clears it and
/// tries once more — which spares a stat of every destination.
template <class Create>
Result<bool> create_at(const LinkContext& ctx, const std::string& target, LinkResult& result, const Create& create,
                       const int* err = nullptr) {
  auto made = create();
  if (!made || *made) return made;
  if (err != nullptr && *err != EEXIST) return false;
  if (auto st = clear_destination(ctx, target, result); !st) return st.error();
  return create();
}

/// Where entry `path` of a package goes in the prefix (noarch: python moves two folders).
std::string target_of(const LinkContext& ctx, const NoarchPython& noarch, const std::string& path) {
  if (noarch.active) {
    if (path.starts_with("site-packages/")) return ctx.site_packages + path.substr(13);
    if (path.starts_with("python-scripts/")) return "bin" + path.substr(14);
  }
  return path;
}

}  // namespace

bool safe_relative_path(std::string_view rel) {
  if (rel.empty() || rel.front() == '/') return false;
  std::size_t start = 0;
  while (start <= rel.size()) {
    std::size_t end = rel.find('/', start);
    if (end == std::string_view::npos) end = rel.size();
    std::string_view seg = rel.substr(start, end - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    start = end + 1;
  }
  return rel.find('\0') == std::string_view::npos;
}

bool link_target_inside(std::string_view link, std::string_view target) {
  if (target.empty() || target.front() == '/' || target.find('\0') != std::string_view::npos) return false;
  // Depth of the link's folder, then each component of the target moves down or up.
  long depth = static_cast<long>(std::count(link.begin(), link.end(), '/'));
  std::size_t start = 0;
  while (start <= target.size()) {
    std::size_t end = target.find('/', start);
    if (end == std::string_view::npos) end = target.size();
    const std::string_view seg = target.substr(start, end - start);
    if (seg == "..") {
      if (--depth < 0) return false;
    } else if (!seg.empty() && seg != ".") {
      ++depth;
    }
    start = end + 1;
  }
  return true;
}

namespace {
/// A prefix path a package may write: safe_relative_path() and not in conda-meta/.
bool writable_target(std::string_view rel) {
  return safe_relative_path(rel) && rel != "conda-meta" && !rel.starts_with("conda-meta/");
}
}  // namespace

/// A noarch: python entry point of info/link.json, "name = module:function" (the form conda
/// writes scripts from: conda/core/portability.py; module and function as the Python packaging
/// entry point specification has them: dotted Python names).
struct EntryPoint {
  std::string name, module, function;
};

/// Whether `s` is one or more Python identifiers joined by '.' (ASCII letters, digits and '_',
/// not starting with a digit; bytes >= 0x80 are let through as the UTF-8 of Unicode identifiers).
bool dotted_python_name(std::string_view s) {
  if (s.empty()) return false;
  bool start = true;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '.') {
      if (start) return false;
      start = true;
      continue;
    }
    const bool letter = std::isalpha(u) || c == '_' || u >= 0x80;
    if (!letter && !(std::isdigit(u) && !start)) return false;
    start = false;
  }
  return !start;
}

/// Whether a part of the dotted name `s` is a Python keyword (`import:main` would be written as
/// `from import import main`, a script that cannot run).
bool has_python_keyword(std::string_view s) {
  static const std::set<std::string_view> kKeywords = {
      "False", "None",   "True",    "and",      "as",   "assert", "async", "await",  "break",
      "class", "continue", "def",   "del",      "elif", "else",   "except", "finally", "for",
      "from",  "global", "if",      "import",   "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",   "raise",   "return",   "try",  "while",  "with",  "yield"};
  for (std::size_t start = 0;;) {
    const auto dot = s.find('.', start);
    if (kKeywords.count(s.substr(start, dot - start))) return true;
    if (dot == std::string_view::npos) return false;
    start = dot + 1;
  }
}

/// The entry point `spec` of package `p`, or why it is refused: a name that is not one file name
/// of bin/ (a path, a control character, longer than NAME_MAX), or a target that is not
/// `module:function` (it would be spliced into the script as code).
Result<EntryPoint> parse_entry_point(const PackageToLink& p, const std::string& spec) {
  const auto eq = spec.find('=');
  const auto colon = spec.find(':', eq == std::string::npos ? 0 : eq);
  if (eq == std::string::npos || colon == std::string::npos)
    return integrity(p, "info/link.json has an entry point \"" + printable(spec) + "\" that is not \"name = module:function\"");
  EntryPoint ep{trim(std::string_view(spec).substr(0, eq)), trim(std::string_view(spec).substr(eq + 1, colon - eq - 1)),
                trim(std::string_view(spec).substr(colon + 1))};
  if (!safe_relative_path(ep.name) || ep.name.find('/') != std::string::npos)
    return unsafe_field(p, "info/link.json entry point name", ep.name);
  auto refused = [&](const std::string& message, const std::string& hint) {
    return Error{ErrorKind::Integrity, p.record.dist_name(), message, "nothing was installed; the prefix was not touched",
                 hint};
  };
  if (printable(ep.name) != ep.name)
    return refused("info/link.json has an entry point name with a control or invisible character: \"" +
                       printable(ep.name) + "\"",
                   "refusing a script name that terminals and shells would show altered; rebuild the package");
  if (ep.name.front() == '-')
    return refused("info/link.json has an entry point name that starts with '-': \"" + printable(ep.name) + "\"",
                   "refusing a script name that every command given it would read as an option; rebuild the package");
  if (ep.name.size() > NAME_MAX)
    return refused("info/link.json has an entry point name of " + std::to_string(ep.name.size()) +
                       " bytes; a file name holds at most " + std::to_string(NAME_MAX),
                   "rebuild the package with a shorter entry point name");
  if (!dotted_python_name(ep.module) || !dotted_python_name(ep.function) || has_python_keyword(ep.module) ||
      has_python_keyword(ep.function))
    return refused("info/link.json has an unusable entry point \"" + printable(spec) +
                       "\": module and function must be dotted Python names (name = package.module:function)",
                   "rebuild the package; its entry point would be written into the script as code");
  return ep;
}

Result<LinkPlan> plan_package(const LinkContext& ctx, const PackageToLink& p) {
  std::error_code ec;
  if (!fs::is_directory(p.extracted_dir / "info", ec)) {
    return integrity(p, "the package folder " + p.extracted_dir.string() + " has no info/ folder",
                     "the package cache entry is incomplete; delete it and retry");
  }
  auto entries = read_paths(p);
  if (!entries) return entries.error();
  auto noarch = read_link_json(p);
  if (!noarch) return noarch.error();
  if (noarch->active && ctx.site_packages.empty()) {
    return Error{ErrorKind::Incompatible, p.record.dist_name(),
                 "is a noarch: python package, but the environment has no python record",
                 "", "add python to the environment's specs and lock again"};
  }
  LinkPlan plan;
  plan.entries = std::move(*entries);
  plan.noarch = std::move(*noarch);
  const char* paths_field = fs::exists(p.extracted_dir / "info" / "paths.json", ec) ? "info/paths.json _path"
                                                                                   : "info/files path";
  plan.targets.reserve(plan.entries.size() + plan.noarch.entry_points.size());
  plan.link_targets.resize(plan.entries.size());
  for (std::size_t k = 0; k < plan.entries.size(); ++k) {
    const SourceEntry& e = plan.entries[k];
    if (!safe_relative_path(e.path)) return unsafe_field(p, paths_field, e.path);
    std::string target = target_of(ctx, plan.noarch, e.path);
    if (!writable_target(target)) return unsafe_field(p, std::string(paths_field) + " (as installed)", target);
    if (e.type == PathEntry::Type::SoftLink) {
      struct stat st {};
      if (::lstat((p.extracted_dir / e.path).c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
        std::error_code lec;
        std::string link_target = fs::read_symlink(p.extracted_dir / e.path, lec).string();
        if (lec) return io_error(p.extracted_dir / e.path, "cannot read symlink", lec.value());
        if (!link_target_inside(target, link_target))
          return unsafe_field(p, "symbolic link target of " + target, link_target);
        plan.link_targets[k] = std::move(link_target);
      }
    }
    plan.targets.emplace_back(std::move(target), e.type != PathEntry::Type::Directory);
  }
  for (const auto& spec : plan.noarch.entry_points) {
    auto ep = parse_entry_point(p, spec);
    if (!ep) return ep.error();
    plan.targets.emplace_back("bin/" + ep->name, true);
  }
  return plan;
}

Result<LinkResult> link_package(const LinkContext& ctx, const PackageToLink& p) {
  auto plan = plan_package(ctx, p);
  if (!plan) return plan.error();
  return link_planned(ctx, p, *plan);
}

namespace {
Result<LinkResult> link_planned_impl(const LinkContext& ctx, const PackageToLink& p, const LinkPlan& plan,
                                     std::string& at);
}  // namespace

Result<LinkResult> link_planned(const LinkContext& ctx, const PackageToLink& p, const LinkPlan& plan) {
  std::string at;
  auto r = link_planned_impl(ctx, p, plan, at);
  if (!r && r.error().kind == ErrorKind::Integrity && !at.empty() &&
      (r.error().message.starts_with(kLeadsOutside) || r.error().message.starts_with(kLeadsIntoGuarded))) {
    // A refusal of the stage's Tree names a folder; say which package and which of its paths.
    const Error& e = r.error();
    return Error{ErrorKind::Integrity, p.record.dist_name(), at + ": the folder " + e.where + " " + e.message,
                 "nothing was installed; the prefix was not touched", e.hint};
  }
  return r;
}

namespace {
Result<LinkResult> link_planned_impl(const LinkContext& ctx, const PackageToLink& p, const LinkPlan& plan,
                                     std::string& at) {
  const NoarchPython* noarch = &plan.noarch;
  LinkResult result;
  PrefixRecord& rec = result.record;
  static_cast<RepoDataRecord&>(rec) = p.record;
  rec.package_tarball_full_path = p.archive_path.string();
  rec.extracted_package_dir = p.extracted_dir.string();
  rec.requested_spec = p.requested_spec;
  bool any_linked = false;

  for (std::size_t k = 0; k < plan.entries.size(); ++k) {
    const SourceEntry& e = plan.entries[k];
    const std::string& target = plan.targets[k].first;
    at = target;
    const fs::path src = p.extracted_dir / e.path;
    const fs::path dest = ctx.stage / target;
    PathEntry out;
    out.path = target;
    out.type = e.type;
    out.no_link = e.no_link;

    if (e.type == PathEntry::Type::Directory) {
      if (auto st = ctx.tree->dir(target, true); !st) return st.error();
      rec.paths.push_back(std::move(out));
      rec.files.push_back(target);
      continue;
    }
    struct stat sst {};
    if (::lstat(src.c_str(), &sst) != 0) {
      return integrity(p, "the package lists \"" + e.path + "\" but its cache folder lacks it",
                       "the package cache entry is damaged; delete " + p.extracted_dir.string() +
                           " and retry");
    }
    if (S_ISLNK(sst.st_mode)) {
      std::string link_target = plan.link_targets[k];
      if (link_target.empty()) {  // a file in paths.json that is a link in the cache folder
        std::error_code lec;
        link_target = fs::read_symlink(src, lec).string();
        if (lec) return io_error(src, "cannot read symlink", lec.value());
        if (!link_target_inside(target, link_target)) return unsafe_field(p, "symbolic link target of " + target, link_target);
      }
      auto made = create_at(ctx, target, result, [&] { return ctx.tree->symlink(target, link_target); });
      if (!made) return made.error();
      if (!*made) return io_error(dest, "cannot create symlink", EEXIST);
      out.type = PathEntry::Type::SoftLink;
      out.sha256 = e.sha256;
      out.size_in_bytes = e.size;
    } else if (!S_ISREG(sst.st_mode)) {
      return integrity(p, "\"" + e.path + "\" is neither a file nor a symlink in the package");
    } else if (out.type = PathEntry::Type::HardLink; e.mode != PathEntry::PlaceholderMode::None) {
      if (auto st = clear_destination(ctx, target, result); !st) return st.error();
      auto data = read_file(src);
      if (!data) return data.error();
      std::size_t n = 0;
      if (e.mode == PathEntry::PlaceholderMode::Binary) {
        auto r = replace_binary_placeholder(*data, e.placeholder, ctx.target_prefix,
                                            p.record.dist_name() + ": " + target);
        if (!r) return r.error();
        n = *r;
      } else {
        n = replace_text_placeholder(*data, e.placeholder, ctx.target_prefix);
        // A python script's #! line that cannot hold the prefix runs it through the /bin/sh
        // trampoline; other interpreters get conda's `#!/usr/bin/env NAME`.
        if (!trampoline_python_shebang(*data, ctx.target_prefix)) rewrite_long_shebang(*data);
      }
      if (auto st = ctx.tree->write_new(target, *data, sst.st_mode); !st) return st.error();
      out.sha256 = sha256_bytes(*data);
      if (!e.sha256.empty() && e.sha256 != out.sha256) out.sha256_in_package = e.sha256;
      out.size_in_bytes = data->size();
      out.prefix_placeholder = e.placeholder;
      out.file_mode = e.mode;
      ++result.copied;
      if (n > 0) ++result.relocated;
    } else {
      bool linked = false;
      if (ctx.mode == LinkMode::Hardlink && !e.no_link) {
        int err = 0;
        auto made = create_at(ctx, target, result, [&] { return ctx.tree->link_from(src, target, err); }, &err);
        if (!made) return made.error();
        if (!*made && err == EEXIST) return io_error(dest, "cannot hard-link from " + src.string(), err);
        linked = *made;
      }
      if (linked) {
        ++result.linked;
        any_linked = true;
      } else {
        if (auto st = clear_destination(ctx, target, result); !st) return st.error();
        if (auto st = ctx.tree->copy_new(src, target, sst.st_mode); !st) return st.error();
        ++result.copied;
      }
      if (!e.sha256.empty()) {
        out.sha256 = e.sha256;
      } else {
        auto h = sha256_file(src);
        if (!h) return h.error();
        out.sha256 = *h;
      }
      // Size and sha256 from the same source: the package's paths.json when it has them (what
      // conda records), else the file linked.
      out.size_in_bytes = e.size && !e.sha256.empty() ? *e.size : static_cast<std::uint64_t>(sst.st_size);
    }
    rec.files.push_back(target);
    rec.paths.push_back(std::move(out));
  }

  // noarch: python entry points, as conda writes them (conda/core/portability.py).
  for (const auto& spec : noarch->entry_points) {
    auto ep = parse_entry_point(p, spec);
    if (!ep) return ep.error();
    const std::string& name = ep->name;
    const std::string& module = ep->module;
    const std::string& func = ep->function;
    const std::string import_name = func.substr(0, func.find('.'));
    // A shebang over 127 bytes or with a space cannot start the prefix's python: the /bin/sh exec
    // trampoline does (pip's, distlib's and conda's form), never #!/usr/bin/env pythonX.Y.
    std::string script = python_shebang(ctx.target_prefix + "/bin/python" + ctx.python_xy);
    script +=
        "# -*- coding: utf-8 -*-\n"
        "import re\n"
        "import sys\n"
        "\n"
        "from " + module + " import " + import_name + "\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    sys.argv[0] = re.sub(r'(-script\\.pyw?|\\.exe)?$', '', sys.argv[0])\n"
        "    sys.exit(" + func + "())\n";
    const std::string target = "bin/" + name;
    at = target;
    if (auto st = clear_destination(ctx, target, result); !st) return st.error();
    if (auto st = ctx.tree->write_new(target, script, 0755); !st) return st.error();
    PathEntry out;
    out.path = target;
    out.type = PathEntry::Type::HardLink;
    out.sha256 = sha256_bytes(script);
    out.size_in_bytes = script.size();
    rec.files.push_back(target);
    rec.paths.push_back(std::move(out));
    ++result.copied;
  }

  std::sort(rec.files.begin(), rec.files.end());
  std::sort(rec.paths.begin(), rec.paths.end(),
            [](const PathEntry& a, const PathEntry& b) { return a.path < b.path; });
  rec.link_type = (ctx.mode == LinkMode::Hardlink && any_linked) ? "hardlink" : "copy";
  return result;
}

}  // namespace

}  // namespace envlock::detail
