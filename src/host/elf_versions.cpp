// ELF symbol version definitions (.gnu.version_d, SHT_GNU_verdef), read with bounds checks.
// Layout per the ELF gABI and the LSB "Symbol Versioning" chapter: Elf{32,64}_Verdef entries
// chained by vd_next, each naming its version through its first Elf_Verdaux (vda_name, an offset
// into the string table the section's sh_link designates). The entry with VER_FLG_BASE is the
// file's own soname and is skipped.
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "envlock/host_facts.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {

class Reader {
 public:
  Reader(std::string_view data, bool little, std::string file) : d_(data), little_(little), file_(std::move(file)) {}

  [[nodiscard]] bool has(std::uint64_t off, std::uint64_t n) const { return off <= d_.size() && n <= d_.size() - off; }

  template <class T>
  Result<T> get(std::uint64_t off) const {
    if (!has(off, sizeof(T))) return bad(off, "a table points past the end of the file");
    T v{};
    std::memcpy(&v, d_.data() + off, sizeof(T));
    if (little_ != (std::endian::native == std::endian::little)) v = byteswap(v);
    return v;
  }

  Result<std::string> cstr(std::uint64_t off, std::uint64_t limit) const {
    if (off >= limit || limit > d_.size()) return bad(off, "a version name points outside the string table");
    const char* start = d_.data() + off;
    const void* nul = std::memchr(start, '\0', limit - off);
    if (nul == nullptr) return bad(off, "a version name is not NUL-terminated");
    return std::string(start, static_cast<const char*>(nul));
  }

  [[nodiscard]] Error bad(std::uint64_t off, const std::string& why) const {
    return Error{ErrorKind::Parse, file_ + ": offset " + std::to_string(off), "not a valid ELF file: " + why, "",
                 "the library may be truncated or corrupt; check it with `readelf -V`"};
  }

 private:
  template <class T>
  static T byteswap(T v) {
    T out{};
    auto* src = reinterpret_cast<unsigned char*>(&v);
    auto* dst = reinterpret_cast<unsigned char*>(&out);
    for (std::size_t i = 0; i < sizeof(T); ++i) dst[i] = src[sizeof(T) - 1 - i];
    return out;
  }
  std::string_view d_;
  bool little_;
  std::string file_;
};

std::string machine_name(unsigned m, bool is64, bool little) {
  switch (m) {
    case EM_X86_64: return "x86_64";
    case EM_386: return "i686";
    case EM_AARCH64: return "aarch64";
    case EM_ARM: return "armv7l";
    case EM_PPC64: return little ? "ppc64le" : "ppc64";
    case EM_S390: return is64 ? "s390x" : "s390";
    case EM_RISCV: return is64 ? "riscv64" : "riscv32";
    default: return "elf-machine-" + std::to_string(m);
  }
}

template <class Ehdr, class Shdr, class Verdef, class Verdaux>
Result<ElfVersionInfo> walk(const Reader& r, bool little) {
  ElfVersionInfo info;
  auto eh = r.get<Ehdr>(0);
  if (!eh) return eh.error();
  info.machine = machine_name(eh->e_machine, sizeof(Ehdr) == sizeof(Elf64_Ehdr), little);
  if (eh->e_shoff == 0 || eh->e_shnum == 0) return info;  // no section table: nothing defined
  if (eh->e_shentsize != sizeof(Shdr)) return r.bad(offsetof(Ehdr, e_shentsize), "unexpected section header size");
  std::vector<Shdr> sections;
  for (unsigned i = 0; i < eh->e_shnum; ++i) {
    auto sh = r.get<Shdr>(eh->e_shoff + std::uint64_t{i} * sizeof(Shdr));
    if (!sh) return sh.error();
    sections.push_back(*sh);
  }
  for (const auto& sec : sections) {
    if (sec.sh_type != SHT_GNU_verdef) continue;
    if (sec.sh_link >= sections.size()) return r.bad(sec.sh_offset, "version section links to a missing string table");
    const auto& strtab = sections[sec.sh_link];
    if (!r.has(strtab.sh_offset, strtab.sh_size)) return r.bad(strtab.sh_offset, "string table outside the file");
    const std::uint64_t str_end = strtab.sh_offset + strtab.sh_size;
    if (!r.has(sec.sh_offset, sec.sh_size)) return r.bad(sec.sh_offset, "version section outside the file");
    std::uint64_t off = sec.sh_offset;
    const std::uint64_t end = sec.sh_offset + sec.sh_size;
    // sh_info holds the number of entries; also bound by the section size.
    for (std::uint64_t n = 0; n < sec.sh_info && off < end; ++n) {
      auto vd = r.get<Verdef>(off);
      if (!vd) return vd.error();
      if (vd->vd_version != VER_DEF_CURRENT) return r.bad(off, "unknown version definition revision");
      if (vd->vd_cnt > 0 && (vd->vd_flags & VER_FLG_BASE) == 0) {
        auto aux = r.get<Verdaux>(off + vd->vd_aux);
        if (!aux) return aux.error();
        auto name = r.cstr(strtab.sh_offset + aux->vda_name, str_end);
        if (!name) return name.error();
        info.versions.push_back(*name);
      }
      if (vd->vd_next == 0) break;
      off += vd->vd_next;
    }
  }
  return info;
}

}  // namespace

namespace {

/// A read-only mapping of a whole file (the walk touches only the headers and version sections of
/// a multi-megabyte library, so only those pages are read).
class Mapping {
 public:
  Mapping() = default;
  ~Mapping() {
    if (p_ != nullptr) ::munmap(p_, n_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  /// errno of the failure, 0 on success; an empty file maps to an empty view. Only a regular
  /// file is mapped (O_NONBLOCK: a FIFO put in the library's place never blocks the open).
  int open(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return errno;
    struct stat st {};
    int err = ::fstat(fd, &st) != 0 ? errno : 0;
    if (err == 0 && !S_ISREG(st.st_mode)) err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    if (err == 0 && st.st_size > 0) {
      void* p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        err = errno;
      } else {
        p_ = p;
        n_ = static_cast<std::size_t>(st.st_size);
      }
    }
    ::close(fd);
    return err;
  }
  [[nodiscard]] std::string_view view() const { return {static_cast<const char*>(p_), n_}; }

 private:
  void* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace

Result<ElfVersionInfo> read_elf_version_definitions(const fs::path& path) {
  Mapping map;
  if (const int err = map.open(path); err != 0)
    return Error{ErrorKind::Io, path.string(), std::string("cannot open the file: ") + std::strerror(err), "", ""};
  const std::string_view data = map.view();
  if (data.size() < EI_NIDENT || std::memcmp(data.data(), ELFMAG, SELFMAG) != 0) {
    return Error{ErrorKind::Parse, path.string(), "not an ELF file (no \\x7fELF magic)", "",
                 "point it at the shared library itself, not a linker script or text file"};
  }
  const unsigned char cls = static_cast<unsigned char>(data[EI_CLASS]);
  const unsigned char enc = static_cast<unsigned char>(data[EI_DATA]);
  if ((cls != ELFCLASS32 && cls != ELFCLASS64) || (enc != ELFDATA2LSB && enc != ELFDATA2MSB)) {
    return Error{ErrorKind::Parse, path.string() + ": offset 4", "not a valid ELF file: unknown class or byte order", "", ""};
  }
  const bool little = enc == ELFDATA2LSB;
  Reader r(data, little, path.string());
  if (cls == ELFCLASS64) return walk<Elf64_Ehdr, Elf64_Shdr, Elf64_Verdef, Elf64_Verdaux>(r, little);
  return walk<Elf32_Ehdr, Elf32_Shdr, Elf32_Verdef, Elf32_Verdaux>(r, little);
}

int compare_dotted(std::string_view a, std::string_view b) {
  auto next = [](std::string_view& s) -> std::uint64_t {
    std::uint64_t v = 0;
    std::size_t i = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') v = v * 10 + static_cast<std::uint64_t>(s[i++] - '0');
    while (i < s.size() && s[i] != '.') ++i;
    s.remove_prefix(i < s.size() ? i + 1 : i);
    return v;
  };
  while (!a.empty() || !b.empty()) {
    const std::uint64_t x = next(a), y = next(b);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

std::string max_symbol_version(const std::vector<std::string>& versions, std::string_view prefix) {
  std::string best;
  for (const auto& v : versions) {
    if (!v.starts_with(prefix)) continue;
    const std::string rest = v.substr(prefix.size());
    if (rest.empty() || rest[0] < '0' || rest[0] > '9') continue;  // GLIBC_PRIVATE and similar
    if (best.empty() || compare_dotted(rest, best) > 0) best = rest;
  }
  return best;
}

}  // namespace envlock
