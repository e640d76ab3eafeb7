#pragma once
// `envlock create`'s two steps, shared with `envlock run` and `envlock shell-hook` (which create
// or update the environment first, as `pixi run` and `pixi shell-hook` do):
//   prepare_create()   read the manifest; lock when the lockfile is missing or stale (default),
//                      fail instead (--locked) or take the lockfile as it is (--frozen); choose
//                      the environment and its prefix;
//   install_created()  install the chosen environment of that lockfile into the prefix.
#include <filesystem>
#include <string>

#include "envlock/lockfile.hpp"
#include "envlock/manifest.hpp"
#include "registry.hpp"

namespace envlock::cli {

struct CreateArgs {
  std::string manifest;
  std::string environment;
  std::string prefix;
  bool locked = false;
  bool frozen = false;
  bool copy = false;
  bool ignore_host = false;
  bool no_scripts = false;
  bool allow_unverified = false;
  bool force = false;
  bool dry_run = false;
  bool extra_safety_checks = false;
  std::string command = "create";  ///< recorded in conda-meta/history (`add`, `rm` install through create)
};

/// What prepare_create() settled.
struct CreatePlan {
  Manifest manifest;
  Lockfile lockfile;
  std::filesystem::path lock_path;  ///< envlock.lock beside the manifest
  std::string environment;          ///< the lockfile's environment chosen (-e, or the only one, or `default`)
  std::filesystem::path prefix;     ///< -p, else .envlock/envs/<environment> beside the manifest
};

/// Checks that `project`/.envlock and `project`/.envlock/envs, where they exist, are folders and
/// not symbolic links (docs/install.md, "The project's environments"): an ErrorKind::Io error at
/// the first that is not. Called for every command that puts an environment in its default place.
Status check_project_envs_folder(const std::filesystem::path& project);

/// Checks that the project's lockfile `lock_path` (`envlock.lock` beside the manifest, the file
/// create, lock, run, shell-hook, add and rm read and write without being told its name) is not
/// a symbolic link: an ErrorKind::Io error when it is, before it is read or written. A checkout
/// that carries it as a link would have root's `envlock create` in CI write a file anywhere on
/// the machine, or quote a credentials file the link names (attack 30, F0 and F13), as a
/// `.envlock` link would place the environment anywhere. A lockfile named with `-o` or `-l` is
/// the user's own choice and is followed. `what` names the file in the message ("lockfile").
Status check_project_file_is_no_link(const std::filesystem::path& path, const std::string& what);

/// The first step of `create` (see the file comment). Returns 0 with `plan` filled, or the exit
/// code of the error it reported (report_error()).
int prepare_create(const Context& ctx, const CreateArgs& args, CreatePlan& plan);

/// The second step: installs `plan`, prints the outcome; returns the exit code (run_install()).
int install_created(const Context& ctx, const CreateArgs& args, const CreatePlan& plan);

}  // namespace envlock::cli
