#pragma once
// envlock/credentials.hpp — the credentials file: secrets for private channels kept outside the
// manifest, in the format rattler and pixi read (rattler_networking's FileStorage,
// `RATTLER_AUTH_FILE`), applied by envlock/fetch.hpp to every request.
//
// The file is a JSON object from a key to one credential:
//
//   {
//     "repo.example.com":   {"BearerToken": "tok"},                      // Authorization: Bearer tok
//     "*.example.org":      {"BasicHTTP": {"username": "u", "password": "p"}},  // HTTP basic auth
//     "conda.anaconda.org": {"CondaToken": "tk-1"},                       // path: /t/tk-1/<path>
//     "https://mirror.example.net/private": {"BearerToken": "other"}     // URL prefix (envlock)
//   }
//
// Lookup for a request URL, as rattler's AuthenticationStorage::get_by_url does: the URL's host
// (without port) exactly; then wildcards `*.<domain>`, from the host itself outwards (for
// `a.example.com`: `*.a.example.com`, `*.example.com`, `*.com`; so `*.example.com` also covers
// `example.com`, as in rattler); then —
// an envlock extension, rattler has it for s3:// only — keys that are URL prefixes
// (`scheme://host[:port]/path`), the longest that the URL starts with at a '/' boundary.
// A CondaToken is applied as rattler does: `/t/<token>` inserted before the URL's path (not when
// the path already starts with `/t/`). Credentials written into the URL itself (`user:pass@`,
// `/t/<token>/`) win over the file; ~/.netrc (libcurl's) is used when neither gives any.
// Unknown credential kinds (rattler's S3Credentials, OAuth) are ignored for the key.
//
// Where the file is: `$ENVLOCK_AUTH_FILE` when set (a missing file is then an error), else
// `$XDG_CONFIG_HOME/envlock/credentials.json` (`~/.config/envlock/credentials.json`), which may
// be absent. rattler and pixi default to `~/.rattler/credentials.json`; point ENVLOCK_AUTH_FILE
// there to share one file.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/result.hpp"

namespace envlock {

/// One credential of the file.
struct Credential {
  enum class Kind {
    Bearer,      ///< `{"BearerToken": T}`: header `Authorization: Bearer T`
    Basic,       ///< `{"BasicHTTP": {"username", "password"}}`: HTTP basic auth
    CondaToken,  ///< `{"CondaToken": T}`: `/t/T` before the URL's path
  };
  Kind kind = Kind::Bearer;
  std::string token;     ///< Bearer, CondaToken
  std::string username;  ///< Basic
  std::string password;  ///< Basic
};

/// The parsed credentials file.
class CredentialStore {
 public:
  /// Parses the file's text; `source` names it in errors. Errors (ErrorKind::Parse, where =
  /// `source`, never quoting a value): not JSON, not an object, an entry of a known kind with a
  /// value of the wrong type.
  static Result<CredentialStore> parse(std::string_view json, const std::string& source);
  /// Reads `path`; a missing file is an empty store when `required` is false, else ErrorKind::Io.
  static Result<CredentialStore> load(const std::filesystem::path& path, bool required);
  /// The store from ENVLOCK_AUTH_FILE (required) or the default path (optional), see above.
  static Result<CredentialStore> from_environment();
  /// The default path: `$XDG_CONFIG_HOME/envlock/credentials.json`, else
  /// `$HOME/.config/envlock/credentials.json`; empty when neither variable is set.
  static std::filesystem::path default_path();

  /// The credential for a request to `url` (rules above), or nullptr.
  [[nodiscard]] const Credential* find(std::string_view url) const;
  /// `url` with the credential applied where it lives in the URL (a CondaToken's path); other
  /// kinds leave it unchanged.
  [[nodiscard]] static std::string apply_to_url(std::string_view url, const Credential& credential);
  [[nodiscard]] bool empty() const { return entries_.empty(); }

 private:
  std::vector<std::pair<std::string, Credential>> entries_;  ///< key (lower-case host, or URL prefix)
};

}  // namespace envlock
