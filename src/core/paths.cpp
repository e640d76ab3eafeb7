#include "envlock/paths.hpp"
#include "envlock/settings.hpp"

#include <sys/stat.h>

#include <optional>
#include <string>

namespace envlock {

namespace {
/// The cache root the environment names, when it names one: $ENVLOCK_CACHE_DIR, else
/// $XDG_CACHE_HOME/envlock (an absolute value only: the XDG Base Directory spec says a relative
/// one is ignored), else $HOME/.cache/envlock.
std::optional<std::filesystem::path> cache_root_from_env(const Settings& s) {
  if (!s.cache_dir.empty()) return std::filesystem::path(s.cache_dir);
  if (s.xdg_cache_home.starts_with('/')) return std::filesystem::path(s.xdg_cache_home) / "envlock";
  if (!s.home.empty()) return std::filesystem::path(s.home) / ".cache" / "envlock";
  return std::nullopt;
}
}  // namespace

std::filesystem::path cache_root() {
  if (auto root = cache_root_from_env(settings())) return *root;
  return std::filesystem::temp_directory_path() / "envlock-cache";
}

Result<std::filesystem::path> package_cache_dir() {
  const Settings s = settings();
  if (!s.pkgs_dir.empty()) return std::filesystem::path(s.pkgs_dir);
  // Never a folder under /tmp that another user could have made first: packages from it are
  // linked into environments.
  if (auto root = cache_root_from_env(s)) return *root / "pkgs";
  return Error{ErrorKind::Usage, "", "cannot place the package cache: none of ENVLOCK_PKGS_DIR, ENVLOCK_CACHE_DIR, "
               "XDG_CACHE_HOME or HOME is set", "", "set ENVLOCK_PKGS_DIR (or ENVLOCK_CACHE_DIR) to a writable folder"};
}

std::filesystem::path repodata_cache_dir() { return cache_root() / "repodata"; }

std::filesystem::path home_folder() {
  const std::string v = settings().home;
  if (!v.starts_with('/')) return {};
  std::string home = std::filesystem::path(v).lexically_normal().string();
  while (home.size() > 1 && home.back() == '/') home.pop_back();
  return home == "/" ? std::filesystem::path() : std::filesystem::path(home);
}

bool is_under(const std::filesystem::path& path, const std::filesystem::path& home) {
  if (home.empty() || !path.is_absolute()) return false;
  auto p = path.begin();
  for (auto h = home.begin(); h != home.end(); ++h, ++p) {
    if (h->empty()) continue;  // a trailing separator of `home`
    if (p == path.end() || *p != *h) return false;
  }
  return true;
}

std::string tilde_path(const std::filesystem::path& path, const std::filesystem::path& home) {
  if (!is_under(path, home)) return path.string();
  const std::string rest = path.lexically_relative(home).string();
  return rest.empty() || rest == "." ? "~" : "~/" + rest;
}

std::string expand_home(std::string_view text, const std::filesystem::path& home) {
  if (home.empty()) return std::string(text);
  if (text == "~") return home.string();
  if (text.starts_with("~/")) {
    std::string_view rest = text.substr(2);
    while (rest.starts_with('/')) rest.remove_prefix(1);  // `home / "/x"` would be `/x`
    return (home / rest).string();
  }
  return std::string(text);
}

std::string tilde_paths_in(std::string_view text, const std::filesystem::path& home) {
  const std::string h = home.string();
  if (h.empty() || h == "/") return std::string(text);
  std::string out;
  std::size_t from = 0;
  for (auto at = text.find(h); at != std::string_view::npos; at = text.find(h, at + 1)) {
    const std::size_t end = at + h.size();
    if (end < text.size() && text[end] != '/' && text[end] != ' ' && text[end] != '"' && text[end] != ',' && text[end] != ')')
      continue;  // another folder that only starts the same (`/home/anabel`)
    std::size_t start = at;
    if (at >= 7 && text.substr(at - 7, 7) == "file://") start = at - 7;
    else if (at > 0 && text[at - 1] != ' ' && text[at - 1] != '"' && text[at - 1] != '(' && text[at - 1] != '=' && text[at - 1] != ':')
      continue;  // inside another path (`/srv/home/ana`)
    if (start < from) continue;
    out.append(text.substr(from, start - from));
    out += "~";
    from = end;
  }
  out.append(text.substr(from));
  return out;
}

Result<std::filesystem::path> output_file_target(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  fs::path target = path;
  // Follow links one at a time (a relative target is relative to the link's folder); 40 as
  // the kernel's own limit (ELOOP).
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (::lstat(target.c_str(), &st) != 0) return target;  // does not exist (yet): created
    if (S_ISREG(st.st_mode)) return target;
    if (S_ISLNK(st.st_mode) && hops < 40) {
      std::error_code ec;
      const fs::path to = fs::read_symlink(target, ec);
      if (ec) return Error{ErrorKind::Io, path.string(), "cannot read the symbolic link: " + ec.message(), "", ""};
      target = to.is_absolute() ? to : target.parent_path() / to;
      continue;
    }
    const char* what = S_ISLNK(st.st_mode) ? "a loop of symbolic links"
                       : S_ISDIR(st.st_mode) ? "a folder"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                               : "not a regular file";
    std::string where = path.string();
    if (target != path) where += " (-> " + target.string() + ")";
    return Error{ErrorKind::Io, where, std::string("is ") + what + ", not a file envlock can write", "",
                 "name a file path (an existing file is replaced atomically)"};
  }
}

}  // namespace envlock
