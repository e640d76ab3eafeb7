// The one reader of input files (see envlock/input_file.hpp).
#include "envlock/input_file.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace envlock {
namespace {

bool in_system_folder(const std::string& real) {
  for (std::string_view top : {"/proc", "/sys", "/dev"}) {
    if (real == top || (real.starts_with(top) && real.size() > top.size() && real[top.size()] == '/')) return true;
  }
  return false;
}

const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "is a FIFO, not a regular file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device, not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  if (S_ISDIR(mode)) return "is a directory, not a regular file";
  return "is not a regular file";
}

}  // namespace

std::string system_file_refusal(const std::filesystem::path& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return {};
  const std::string r = real;
  std::free(real);
  if (in_system_folder(r)) return "is in " + r.substr(0, r.find('/', 1)) + ", not a file of a project; it is not read";
  if (struct statfs fs {}; ::statfs(r.c_str(), &fs) == 0 && (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC))
    return "is on a proc or sysfs file system, not a file of a project; it is not read";
  return {};
}

InputFile read_input_file(const std::filesystem::path& path, std::uintmax_t max_bytes, bool system_folders) {
  InputFile out;
  auto refuse = [&](std::string message) {
    out.problem = InputFile::Problem::Refused;
    out.message = std::move(message);
    return out;
  };
  if (char* real = system_folders ? ::realpath(path.c_str(), nullptr) : nullptr) {
    const std::string r = real;
    std::free(real);
    if (in_system_folder(r)) return refuse("is in " + r.substr(0, r.find('/', 1)) + ", not a file of a project; it is not read");
  }  // (system_file_refusal() is this rule for readers that open the file themselves)
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    out.problem = InputFile::Problem::Open;
    out.error_number = errno;
    return out;
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    out.problem = InputFile::Problem::Read;
    out.error_number = errno;
    return out;
  }
  if (!S_ISREG(st.st_mode)) return refuse(kind_of(st.st_mode));
  if (struct statfs fs {}; ::fstatfs(fd, &fs) == 0 && (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC)) {
    return refuse("is on a proc or sysfs file system, not a file of a project; it is not read");
  }
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes) {
    out.problem = InputFile::Problem::TooLarge;
    return out;
  }
  out.text.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      out.problem = InputFile::Problem::Read;
      out.error_number = errno;
      out.text.clear();
      return out;
    }
    if (n == 0) break;
    out.text.append(buf, static_cast<std::size_t>(n));
    if (out.text.size() > max_bytes) {
      out.problem = InputFile::Problem::TooLarge;
      out.text.clear();
      return out;
    }
  }
  return out;
}

bool starts_like_yaml_map(std::string_view text) {
  if (text.starts_with("\xef\xbb\xbf")) text.remove_prefix(3);  // a UTF-8 byte order mark
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    std::size_t i = 0;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    line.remove_prefix(i);
    if (line.empty() || line[0] == '#' || line[0] == '%' || line == "---") continue;
    if (line[0] == '{') return true;
    std::size_t k = 0;
    if (line[0] == '"' || line[0] == '\'') {
      k = line.find(line[0], 1);
      if (k == std::string_view::npos) return false;
      ++k;
    } else {
      auto key_char = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
      };
      while (k < line.size() && key_char(line[k])) ++k;
      if (k == 0) return false;
    }
    while (k < line.size() && line[k] == ' ') ++k;
    return k < line.size() && line[k] == ':' && (k + 1 == line.size() || line[k + 1] == ' ' || line[k + 1] == '\t');
  }
  return true;  // empty or only comments: nothing to quote
}

Error input_not_yaml_map(const std::string& where, const std::string& what) {
  return Error{ErrorKind::Parse, where, "is not " + what + ": its first line is not YAML `key: value`; its text is not shown", "",
               "check the path: envlock quotes no line of a file that is not a YAML map (it could hold secrets)"};
}

}  // namespace envlock
