#pragma once
// envlock/channel.hpp — a conda channel as a value: how it is spelled (a name under the channel
// alias, an http(s):// URL, a file:// URL or a directory), the base URL its packages come from,
// and how channel order ranks records (ChannelPriority). Manifests resolve their channels into
// it, the channel module loads repodata for it (envlock/repodata.hpp), the solver ranks by it.
//
// Resolution follows conda's channel rules (conda/models/channel.py: names under
// `channel_alias`, URLs kept, paths as file:// URLs) and rattler's Channel::from_str.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/result.hpp"
#include "envlock/source_location.hpp"

namespace envlock {

/// The default channel alias: a channel name `conda-forge` means `<alias>/conda-forge`.
inline constexpr std::string_view kDefaultChannelAlias = "https://conda.anaconda.org";

/// A channel as the manifest names it, and where its packages are fetched from.
struct Channel {
  enum class Kind {
    Named,           ///< `conda-forge`, `pytorch/label/nightly`: `<channel_alias>/<name>`
    Url,             ///< `http://` or `https://` URL
    LocalDirectory,  ///< `file://` URL, or a directory path (relative to the manifest's folder)
  };
  Kind kind = Kind::Named;
  std::string spelling;  ///< as written in the manifest, e.g. "conda-forge", "./chan"
  /// The base URL, no trailing slash: `https://conda.anaconda.org/conda-forge`,
  /// `file:///abs/path/chan`, `https://user:tok@host/chan`. A directory's URL is
  /// file_url_from_path() of its normalised absolute path (`./my chan` ->
  /// `file:///abs/my%20chan`; envlock/url.hpp). May hold credentials in memory:
  /// pass it through redact_url() before writing or printing it.
  std::string url;
  SourceLocation location;
  /// The name of the channel this URL serves, from the manifest's `{url: URL, name: NAME}` form
  /// (a mirror or proxy of NAME); empty otherwise. `NAME::pkg` specs match this channel's
  /// records; what the lockfile records is still `public_url()`, the URL read from.
  std::string name;
  /// The name `NAME::pkg` specs use for this channel: `name` when given, else the spelling of a
  /// Named channel (`conda-forge`, also under a mirror `channel-alias`); empty for plain URLs
  /// and directories (they match by URL, as conda's channel_name does).
  [[nodiscard]] std::string spec_name() const;
  /// The subdirs the channel serves, from `{url: URL, subdirs: [...]}`; empty: any. A subdir not
  /// listed is neither fetched nor required; an http(s) channel without this list must serve
  /// `noarch/repodata.json` (conda's UnavailableInvalidChannel).
  std::vector<std::string> subdirs;

  /// The credential-free URL (redact_url(url)): what lockfiles record and messages print.
  [[nodiscard]] std::string public_url() const;
  /// For a LocalDirectory channel: the absolute directory (path_from_file_url(url), decoded);
  /// empty otherwise.
  [[nodiscard]] std::filesystem::path local_path() const;
  /// True for a LocalDirectory spelled relative to the manifest (`.`, `..`, `./…`, `../…`): such
  /// a channel moves with the checkout, so the manifest hash and the lockfile record it
  /// location-independently (docs/lockfile.md, "Local channels").
  [[nodiscard]] bool relative_directory() const;
  friend bool operator==(const Channel&, const Channel&) = default;
};

/// Resolves one channel spelling. `manifest_dir` anchors relative directory paths;
/// `channel_alias` prefixes names. A path starts with `/`, `./`, `../` or `~/` (or is `.`/`..`);
/// any other text without `://` is a name (`conda-forge`, `pytorch/label/nightly`).
/// conda's `defaults` is not special here (load_manifest expands it; see docs/manifest.md).
/// A file:// URL may be written percent-encoded (`file:///srv/my%20chan`) or not
/// (`file:///srv/my chan`): both name the same folder and give the same `url`.
/// Errors (ErrorKind::Parse, `where` empty): empty text, an unsupported URL scheme, a relative
/// file:// URL or one naming a host other than localhost, a name with spaces.
Result<Channel> resolve_channel(std::string_view spelling, const std::filesystem::path& manifest_dir,
                                std::string_view channel_alias = kDefaultChannelAlias);

/// How channel order ranks records when solving (conda's `channel_priority`; docs/manifest.md).
enum class ChannelPriority {
  Strict,    ///< a package name is taken only from the highest-priority channel that has it
  Flexible,  ///< lower-priority channels may supply a name when the higher ones cannot solve
  Disabled,  ///< channels are ignored when ranking; version and build decide
};
/// "strict" | "flexible" | "disabled".
std::string_view to_string(ChannelPriority priority);

}  // namespace envlock
