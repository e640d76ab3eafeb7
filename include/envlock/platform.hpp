#pragma once
// envlock/platform.hpp — conda subdirs ("platforms"): linux-64, osx-arm64, win-64, noarch, ...
// The list follows conda's KNOWN_SUBDIRS (conda/base/constants.py) and rattler's Platform.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/result.hpp"

namespace envlock {

class Platform {
 public:
  /// Parses a subdir name; unknown names are an error listing the known ones.
  static Result<Platform> parse(std::string_view subdir);
  /// The subdir this envlock binary runs on (e.g. linux-64), from compile-time facts.
  static Platform host();
  static Platform noarch();
  /// Every known subdir, in conda's order.
  static const std::vector<std::string>& known();

  [[nodiscard]] const std::string& to_string() const { return name_; }
  [[nodiscard]] bool is_noarch() const { return name_ == "noarch"; }
  [[nodiscard]] bool is_linux() const { return name_.starts_with("linux-"); }
  [[nodiscard]] bool is_osx() const { return name_.starts_with("osx-"); }
  [[nodiscard]] bool is_windows() const { return name_.starts_with("win-"); }
  [[nodiscard]] bool is_unix() const { return is_linux() || is_osx() || name_.starts_with("freebsd-"); }
  /// The CPU architecture part as conda's `__archspec` family names it (x86_64, aarch64, ...);
  /// empty for noarch.
  [[nodiscard]] std::string arch() const;

  friend bool operator==(const Platform&, const Platform&) = default;
  friend auto operator<=>(const Platform&, const Platform&) = default;

 private:
  explicit Platform(std::string name) : name_(std::move(name)) {}
  std::string name_;
};

}  // namespace envlock
