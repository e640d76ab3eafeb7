#pragma once
// envlock/paths.hpp — where envlock keeps its state on this machine.
//
//   cache root     $ENVLOCK_CACHE_DIR, else $XDG_CACHE_HOME/envlock (absolute only), else
//                  $HOME/.cache/envlock, else <temp>/envlock-cache
//   package cache  $ENVLOCK_PKGS_DIR, else <cache root>/pkgs     (conda's pkgs/ layout), never
//                  under <temp>; $ENVLOCK_PKGS_DIRS lists several (envlock/package_cache.hpp)
//   repodata cache <cache root>/repodata
//
// And where a file envlock writes (`-o FILE`: lockfile, snapshot, bundle) really goes, and how a
// path under the user's home folder is spelled in such a file (`~/…`, never the home folder).

#include <filesystem>
#include <string>
#include <string_view>

#include "envlock/result.hpp"

namespace envlock {

std::filesystem::path cache_root();
/// The one package cache folder every command uses (install, create, snapshot deploy, info, gc,
/// clean: through default_package_cache_dirs() of envlock/package_cache.hpp): $ENVLOCK_PKGS_DIR,
/// else cache_root()/pkgs. ErrorKind::Usage when none of ENVLOCK_PKGS_DIR, ENVLOCK_CACHE_DIR,
/// an absolute XDG_CACHE_HOME or HOME is set (never a shared temporary folder).
Result<std::filesystem::path> package_cache_dir();
std::filesystem::path repodata_cache_dir();

/// The path an output file named `path` is written to by an atomic replace (temporary file
/// beside it, rename over it). A symbolic link is followed (to its final target, which may not
/// exist yet), so the link is kept and the file it names is replaced, as an editor does. The
/// target must be a regular file or not exist: a directory, device (`-o /dev/null` would
/// otherwise replace the device node with a file), FIFO or socket is refused with
/// ErrorKind::Io (what is at a named path, not the command line: exit 1) naming `path` and
/// what it is, and nothing is written. A dangling link's
/// target whose folder does not exist is returned as is: the write then fails naming it.
Result<std::filesystem::path> output_file_target(const std::filesystem::path& path);

/// The home folder that files envlock writes must not name: $HOME when it is an absolute path
/// other than `/` (lexically normal, no trailing `/`), else empty (no home to hide).
std::filesystem::path home_folder();

/// True when `path` (absolute, lexically normal) is `home` or lies below it; false for an empty
/// `home`. Component-wise: `/home/ana2` is not under `/home/ana`.
bool is_under(const std::filesystem::path& path, const std::filesystem::path& home);

/// `path` as a lockfile or snapshot writes it (docs/lockfile.md, "Local channels"; docs/snapshot.md,
/// "No home paths"): `~` or `~/rest` when it lies under `home` (is_under), else unchanged. The
/// shell's and conda's `~`: read back with expand_home().
std::string tilde_path(const std::filesystem::path& path, const std::filesystem::path& home);

/// The inverse of tilde_path(): `~` is `home`, `~/rest` is `home/rest`; any other text (and
/// everything when `home` is empty) is returned unchanged. `~user/` is not expanded.
std::string expand_home(std::string_view text, const std::filesystem::path& home);

/// Free text (a report line: a prefix, a pip source, a requirement) with every path under `home`
/// spelled `~/…` as tilde_path() spells one, and a `file://` URL under it as `~/…` too (as
/// `envlock diff` prints a channel under the home folder): `/home/ana/envs/x` is `~/envs/x`,
/// `mylib @ file:///home/ana/src` is `mylib @ ~/src`. Only a whole path component matches
/// (`/home/anabel` is not under `/home/ana`). Unchanged when `home` is empty.
std::string tilde_paths_in(std::string_view text, const std::filesystem::path& home);

}  // namespace envlock
