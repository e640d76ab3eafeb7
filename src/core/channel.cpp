// Channel spellings -> base URLs (conda's rules: names under the channel alias, URLs as they are,
// directories as file:// URLs), and ChannelPriority's spelling.
#include <cctype>
#include <cstdlib>

#include "envlock/channel.hpp"
#include "envlock/settings.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"

namespace envlock {

std::string_view to_string(ChannelPriority priority) {
  switch (priority) {
    case ChannelPriority::Strict: return "strict";
    case ChannelPriority::Flexible: return "flexible";
    case ChannelPriority::Disabled: return "disabled";
  }
  return "strict";
}

std::string Channel::public_url() const { return redact_url(url); }

std::string Channel::spec_name() const {
  if (!name.empty()) return name;
  return kind == Kind::Named ? spelling : std::string();
}

std::filesystem::path Channel::local_path() const {
  if (kind != Kind::LocalDirectory) return {};
  auto path = path_from_file_url(url);
  return path ? std::filesystem::path(*path) : std::filesystem::path();
}

bool Channel::relative_directory() const {
  return kind == Kind::LocalDirectory && (spelling == "." || spelling == ".." || spelling.starts_with("./") ||
                                          spelling.starts_with("../"));
}

namespace {

std::string strip_trailing_slashes(std::string s) {
  while (s.size() > 1 && s.back() == '/' && !s.ends_with("://")) s.pop_back();
  return s;
}

bool is_path_spelling(std::string_view s) {
  return s == "." || s == ".." || s.starts_with("/") || s.starts_with("./") ||
         s.starts_with("../") || s.starts_with("~/");
}

}  // namespace

Result<Channel> resolve_channel(std::string_view spelling, const std::filesystem::path& manifest_dir,
                                std::string_view channel_alias) {
  std::string text(spelling);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.pop_back();
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.erase(0, 1);
  if (text.empty())
    return Error{ErrorKind::Parse, "", "empty channel", "",
                 "write a channel name (conda-forge), a URL, or a directory path"};
  Channel ch;
  ch.spelling = text;
  std::size_t scheme = text.find("://");
  if (scheme != std::string::npos) {
    const std::string s = ascii_lower(text.substr(0, scheme));
    if (s == "http" || s == "https") {
      ch.kind = Channel::Kind::Url;
      ch.url = strip_trailing_slashes(text);
    } else if (s == "file") {
      ch.kind = Channel::Kind::LocalDirectory;
      if (text.find('/', scheme + 3) == std::string::npos)  // `file://chan`: no path at all
        return Error{ErrorKind::Parse, "", "file URL '" + redact_url(text) + "' is not absolute", "",
                     "write file:///absolute/path, or a path relative to the manifest (./channel)"};
      // Written encoded (file:///srv/my%20chan) or not (file:///srv/my chan): the same folder,
      // recorded in one spelling (envlock/url.hpp).
      auto path = path_from_file_url(text);
      if (!path) return Error{ErrorKind::Parse, "", "channel '" + redact_url(text) + "': " + path.error().message, "", path.error().hint};
      ch.url = file_url_from_path(strip_trailing_slashes(std::filesystem::path(*path).lexically_normal().string()));
    } else {
      return Error{ErrorKind::Parse, "", "unsupported URL scheme '" + s + "' in channel '" + redact_url(text) + "'",
                   "", "channels are names, http(s):// or file:// URLs, or directory paths"};
    }
    return ch;
  }
  if (is_path_spelling(text)) {
    ch.kind = Channel::Kind::LocalDirectory;
    std::filesystem::path p;
    if (text.starts_with("~/")) {
      const std::string home = settings().home;
      if (home.empty())
        return Error{ErrorKind::Parse, "", "channel '" + text + "' starts with ~ but HOME is not set", "",
                     "write the absolute path of the channel directory"};
      p = std::filesystem::path(home) / text.substr(2);
    } else if (text.starts_with("/")) {
      p = text;
    } else {
      p = std::filesystem::absolute(manifest_dir.empty() ? std::filesystem::path(".") : manifest_dir) / text;
    }
    ch.url = file_url_from_path(strip_trailing_slashes(p.lexically_normal().string()));
    return ch;
  }
  if (text.find_first_of(" \t#\\") != std::string::npos)
    return Error{ErrorKind::Parse, "", "channel name '" + text + "' contains a space, '#' or '\\'", "",
                 "a channel is a name (conda-forge), a URL, or a path starting with ./ or /"};
  ch.kind = Channel::Kind::Named;
  ch.url = strip_trailing_slashes(std::string(channel_alias)) + "/" + strip_trailing_slashes(text);
  return ch;
}

}  // namespace envlock
