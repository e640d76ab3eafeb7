// tests/wheel — read_zip() on real and hostile ZIPs, and install_wheel() against its oracle,
// pypa/installer (Debian's python3-installer, driven by installer_oracle.py as pip drives it).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "envlock/encoding.hpp"
#include "envlock/extract.hpp"
#include "envlock/hash.hpp"
#include "envlock/pip.hpp"
#include "envlock/wheel.hpp"
#include "support/files.hpp"
#include "support/run_command.hpp"
#include "wheel/zip_writer.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using envlock::testing::slurp;
using testing::ZipEntry;

const fs::path kDebianWheels = "/usr/share/python-wheels";
// The path the test prefixes have at run time: shebangs name its python (both installers write
// into other folders, as a prefix built in one place and moved).
const std::string kTarget = "/opt/envlock-wheel-test/env";

std::vector<fs::path> debian_wheels() {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kDebianWheels, ec))
    if (e.path().extension() == ".whl") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

class TempDir {
 public:
  TempDir() {
    static int n = 0;
    path_ = fs::temp_directory_path() / ("envlock-wheel-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

/// A prefix with a Python 3.11 site-packages folder, as conda's python package makes.
fs::path make_prefix(const fs::path& at) {
  fs::create_directories(at / "lib/python3.11/site-packages");
  return at;
}

std::string record_hash(const std::string& data) {
  return "sha256=" + base64_encode(*hex_decode(hash_bytes(data, HashAlgorithm::Sha256)), Base64Alphabet::UrlSafe, Base64Padding::No);
}

/// A wheel of `files` (path, data, mode) with a WHEEL and a RECORD that lists every member.
struct GenWheel {
  std::string name = "demo";
  std::string version = "1.0";
  std::string wheel_meta = "Wheel-Version: 1.0\nGenerator: envlock-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n";
  std::vector<ZipEntry> files;
  std::vector<std::string> unlisted;  // members RECORD leaves out
  std::map<std::string, std::string> record_override;  // member -> its RECORD row
  std::string metadata;  // METADATA's text; empty: Name and Version of the file name

  fs::path write(const fs::path& dir) const {
    const std::string di = name + "-" + version + ".dist-info";
    std::vector<ZipEntry> all = files;
    all.push_back({di + "/METADATA", metadata.empty() ? "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n" : metadata});
    all.push_back({di + "/WHEEL", wheel_meta});
    std::string record;
    for (const ZipEntry& e : all) {
      if (std::find(unlisted.begin(), unlisted.end(), e.name) != unlisted.end()) continue;
      if (auto it = record_override.find(e.name); it != record_override.end()) {
        record += it->second + "\n";
        continue;
      }
      record += e.name + "," + record_hash(e.data) + "," + std::to_string(e.data.size()) + "\n";
    }
    record += di + "/RECORD,,\n";
    all.push_back({di + "/RECORD", record});
    const fs::path path = dir / (name + "-" + version + "-py3-none-any.whl");
    testing::write_zip(path, all);
    return path;
  }
};

/// Every file and folder under `root`: relative path -> kind, mode and bytes.
std::map<std::string, std::string> tree(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    struct stat st {};
    ::lstat(it->path().c_str(), &st);
    std::ostringstream desc;
    desc << (S_ISDIR(st.st_mode) ? "dir " : S_ISLNK(st.st_mode) ? "link " : "file ") << std::oct << (st.st_mode & 07777);
    if (S_ISREG(st.st_mode)) desc << " " << hash_bytes(slurp(it->path()), HashAlgorithm::Sha256);
    out[fs::relative(it->path(), root).string()] = desc.str();
  }
  return out;
}

bool have_oracle() {
  return testing::run_command("/usr/bin/python3 -c 'import installer'").exit_code == 0;
}

testing::CommandResult run_oracle(const fs::path& wheel, const fs::path& root, const std::string& direct_url = {}) {
  std::string cmd = "/usr/bin/python3 '" ENVLOCK_SOURCE_DIR "/tests/wheel/installer_oracle.py' '" + wheel.string() + "' '" +
                    root.string() + "' '" + kTarget + "/bin/python3.11' 3.11";
  if (!direct_url.empty()) cmd += " '" + direct_url + "'";
  return testing::run_command(cmd);
}

WheelInstallOptions options_for_target() {
  WheelInstallOptions o;
  o.target_prefix = kTarget;
  return o;
}

/// Installs `wheel` with envlock and with the oracle into two fresh prefixes and expects the
/// same trees (paths, kinds, modes, bytes) and so the same RECORD, byte for byte.
void expect_same_as_oracle(const fs::path& wheel, const WheelInstallOptions& options = options_for_target(),
                           const std::string& direct_url = {}) {
  TempDir dir;
  const fs::path ours = make_prefix(dir.path() / "envlock");
  const fs::path theirs = make_prefix(dir.path() / "installer");
  auto installed = install_wheel(wheel, ours, options);
  ASSERT_TRUE(installed.ok()) << installed.error().to_string();
  const auto r = run_oracle(wheel, theirs, direct_url);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto a = tree(ours);
  const auto b = tree(theirs);
  for (const auto& [path, desc] : b) {
    auto it = a.find(path);
    EXPECT_TRUE(it != a.end() && it->second == desc) << wheel.filename() << ": " << path << ": installer " << desc
                                                     << ", envlock " << (it == a.end() ? "absent" : it->second);
  }
  for (const auto& [path, desc] : a) EXPECT_TRUE(b.count(path)) << wheel.filename() << ": only envlock wrote " << path;
  const std::string record = "lib/python3.11/site-packages/" + installed->dist_info.substr(installed->dist_info.rfind('/') + 1) + "/RECORD";
  EXPECT_EQ(slurp(ours / record), slurp(theirs / record));
  // What install_wheel() returns is what it wrote and what RECORD says.
  EXPECT_EQ(installed->files.back().path, record);
  for (const auto& f : installed->files) {
    EXPECT_TRUE(fs::is_regular_file(ours / f.path)) << f.path;
    if (!f.sha256.empty()) {
      EXPECT_EQ(hash_file(ours / f.path, HashAlgorithm::Sha256).value(), f.sha256) << f.path;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// read_zip()

TEST(ReadZip, DebianWheelsMatchTheirOwnRecord) {
  const auto wheels = debian_wheels();
  if (wheels.empty()) GTEST_SKIP() << "no wheels in " << kDebianWheels << " (apt-get install python3-pip-whl python3-setuptools-whl python3-wheel-whl)";
  for (const fs::path& wheel : wheels) {
    std::map<std::string, std::pair<std::string, std::uint64_t>> seen;  // name -> sha256, size
    std::string record;
    auto st = read_zip(wheel, [&](const ZipMember& m, ZipMemberReader& data) -> Status {
      EXPECT_EQ(m.kind, m.name.ends_with("/") ? ZipMember::Kind::Directory : ZipMember::Kind::File) << m.name;
      Hasher h(HashAlgorithm::Sha256);
      std::string bytes;
      for (;;) {
        auto block = data.next();
        if (!block) return block.error();
        if (block->empty()) break;
        h.update(*block);
        if (m.name.ends_with(".dist-info/RECORD")) bytes.append(*block);
      }
      const std::uint64_t size = h.bytes();
      EXPECT_EQ(m.size.value_or(size), size) << m.name;
      seen[m.name] = {h.hex_digest(), size};
      if (!bytes.empty()) record = bytes;
      return ok_status();
    });
    ASSERT_TRUE(st.ok()) << st.error().to_string();
    auto rows = parse_record(record, "RECORD");
    ASSERT_TRUE(rows.ok()) << wheel;
    std::size_t hashed = 0;
    for (const auto& row : *rows) {
      if (row.sha256.empty()) continue;
      ASSERT_TRUE(seen.count(row.path)) << wheel << ": " << row.path;
      EXPECT_EQ(seen[row.path].first, row.sha256) << row.path;
      EXPECT_EQ(seen[row.path].second, row.size.value()) << row.path;
      ++hashed;
    }
    EXPECT_EQ(hashed + 1, seen.size()) << wheel << ": every member but RECORD is hashed in it";
  }
}

TEST(ReadZip, HandsOverHostileNamesAsStoredAndEveryDuplicate) {
  // read_zip judges nothing: the installer does (below). A name written twice is visited twice,
  // read from the central directory, so neither copy hides.
  TempDir dir;
  const fs::path zip = dir.path() / "hostile.zip";
  testing::write_zip(zip, {{"../evil", "a"}, {"/etc/passwd", "b"}, {"dup", "one"}, {"dup", "two"}, {"link", "../../x", 0120777}});
  std::vector<std::string> seen;
  auto st = read_zip(zip, [&](const ZipMember& m, ZipMemberReader& data) -> Status {
    std::string bytes;
    for (auto block = data.next(); block.ok() && !block->empty(); block = data.next()) bytes.append(*block);
    seen.push_back(m.name + (m.kind == ZipMember::Kind::Symlink ? " -> " + m.link_target : " = " + bytes));
    return ok_status();
  });
  ASSERT_TRUE(st.ok()) << st.error().to_string();
  EXPECT_EQ(seen, (std::vector<std::string>{"../evil = a", "/etc/passwd = b", "dup = one", "dup = two", "link -> ../../x"}));
}

TEST(ReadZip, RefusesADeclaredSizePastTheCapBeforeReadingIt) {
  TempDir dir;
  const fs::path zip = dir.path() / "bomb.zip";
  ZipEntry big{"big", "tiny"};
  big.declared_size = 0xFFFFFFF0u;  // 4 GiB declared (both headers) by 4 bytes: past the 1 GiB floor
  testing::write_zip(zip, {{"small", "x"}, big});
  int visited = 0;
  auto st = read_zip(zip, [&](const ZipMember&, ZipMemberReader&) -> Status {
    ++visited;
    return ok_status();
  });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(visited, 1);
  EXPECT_EQ(st.error().kind, ErrorKind::Integrity);
  EXPECT_NE(st.error().message.find("refused at member 'big': the archive expands past"), std::string::npos) << st.error().message;
}

TEST(ReadZip, RefusesContentPastTheCap) {
  TempDir dir;
  const fs::path zip = dir.path() / "big.zip";
  testing::write_zip(zip, {{"a", std::string(40, 'a')}, {"b", std::string(40, 'b')}});
  ExtractLimits limits;
  limits.max_total_bytes = 60;
  limits.expansion_floor = 0;
  std::vector<std::string> visited;
  auto st = read_zip(zip, [&](const ZipMember& m, ZipMemberReader& data) -> Status {
    visited.push_back(m.name);
    for (auto block = data.next(); block.ok() && !block->empty(); block = data.next()) {
    }
    return ok_status();
  }, limits);
  // Bytes handed over count: b's declared 40 after a's 40 pass 60, refused before b is visited.
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(visited, std::vector<std::string>{"a"});
  EXPECT_EQ(st.error().kind, ErrorKind::Integrity);
}

TEST(ReadZip, RefusesMoreMembersThanTheCap) {
  TempDir dir;
  const fs::path zip = dir.path() / "many.zip";
  testing::write_zip(zip, {{"a", ""}, {"b", ""}, {"c", ""}});
  ExtractLimits limits;
  limits.max_entries = 2;
  auto st = read_zip(zip, [](const ZipMember&, ZipMemberReader&) { return ok_status(); }, limits);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().to_string(), zip.string() + ": refused at member 3: more members than the cap of 2 members per archive\n"
                                                    "hint: the archive is malformed or malicious");
}

TEST(ReadZip, NotAZipIsIntegrity) {
  TempDir dir;
  const fs::path zip = dir.path() / "text.whl";
  std::ofstream(zip) << "not a zip at all";
  auto st = read_zip(zip, [](const ZipMember&, ZipMemberReader&) { return ok_status(); });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::Integrity);
  EXPECT_EQ(st.error().where, zip.string());
}

// ---------------------------------------------------------------------------------------------
// install_wheel() against pypa/installer

TEST(InstallWheel, DebianWheelsAsInstallerInstallsThem) {
  const auto wheels = debian_wheels();
  if (wheels.empty()) GTEST_SKIP() << "no wheels in " << kDebianWheels << " (apt-get install python3-pip-whl python3-setuptools-whl python3-wheel-whl)";
  if (!have_oracle()) GTEST_SKIP() << "python3-installer is absent (apt-get install python3-installer): no oracle to compare with";
  for (const fs::path& wheel : wheels) expect_same_as_oracle(wheel);
}

GenWheel data_wheel() {
  GenWheel w;
  w.files = {
      {"demo/__init__.py", "VALUE = 1\n"},
      {"demo/tool.py", "def main():\n    return 0\n"},
      {"demo-1.0.data/scripts/demo-run", "#!python\nimport demo\nprint(demo.VALUE)\n", 0100755},
      {"demo-1.0.data/scripts/demo-sh", "#!/bin/sh\necho plain\n", 0100755},
      {"demo-1.0.data/scripts/demo-args", "#!python -u\r\nprint(1)\n", 0100644},
      {"demo-1.0.data/headers/demo.h", "#define DEMO 1\n"},
      {"demo-1.0.data/purelib/demo_pure.py", "PURE = True\n"},
      {"demo-1.0.data/platlib/demo_plat.py", "PLAT = True\n"},
      {"demo-1.0.data/data/share/demo/readme.txt", "data file\n"},
      {"demo-1.0.dist-info/entry_points.txt",
       "[console_scripts]\ndemo = demo.tool:main\ndemo-x = demo.tool:main.sub [extra]\n\n[gui_scripts]\ndemo-gui = demo.tool:main\n"
       "\n[other.group]\nignored = demo:main\n"},
  };
  return w;
}

TEST(InstallWheel, SpreadsDataAndWritesEntryPointsAsInstallerDoes) {
  if (!have_oracle()) GTEST_SKIP() << "python3-installer is absent (apt-get install python3-installer): no oracle to compare with";
  TempDir dir;
  expect_same_as_oracle(data_wheel().write(dir.path()));
}

TEST(InstallWheel, DirectUrlAsPipWritesIt) {
  if (!have_oracle()) GTEST_SKIP() << "python3-installer is absent (apt-get install python3-installer): no oracle to compare with";
  TempDir dir;
  WheelInstallOptions o = options_for_target();
  o.direct_url = DirectUrl{"file:///srv/wheels/demo-1.0-py3-none-any.whl", std::string(64, 'a')};
  const std::string json = direct_url_json(*o.direct_url);
  EXPECT_EQ(json, "{\"archive_info\": {\"hash\": \"sha256=" + std::string(64, 'a') + "\", \"hashes\": {\"sha256\": \"" +
                      std::string(64, 'a') + "\"}}, \"url\": \"file:///srv/wheels/demo-1.0-py3-none-any.whl\"}");
  EXPECT_EQ(direct_url_json({"https://h/caf\xc3\xa9.whl", ""}), "{\"archive_info\": {}, \"url\": \"https://h/caf\\u00e9.whl\"}");
  expect_same_as_oracle(data_wheel().write(dir.path()), o, json);
}

// Expectations of envlock's own, written out (they hold without the oracle too).
TEST(InstallWheel, LayoutScriptsAndRecordOfAGeneratedWheel) {
  TempDir dir;
  const fs::path prefix = make_prefix(dir.path() / "env");
  auto installed = install_wheel(data_wheel().write(dir.path()), prefix, options_for_target());
  ASSERT_TRUE(installed.ok()) << installed.error().to_string();
  EXPECT_EQ(installed->name, "demo");
  EXPECT_EQ(installed->dist_info, "lib/python3.11/site-packages/demo-1.0.dist-info");
  const std::string shebang = "#!" + kTarget + "/bin/python3.11\n";
  EXPECT_EQ(slurp(prefix / "bin/demo-run"), shebang + "import demo\nprint(demo.VALUE)\n");
  EXPECT_EQ(slurp(prefix / "bin/demo-args"), shebang + "print(1)\n");  // the arguments go, as installer and pip drop them
  EXPECT_EQ(slurp(prefix / "bin/demo-sh"), "#!/bin/sh\necho plain\n");
  EXPECT_EQ(slurp(prefix / "bin/demo-x"),
            shebang +
                "# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom demo.tool import main\nif __name__ == \"__main__\":\n"
                "    sys.argv[0] = re.sub(r\"(-script\\.pyw|\\.exe)?$\", \"\", sys.argv[0])\n    sys.exit(main.sub())\n");
  EXPECT_TRUE(fs::exists(prefix / "bin/demo-gui"));
  EXPECT_FALSE(fs::exists(prefix / "bin/ignored"));
  EXPECT_EQ(slurp(prefix / "include/python3.11/demo/demo.h"), "#define DEMO 1\n");
  EXPECT_EQ(slurp(prefix / "share/demo/readme.txt"), "data file\n");
  EXPECT_TRUE(fs::exists(prefix / "lib/python3.11/site-packages/demo_pure.py"));
  EXPECT_TRUE(fs::exists(prefix / "lib/python3.11/site-packages/demo_plat.py"));
  const std::string di = prefix / "lib/python3.11/site-packages/demo-1.0.dist-info";
  EXPECT_EQ(slurp(di + "/INSTALLER"), "envlock\n");
  EXPECT_EQ(slurp(di + "/REQUESTED"), "");
  EXPECT_FALSE(fs::exists(di + "/direct_url.json"));
  const std::string record = slurp(di + "/RECORD");
  std::vector<std::string> paths;
  const auto rows = parse_record(record, "RECORD");
  ASSERT_TRUE(rows.ok());
  for (const auto& row : *rows) paths.push_back(row.path);
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "../../../bin/demo", "../../../bin/demo-x", "../../../bin/demo-gui", "demo/__init__.py", "demo/tool.py",
                       "../../../bin/demo-run", "../../../bin/demo-sh", "../../../bin/demo-args",
                       "../../../include/python3.11/demo/demo.h", "demo_pure.py", "./demo_plat.py",
                       "../../../share/demo/readme.txt", "demo-1.0.dist-info/entry_points.txt", "demo-1.0.dist-info/METADATA",
                       "demo-1.0.dist-info/WHEEL", "demo-1.0.dist-info/INSTALLER", "demo-1.0.dist-info/REQUESTED",
                       "demo-1.0.dist-info/RECORD"}));
  EXPECT_TRUE(record.ends_with("\ndemo-1.0.dist-info/RECORD,,\n"));
  struct stat st {};
  ::stat((prefix / "bin/demo-run").c_str(), &st);
  EXPECT_TRUE(st.st_mode & 0100);
  ::stat((prefix / "bin/demo-args").c_str(), &st);
  EXPECT_FALSE(st.st_mode & 0100) << "a member without an executable bit keeps none, as installer writes it";
  ::stat((prefix / "bin/demo").c_str(), &st);
  EXPECT_TRUE(st.st_mode & 0100);
  for (const auto& e : fs::directory_iterator(prefix)) EXPECT_FALSE(e.path().filename().string().starts_with(".envlock-wheel")) << e.path();
}

TEST(InstallWheel, LongPrefixGetsCondasTrampoline) {
  TempDir dir;
  const fs::path prefix = make_prefix(dir.path() / "env");
  WheelInstallOptions o;
  o.target_prefix = "/opt/" + std::string(130, 'p');
  auto installed = install_wheel(data_wheel().write(dir.path()), prefix, o);
  ASSERT_TRUE(installed.ok()) << installed.error().to_string();
  const std::string trampoline = "#!/bin/sh\n'''exec' '" + o.target_prefix + "/bin/python3.11' \"$0\" \"$@\"\n' '''\n";
  EXPECT_TRUE(slurp(prefix / "bin/demo").starts_with(trampoline + "# -*- coding: utf-8 -*-\n"));
  EXPECT_EQ(slurp(prefix / "bin/demo-run"), trampoline + "import demo\nprint(demo.VALUE)\n");
}

// ---------------------------------------------------------------------------------------------
// Refusals: the prefix is left exactly as it was.

struct Refusal {
  Error error;
  bool prefix_unchanged = false;
};

Refusal install_refused(const fs::path& wheel, const fs::path& dir) {
  const fs::path prefix = make_prefix(dir / "env");
  std::ofstream(prefix / "lib/python3.11/site-packages/other.py") << "x = 1\n";
  const auto before = tree(prefix);
  auto r = install_wheel(wheel, prefix, options_for_target());
  // The same wheel through the unpacked-wheel cache is refused with the same error, byte for byte.
  {
    static int n = 0;
    const fs::path cached_prefix = make_prefix(dir / ("env-cached-" + std::to_string(n)));
    WheelInstallOptions o = options_for_target();
    o.unpacked_cache = dir / ("unpacked-" + std::to_string(n++));
    auto c = install_wheel(wheel, cached_prefix, o);
    EXPECT_EQ(c.ok(), r.ok()) << wheel;
    if (!c.ok() && !r.ok()) {
      EXPECT_EQ(c.error().to_string(), r.error().to_string());
    }
  }
  if (r.ok()) return {Error{ErrorKind::Internal, "", "installed", "", ""}, false};
  return {r.error(), tree(prefix) == before};
}

TEST(InstallWheel, RefusesAHashMismatch) {
  TempDir dir;
  GenWheel w = data_wheel();
  w.record_override["demo/tool.py"] = "demo/tool.py," + record_hash("something else") + ",25";
  const fs::path wheel = w.write(dir.path());
  auto r = install_refused(wheel, dir.path());
  EXPECT_TRUE(r.prefix_unchanged);
  EXPECT_EQ(r.error.to_string(),
            wheel.string() + ": member 'demo/tool.py' does not match its RECORD row\n"
                             "  expected sha256 " + hash_bytes("something else", HashAlgorithm::Sha256) + ", 25 bytes\n"
                             "  actual   sha256 " + hash_bytes("def main():\n    return 0\n", HashAlgorithm::Sha256) + ", 25 bytes\n"
                             "hint: the wheel was altered or damaged; download it again and check its sha256");
}

TEST(InstallWheel, RefusesAWrongSize) {
  TempDir dir;
  GenWheel w = data_wheel();
  w.record_override["demo/__init__.py"] = "demo/__init__.py," + record_hash("VALUE = 1\n") + ",11";
  auto r = install_refused(w.write(dir.path()), dir.path());
  EXPECT_TRUE(r.prefix_unchanged);
  EXPECT_EQ(r.error.kind, ErrorKind::Integrity);
  EXPECT_EQ(r.error.message, "member 'demo/__init__.py' does not match its RECORD row");
}

TEST(InstallWheel, RefusesAMemberMissingFromRecord) {
  TempDir dir;
  GenWheel w = data_wheel();
  w.unlisted = {"demo/tool.py"};
  const fs::path wheel = w.write(dir.path());
  auto r = install_refused(wheel, dir.path());
  EXPECT_TRUE(r.prefix_unchanged);
  EXPECT_EQ(r.error.to_string(), wheel.string() + ": refused member 'demo/tool.py': not listed in RECORD\n"
                                                  "hint: every file of a wheel is listed in its RECORD with a sha256 (PEP 427), as installer checks");
  if (have_oracle()) {  // installer refuses it too
    TempDir other;
    EXPECT_EQ(run_oracle(wheel, make_prefix(other.path() / "env")).exit_code, 1);
  }
}

TEST(InstallWheel, RefusesARecordRowWithoutHash) {
  TempDir dir;
  GenWheel w = data_wheel();
  w.record_override["demo/tool.py"] = "demo/tool.py,,";
  auto r = install_refused(w.write(dir.path()), dir.path());
  EXPECT_TRUE(r.prefix_unchanged);
  EXPECT_EQ(r.error.message, "refused member 'demo/tool.py': RECORD lists no sha256 and size for it");
}

TEST(InstallWheel, RefusesUnsafeMembers) {
  const std::vector<std::pair<ZipEntry, std::string>> cases = {
      {{"../evil.py", "x"}, "refused member '../evil.py': a `..` component"},
      {{"demo/../../evil.py", "x"}, "refused member 'demo/../../evil.py': a `..` component"},
      {{"/etc/evil.py", "x"}, "refused member '/etc/evil.py': an absolute name"},
      {{"C:/evil.py", "x"}, "refused member 'C:/evil.py': a drive letter"},
      // libarchive reads a `\` of a stored name as `/` (installer would write a file named `demo\evil.py`): the member is
      // demo/evil.py, which RECORD does not list.
      {{"demo\\evil.py", "x"}, "refused member 'demo/evil.py': not listed in RECORD"},
      {{"demo//evil.py", "x"}, "refused member 'demo//evil.py': an empty path component"},
      {{"demo-1.0.data/scripts/../../../evil", "x"}, "refused member 'demo-1.0.data/scripts/../../../evil': a `..` component"},
      {{"demo/link", "../../../../etc/passwd", 0120777}, "refused member 'demo/link': a symbolic link"},
      {{"demo/tty", "", 020644}, "refused member 'demo/tty': not a regular file"},
      {{"demo/sock", "", 0140644}, "refused member 'demo/sock': not a regular file"},
      {{"demo/__init__.py", "second copy"}, "refused member 'demo/__init__.py': listed twice in the archive"},
      {{"demo-1.0.data/lib/x.py", "x"}, "refused member 'demo-1.0.data/lib/x.py': not inside one of demo-1.0.data/{purelib,platlib,headers,scripts,data}/"},
  };
  for (const auto& [entry, message] : cases) {
    TempDir dir;
    GenWheel w;
    w.files = {{"demo/__init__.py", "VALUE = 1\n"}, entry};
    if (entry.name == "demo/__init__.py") w.record_override[entry.name] = entry.name + "," + record_hash(entry.data) + "," + std::to_string(entry.data.size());
    auto r = install_refused(w.write(dir.path()), dir.path());
    EXPECT_TRUE(r.prefix_unchanged) << entry.name;
    EXPECT_EQ(r.error.kind, ErrorKind::Integrity) << entry.name;
    EXPECT_EQ(r.error.message, message);
    EXPECT_FALSE(fs::exists(dir.path() / "evil.py"));
    EXPECT_FALSE(fs::exists("/etc/evil.py"));
  }
}

TEST(InstallWheel, RefusesAnEntryPointThatIsAPath) {
  TempDir dir;
  GenWheel w;
  w.files = {{"demo/__init__.py", "def main(): pass\n"},
             {"demo-1.0.dist-info/entry_points.txt", "[console_scripts]\n../../evil = demo:main\n"}};
  auto r = install_refused(w.write(dir.path()), dir.path());
  EXPECT_TRUE(r.prefix_unchanged);
  EXPECT_EQ(r.error.kind, ErrorKind::Integrity);
  EXPECT_EQ(r.error.message, "refused entry point '../../evil': a script name must be a plain file name, not a `..` component");
}

TEST(InstallWheel, RefusesABadEntryPointLine) {
  TempDir dir;
  GenWheel w;
  w.files = {{"demo/__init__.py", ""}, {"demo-1.0.dist-info/entry_points.txt", "[console_scripts]\ndemo = not an entry point\n"}};
  const fs::path wheel = w.write(dir.path());
  auto r = install_refused(wheel, dir.path());
  EXPECT_TRUE(r.prefix_unchanged);
  EXPECT_EQ(r.error.to_string(), wheel.string() + ": demo-1.0.dist-info/entry_points.txt:2: entry 'demo' is not `module:attr [extras]`\n"
                                                  "  not an entry point");
}

TEST(InstallWheel, RefusesWheelVersion2) {
  TempDir dir;
  GenWheel w;
  w.files = {{"demo/__init__.py", ""}};
  w.wheel_meta = "Wheel-Version: 2.0\nRoot-Is-Purelib: true\n";
  auto r = install_refused(w.write(dir.path()), dir.path());
  EXPECT_TRUE(r.prefix_unchanged);
  EXPECT_EQ(r.error.kind, ErrorKind::Incompatible);
  EXPECT_EQ(r.error.message, "Wheel-Version 2.0 is not 1.x");
}

// Attack 22 A12: METADATA is what list, diff, snapshot and the next install read; a wheel whose
// METADATA names another distribution or version than its file name is refused before anything
// is written (pip: "has inconsistent name: expected 'demo', but metadata has 'requests'"; uv:
// InconsistentName). Names compare PEP 503 normalised.
TEST(InstallWheel, RefusesAWheelWhoseMetadataIsAnotherDistribution) {
  TempDir dir;
  GenWheel w;
  w.metadata = "Metadata-Version: 2.1\nName: requests\nVersion: 9.9\n";
  const fs::path wheel = w.write(dir.path());
  auto r = install_refused(wheel, dir.path());
  EXPECT_TRUE(r.prefix_unchanged);
  EXPECT_EQ(r.error.kind, ErrorKind::Integrity);
  EXPECT_EQ(r.error.to_string(), wheel.string() + ": its METADATA names 'requests' version '9.9', not demo 1.0 as its file name\n"
                                                  "hint: the wheel is not the distribution it claims to be; pip and uv refuse it "
                                                  "(inconsistent name or version)");
  TempDir dir2;
  w.metadata = "Metadata-Version: 2.1\nName: Demo\nVersion: 1.0.1\n";
  r = install_refused(w.write(dir2.path()), dir2.path());
  EXPECT_TRUE(r.prefix_unchanged);
  EXPECT_EQ(r.error.message, "its METADATA names 'Demo' version '1.0.1', not demo 1.0 as its file name");
  TempDir dir3;
  w.metadata = "Metadata-Version: 2.1\nName: DEMO\nVersion: 1.0\n";  // the same name, PEP 503
  const fs::path same = w.write(dir3.path());
  EXPECT_TRUE(install_wheel(same, make_prefix(dir3.path() / "env"), options_for_target()).ok());
  TempDir dir4;
  const fs::path no_metadata = dir4.path() / "demo-1.0-py3-none-any.whl";
  const std::string wheel_text = "Wheel-Version: 1.0\n";
  testing::write_zip(no_metadata, {{"demo-1.0.dist-info/WHEEL", wheel_text},
                                   {"demo-1.0.dist-info/RECORD", "demo-1.0.dist-info/WHEEL," + record_hash(wheel_text) + ",19\n"
                                                                 "demo-1.0.dist-info/RECORD,,\n"}});
  r = install_refused(no_metadata, dir4.path());
  EXPECT_TRUE(r.prefix_unchanged);
  EXPECT_EQ(r.error.message, "has no demo-1.0.dist-info/METADATA");
}

// A wheel's METADATA Version is compared with its file name's as pip 23/24 compare them
// (LinkCandidate._check_metadata_consistency, pip/_internal/resolution/resolvelib/candidates.py:
// packaging Version objects): spellings of one PEP 440 version install, another version (a local
// label, a post-release, an epoch) is refused. Debian's pip's packaging is the oracle when present.
TEST(InstallWheel, MetadataVersionIsComparedAsAPep440VersionAsPipDoes) {
  struct Case {
    std::string file_version, meta_version;
    bool same;
  };
  const std::vector<Case> cases = {{"1.0", "1.0.0", true},      {"2.0rc1", "2.0-RC1", true},    {"1.0.post1", "1.0-1", true},
                                   {"1.0", "1.0+cpu", false},   {"1.0", "1.0.post0", false},    {"1.0", "1!1.0", false},
                                   {"1.0", "not a version", false}};
  const bool oracle = testing::run_command("/usr/bin/python3 -c 'import pip._vendor.packaging.version'").exit_code == 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file_version + " / " + c.meta_version);
    if (oracle) {
      auto pip = testing::run_command("/usr/bin/python3 -c 'import sys; from pip._vendor.packaging.version import Version as V, InvalidVersion\n"
                                      "try: print(V(sys.argv[1]) == V(sys.argv[2]))\nexcept InvalidVersion: print(False)' '" +
                                      c.file_version + "' '" + c.meta_version + "'");
      EXPECT_EQ(pip.out, c.same ? "True\n" : "False\n") << pip.err;
    }
    TempDir dir;
    GenWheel w;
    w.version = c.file_version;
    w.metadata = "Metadata-Version: 2.1\nName: demo\nVersion: " + c.meta_version + "\n";
    const fs::path wheel = w.write(dir.path());
    if (c.same) {
      auto installed = install_wheel(wheel, make_prefix(dir.path() / "env"), options_for_target());
      ASSERT_TRUE(installed.ok()) << installed.error().to_string();
      EXPECT_EQ(installed->version, c.file_version);
      EXPECT_EQ(installed->dist_info, "lib/python3.11/site-packages/demo-" + c.file_version + ".dist-info");
    } else {
      auto r = install_refused(wheel, dir.path());
      EXPECT_TRUE(r.prefix_unchanged);
      EXPECT_EQ(r.error.to_string(), wheel.string() + ": its METADATA names 'demo' version '" + c.meta_version + "', not demo " +
                                         c.file_version + " as its file name\n"
                                         "hint: the wheel is not the distribution it claims to be; pip and uv refuse it "
                                         "(inconsistent name or version)");
    }
  }
}

// Attack 22 A13: a wheel's `.data/data/` is the prefix itself; a member landing in conda-meta/ (the
// environment's records, envlock's marker) or on a name envlock owns is refused, nothing written.
TEST(InstallWheel, RefusesAMemberLandingInCondaMeta) {
  for (const std::string& member : std::vector<std::string>{"demo-1.0.data/data/conda-meta/evil-1.0-0.json", "demo-1.0.data/data/conda-meta/envlock",
                                   "demo-1.0.data/data/.envlock-wheel-1-0/x"}) {
    TempDir dir;
    GenWheel w;
    w.files = {{"demo/__init__.py", "X = 1\n"}, {member, "{}\n"}};
    const fs::path wheel = w.write(dir.path());
    auto r = install_refused(wheel, dir.path());
    EXPECT_TRUE(r.prefix_unchanged) << member;
    EXPECT_EQ(r.error.to_string(), wheel.string() + ": refused member '" + member + "': it would install " +
                                       member.substr(std::string("demo-1.0.data/data/").size()) +
                                       ", which conda and envlock own\n"
                                       "hint: a wheel never writes the environment's records (conda-meta/) or envlock's files")
        << member;
  }
}

// Attack 22 A18: which tags CPython 3.11 on linux-64 with glibc 2.17 runs, as
// packaging.tags.sys_tags() lists them (pip and uv install only those).
TEST(WheelTags, FollowThePlatformCompatibilityTagsSpecification) {
  const WheelTarget linux{"linux-64", "3.11", "2.17"};
  const std::map<std::string, bool> cases = {
      {"foo-1.0-py3-none-any.whl", true},
      {"foo-1.0-py2.py3-none-any.whl", true},
      {"foo-1.0-py311-none-any.whl", true},
      {"foo-1.0-py38-none-any.whl", true},
      {"foo-1.0-py312-none-any.whl", false},
      {"foo-1.0-py2-none-any.whl", false},
      {"foo-1.0-cp311-none-any.whl", true},
      {"foo-1.0-cp311-cp311-linux_x86_64.whl", true},
      {"foo-1.0-cp311-cp311-manylinux1_x86_64.whl", true},
      {"foo-1.0-cp311-cp311-manylinux2014_x86_64.whl", true},
      {"foo-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", true},
      {"foo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl", false},
      {"foo-1.0-cp311-cp311-manylinux_2_28_x86_64.manylinux_2_5_x86_64.whl", true},
      {"foo-1.0-cp311-cp311-manylinux_2_17_aarch64.whl", false},
      {"foo-1.0-cp311-cp311-musllinux_1_1_x86_64.whl", false},
      {"foo-1.0-cp312-cp312-manylinux_2_17_x86_64.whl", false},
      {"foo-1.0-cp310-cp310-manylinux_2_17_x86_64.whl", false},
      {"foo-1.0-cp38-abi3-manylinux_2_17_x86_64.whl", true},
      {"foo-1.0-cp312-abi3-manylinux_2_17_x86_64.whl", false},
      {"foo-1.0-cp311-cp311-win_amd64.whl", false},
      {"foo-1.0-py3-none-macosx_11_0_arm64.whl", false},
      {"foo-1.0-pp39-pypy39_pp73-manylinux_2_17_x86_64.whl", false},
      {"foo-1.0-py3-cp311-any.whl", false},
  };
  for (const auto& [file, supported] : cases) {
    auto name = parse_wheel_file_name(file);
    ASSERT_TRUE(name.ok()) << file;
    EXPECT_EQ(wheel_tags_supported(*name, linux), supported) << file;
  }
  EXPECT_FALSE(wheel_tags_supported(*parse_wheel_file_name("foo-1.0-py3-none-manylinux1_x86_64.whl"), {"linux-64", "3.11", ""}))
      << "no glibc: no manylinux";
  EXPECT_TRUE(wheel_tags_supported(*parse_wheel_file_name("foo-1.0-py3-none-macosx_11_0_arm64.whl"), {"osx-arm64", "3.11", ""}));
  EXPECT_TRUE(wheel_tags_supported(*parse_wheel_file_name("foo-1.0-py3-none-macosx_10_9_universal2.whl"), {"osx-64", "3.11", ""}));
  EXPECT_FALSE(wheel_tags_supported(*parse_wheel_file_name("foo-1.0-py3-none-macosx_11_0_arm64.whl"), {"osx-64", "3.11", ""}));
  EXPECT_TRUE(wheel_tags_supported(*parse_wheel_file_name("foo-1.0-cp311-cp311-win_amd64.whl"), {"win-64", "3.11", ""}));
  EXPECT_EQ(describe_wheel_target(linux), "linux-64 / CPython 3.11 / glibc 2.17");
  EXPECT_EQ(describe_wheel_target({"osx-arm64", "3.12", ""}), "osx-arm64 / CPython 3.12");
}

TEST(InstallWheel, RefusesAWheelWithoutRecordOrWithTwoDistInfos) {
  TempDir dir;
  const fs::path no_record = dir.path() / "demo-1.0-py3-none-any.whl";
  testing::write_zip(no_record, {{"demo/__init__.py", ""}, {"demo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\n"}});
  auto r = install_refused(no_record, dir.path());
  EXPECT_TRUE(r.prefix_unchanged);
  EXPECT_EQ(r.error.message, "has no demo-1.0.dist-info/RECORD");
  TempDir dir2;
  GenWheel w;
  w.files = {{"other-2.0.dist-info/METADATA", ""}};
  r = install_refused(w.write(dir2.path()), dir2.path());
  EXPECT_EQ(r.error.message, "has 2 .dist-info folders");
}

TEST(InstallWheel, NeverOverwritesAFileOfThePrefix) {
  TempDir dir;
  const fs::path wheel = data_wheel().write(dir.path());
  const fs::path prefix = make_prefix(dir.path() / "env");
  fs::create_directories(prefix / "bin");
  std::ofstream(prefix / "bin/demo-run") << "owned by a conda package\n";
  const auto before = tree(prefix);
  auto r = install_wheel(wheel, prefix, options_for_target());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(), prefix.string() + ": the wheel demo-1.0-py3-none-any.whl would overwrite 1 file(s) already in the prefix\n"
                                                     "  bin/demo-run\n"
                                                     "hint: another package owns them; remove it first (nothing of this wheel was installed)");
  EXPECT_EQ(tree(prefix), before);
  // Installed once, the same wheel again is refused the same way, and the first install stays.
  fs::remove(prefix / "bin/demo-run");
  ASSERT_TRUE(install_wheel(wheel, prefix, options_for_target()).ok());
  const auto installed = tree(prefix);
  auto again = install_wheel(wheel, prefix, options_for_target());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(tree(prefix), installed);
}

// Another version replaces the installed one: the old RECORD's files go, the new ones come, and a
// replacement that fails leaves the old version exactly as it was.
TEST(InstallWheel, ReplacesAnotherVersionAllOrNothing) {
  TempDir dir;
  const fs::path prefix = make_prefix(dir.path() / "env");
  GenWheel v1;
  v1.files = {{"demo/__init__.py", "V = 1\n"}, {"demo/legacy/gone.py", "x\n"}, {"demo-1.0.data/data/share/demo/one.txt", "1\n"}};
  ASSERT_TRUE(install_wheel(v1.write(dir.path()), prefix, options_for_target()).ok());
  const auto installed_v1 = tree(prefix);
  GenWheel v2;
  v2.version = "2.0";
  v2.files = {{"demo/__init__.py", "V = 2\n"}, {"demo-2.0.data/scripts/demo-tool", "#!/bin/sh\n", 0100755}};
  const fs::path wheel2 = v2.write(dir.path());

  // A file of v2 that another package owns: refused, and v1 is back in place.
  fs::create_directories(prefix / "bin");
  std::ofstream(prefix / "bin/demo-tool") << "someone else's\n";
  WheelInstallOptions o = options_for_target();
  o.replaces = "lib/python3.11/site-packages/demo-1.0.dist-info";
  auto refused = install_wheel(wheel2, prefix, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "the wheel demo-2.0-py3-none-any.whl would overwrite 1 file(s) already in the prefix");
  fs::remove_all(prefix / "bin");  // the test's own
  EXPECT_EQ(tree(prefix), installed_v1);

  auto replaced = install_wheel(wheel2, prefix, o);
  ASSERT_TRUE(replaced.ok()) << replaced.error().to_string();
  EXPECT_EQ(slurp(prefix / "lib/python3.11/site-packages/demo/__init__.py"), "V = 2\n");
  EXPECT_FALSE(fs::exists(prefix / "lib/python3.11/site-packages/demo/legacy"));
  EXPECT_FALSE(fs::exists(prefix / "lib/python3.11/site-packages/demo-1.0.dist-info"));
  EXPECT_FALSE(fs::exists(prefix / "share")) << "folders the old data files leave empty go";
  EXPECT_TRUE(fs::exists(prefix / "lib/python3.11/site-packages")) << "a scheme folder stays";
  EXPECT_TRUE(fs::exists(prefix / "bin/demo-tool"));
  for (const auto& e : fs::directory_iterator(prefix)) EXPECT_FALSE(e.path().filename().string().starts_with(".envlock-wheel")) << e.path();
}

TEST(InstallWheel, RefusesToReplaceThroughARecordThatLeavesThePrefix) {
  TempDir dir;
  const fs::path prefix = make_prefix(dir.path() / "env");
  const fs::path victim = dir.path() / "victim.txt";
  std::ofstream(victim) << "keep me\n";
  const fs::path old = prefix / "lib/python3.11/site-packages/demo-0.9.dist-info";
  fs::create_directories(old);
  std::ofstream(old / "RECORD") << "../../../../victim.txt,,\ndemo-0.9.dist-info/RECORD,,\n";
  WheelInstallOptions o = options_for_target();
  o.replaces = "lib/python3.11/site-packages/demo-0.9.dist-info";
  GenWheel w;
  w.files = {{"demo/__init__.py", ""}};
  auto r = install_wheel(w.write(dir.path()), prefix, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(), "lib/python3.11/site-packages/demo-0.9.dist-info/RECORD: lists '../../../../victim.txt', outside the "
                                   "prefix: nothing is removed\nhint: the RECORD was altered; remove the distribution by hand");
  EXPECT_TRUE(fs::exists(victim));
  EXPECT_TRUE(fs::exists(old / "RECORD"));
  EXPECT_FALSE(fs::exists(prefix / "lib/python3.11/site-packages/demo"));
}

// Attack 23 F9: the replaced version's RECORD rows that name what the installer never writes —
// conda-meta/, an .envlock-* name, a file a conda record lists — are left in place and named
// (InstalledWheel::left_in_place), read from the prefix's conda-meta or from options.conda_files.
TEST(InstallWheel, ReplacingLeavesWhatNoPipPackageOwnsInPlace) {
  TempDir dir;
  const fs::path prefix = make_prefix(dir.path() / "env");
  fs::create_directories(prefix / "conda-meta");
  fs::create_directories(prefix / "bin");
  std::ofstream(prefix / "conda-meta/tool-1.0-0.json") << R"({"name": "tool", "version": "1.0", "build": "0", "build_number": 0,
    "files": ["bin/tool"]})";
  std::ofstream(prefix / "bin/tool") << "conda's\n";
  std::ofstream(prefix / ".envlock-note") << "envlock's\n";
  const fs::path old = prefix / "lib/python3.11/site-packages/demo-0.9.dist-info";
  fs::create_directories(old);
  std::ofstream(prefix / "lib/python3.11/site-packages/old.py") << "O = 1\n";
  std::ofstream(old / "RECORD") << "../../../bin/tool,,\n../../../conda-meta/tool-1.0-0.json,,\n../../../.envlock-note,,\nold.py,,\n"
                                   "../../../bin/absent,,\ndemo-0.9.dist-info/RECORD,,\n";
  WheelInstallOptions o = options_for_target();
  o.replaces = "lib/python3.11/site-packages/demo-0.9.dist-info";
  GenWheel w;
  w.files = {{"demo/__init__.py", ""}};
  const fs::path wheel = w.write(dir.path());
  auto r = install_wheel(wheel, prefix, o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->left_in_place, (std::vector<std::string>{"bin/tool (a file of conda package tool-1.0-0)",
                                                        "conda-meta/tool-1.0-0.json (the environment's records)",
                                                        ".envlock-note (envlock's own file)"}));
  EXPECT_EQ(slurp(prefix / "bin/tool"), "conda's\n");
  EXPECT_TRUE(fs::exists(prefix / "conda-meta/tool-1.0-0.json"));
  EXPECT_EQ(slurp(prefix / ".envlock-note"), "envlock's\n");
  EXPECT_FALSE(fs::exists(prefix / "lib/python3.11/site-packages/old.py")) << "the old version's own file goes";
  EXPECT_FALSE(fs::exists(old));

  // The owners given by the caller (read once for many wheels) are the ones asked.
  GenWheel w2;
  w2.version = "2.0";
  w2.files = {{"demo/__init__.py", "V = 2\n"}};
  std::ofstream(prefix / r->dist_info / "RECORD", std::ios::app) << "../../../bin/tool,,\n";
  const CondaOwnedFiles none;
  o.replaces = r->dist_info;
  o.conda_files = &none;
  auto again = install_wheel(w2.write(dir.path()), prefix, o);
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(again->left_in_place, std::vector<std::string>{});
  EXPECT_FALSE(fs::exists(prefix / "bin/tool")) << "no record owns it here: a pip file, removed";
}

TEST(InstallWheel, FileNamesAndPythonVersion) {
  auto w = parse_wheel_file_name("/x/torch-2.4.1+cu121-1build-cp311-cp311-linux_x86_64.whl");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->distribution, "torch");
  EXPECT_EQ(w->version, "2.4.1+cu121");
  EXPECT_EQ(w->build_tag, "1build");
  EXPECT_EQ(w->python_tag, "cp311");
  EXPECT_EQ(w->platform_tag, "linux_x86_64");
  auto bad = parse_wheel_file_name("demo-1.0.tar.gz");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().to_string(), "demo-1.0.tar.gz: not a wheel file name: it does not end in .whl\n"
                                     "hint: a wheel is named {distribution}-{version}(-{build tag})?-{python tag}-{abi tag}-{platform tag}.whl (PEP 427)");
  EXPECT_FALSE(parse_wheel_file_name("demo-1.0-x-py3-none-any.whl").ok());
  EXPECT_FALSE(parse_wheel_file_name("demo-py3-none-any.whl").ok());

  TempDir dir;
  EXPECT_EQ(prefix_python_xy(make_prefix(dir.path() / "a")).value(), "3.11");
  auto none = prefix_python_xy(dir.path() / "b");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind, ErrorKind::Usage);
  fs::create_directories(dir.path() / "a/lib/python3.12/site-packages");
  EXPECT_FALSE(prefix_python_xy(dir.path() / "a").ok());
  const WheelScheme s = conda_wheel_scheme("3.12", "My_Pkg");
  EXPECT_EQ(s.headers, "include/python3.12/My_Pkg");
  EXPECT_EQ(s.purelib, "lib/python3.12/site-packages");
}

// installed_wheel_sha256(), which install (same_build) and verify -l trust: 64 hex digits of a
// regular file only. A FIFO named ENVLOCK_SHA256 blocked both forever (an ifstream), and any text
// there was taken for a hash.
TEST(InstalledWheelSha256, ReadsOnlyARegularFileOf64HexDigits) {
  TempDir dir;
  const fs::path di = dir.path() / "demo-1.0.dist-info";
  fs::create_directories(di);
  const std::string hex(64, 'a');
  EXPECT_EQ(installed_wheel_sha256(di), "");
  testing::spit(di / "direct_url.json", R"({"archive_info": {"hashes": {"sha256": ")" + std::string(64, 'B') + R"("}}, "url": "file:///w.whl"})");
  EXPECT_EQ(installed_wheel_sha256(di), std::string(64, 'b'));
  testing::spit(di / "ENVLOCK_SHA256", hex + "\r\n");
  EXPECT_EQ(installed_wheel_sha256(di), hex) << "ENVLOCK_SHA256 first";
  testing::spit(di / "ENVLOCK_SHA256", "not a hash\n");
  EXPECT_EQ(installed_wheel_sha256(di), "");
  testing::spit(di / "ENVLOCK_SHA256", hex.substr(0, 63) + "\n");
  EXPECT_EQ(installed_wheel_sha256(di), "");
  fs::remove(di / "ENVLOCK_SHA256");
  ASSERT_EQ(::mkfifo((di / "ENVLOCK_SHA256").c_str(), 0644), 0);
  EXPECT_EQ(installed_wheel_sha256(di), "") << "a FIFO is not read (it blocked)";
  fs::remove(di / "ENVLOCK_SHA256");
  testing::spit(di / "direct_url.json", R"({"archive_info": {"hash": "sha256=xyz"}, "url": "file:///w.whl"})");
  EXPECT_EQ(installed_wheel_sha256(di), "");
}

// ---------------------------------------------------------------------------------------------
// uninstall_distribution(): what `pip uninstall` removes (Debian's pip 23 as the oracle)

/// Two prefixes (bin/python3.11 and a file of another project in site-packages, as a conda prefix
/// has) with `wheel` installed by install_wheel() and compiled by Debian's python 3.11
/// (compileall, optimisation level 0: what an import writes).
bool have_pip() { return testing::run_command("/usr/bin/python3 -m pip --version").exit_code == 0; }

TEST(UninstallDistribution, RemovesWhatPipUninstallRemoves) {
  const auto wheels = debian_wheels();
  if (wheels.empty()) GTEST_SKIP() << "no wheels in " << kDebianWheels << " (apt-get install python3-pip-whl python3-setuptools-whl python3-wheel-whl)";
  if (!have_pip()) GTEST_SKIP() << "Debian's pip is absent (apt-get install python3-pip): no oracle to compare with";
  for (const fs::path& wheel : wheels) {
    if (wheel.filename().string().starts_with("pip-")) continue;  // pip would uninstall the pip running it
    TempDir dir;
    std::string dist_info;
    for (const char* side : {"envlock", "pip"}) {
      const fs::path prefix = make_prefix(dir.path() / side);
      fs::create_directories(prefix / "bin");
      testing::spit(prefix / "bin/python3.11", "#!/bin/sh\n");
      testing::spit(prefix / "lib/python3.11/site-packages/other.pth", "/opt/other\n");
      auto installed = install_wheel(wheel, prefix, options_for_target());
      ASSERT_TRUE(installed.ok()) << installed.error().to_string();
      dist_info = installed->dist_info;
      auto compiled = testing::run_command("/usr/bin/python3 -m compileall -q '" + (prefix / "lib/python3.11/site-packages").string() + "'");
      ASSERT_EQ(compiled.exit_code, 0) << compiled.out << compiled.err;
    }
    const fs::path ours = dir.path() / "envlock", theirs = dir.path() / "pip";
    const auto before = tree(ours);
    auto removed = uninstall_distribution(ours, dist_info, "3.11");
    ASSERT_TRUE(removed.ok()) << removed.error().to_string();
    EXPECT_EQ(removed->left_in_place, std::vector<std::string>{});
    const std::string project = wheel.filename().string().substr(0, wheel.filename().string().find('-'));
    auto pip = testing::run_command("cd '" + theirs.string() + "' && PYTHONPATH='" + (theirs / "lib/python3.11/site-packages").string() +
                                    "' PIP_DISABLE_PIP_VERSION_CHECK=1 /usr/bin/python3 -m pip uninstall -y --break-system-packages " +
                                    project);
    ASSERT_EQ(pip.exit_code, 0) << pip.out << pip.err;
    ASSERT_NE(pip.out.find("Successfully uninstalled"), std::string::npos) << pip.out;
    const auto left = tree(ours), pips = tree(theirs);
    for (const auto& [path, kind] : left)
      EXPECT_TRUE(pips.count(path)) << wheel << ": envlock leaves " << path << " (" << kind << "), pip removes it";
    for (const auto& [path, kind] : pips)
      EXPECT_TRUE(left.count(path)) << wheel << ": pip leaves " << path << " (" << kind << "), envlock removes it";
    EXPECT_EQ(left, pips) << wheel;
    // Only what was there before and is left is the other project's (and their bytecode).
    const auto after = tree(ours);
    EXPECT_EQ(after.count("bin/python3.11"), 1u);
    EXPECT_EQ(after.count("lib/python3.11/site-packages/other.pth"), 1u);
    auto files = [](const std::map<std::string, std::string>& t) {
      return static_cast<std::size_t>(std::count_if(t.begin(), t.end(), [](const auto& e) { return !e.second.starts_with("dir "); }));
    };
    EXPECT_EQ(removed->files, files(before) - files(after)) << "every file removed is counted";
  }
}

// A RECORD row that leads outside the prefix: nothing is removed, the RECORD is named.
TEST(UninstallDistribution, ARecordRowOutsideThePrefixRemovesNothing) {
  TempDir dir;
  const fs::path prefix = make_prefix(dir.path() / "env");
  GenWheel g;
  g.files = {{"demo/__init__.py", "X = 1\n"}};
  auto installed = install_wheel(g.write(dir.path()), prefix, options_for_target());
  ASSERT_TRUE(installed.ok()) << installed.error().to_string();
  const fs::path record = prefix / installed->dist_info / "RECORD";
  testing::spit(record, slurp(record) + "../../../../outside.txt,,\n");
  testing::spit(dir.path() / "outside.txt", "keep\n");
  const auto before = tree(prefix);
  auto removed = uninstall_distribution(prefix, installed->dist_info, "3.11");
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.error().kind, ErrorKind::Integrity);
  EXPECT_EQ(removed.error().where, installed->dist_info + "/RECORD");
  EXPECT_EQ(removed.error().message, "lists '../../../../outside.txt', outside the prefix: nothing is removed");
  EXPECT_EQ(tree(prefix), before);
  EXPECT_EQ(slurp(dir.path() / "outside.txt"), "keep\n");
}

// ---------------------------------------------------------------------------------------------
// The unpacked-wheel cache (WheelInstallOptions::unpacked_cache, uv's archive cache)

WheelInstallOptions cached_options(const fs::path& wheel, const fs::path& cache) {
  WheelInstallOptions o = options_for_target();
  o.unpacked_cache = cache;
  o.archive_sha256 = hash_file(wheel, HashAlgorithm::Sha256).value();
  return o;
}

ino_t inode_of(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return 0;
  return st.st_ino;
}

// Filled by the first install, linked from by the next; both trees are an install's without the
// cache, byte for byte (and installer's, where it is there).
TEST(UnpackedWheelCache, ReuseLinksTheCachedFilesAndInstallsTheSameTree) {
  TempDir dir;
  const fs::path wheel = data_wheel().write(dir.path());
  const fs::path cache = dir.path() / "cache";
  const WheelInstallOptions o = cached_options(wheel, cache);
  WheelInstallOptions plain = options_for_target();
  plain.archive_sha256 = o.archive_sha256;
  const fs::path without = make_prefix(dir.path() / "without");
  ASSERT_TRUE(install_wheel(wheel, without, plain).ok());
  const fs::path first = make_prefix(dir.path() / "first");
  auto a = install_wheel(wheel, first, o);
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  const fs::path entry = cache / o.archive_sha256;
  EXPECT_TRUE(fs::is_regular_file(entry / "MEMBERS"));
  const fs::path second = make_prefix(dir.path() / "second");
  auto b = install_wheel(wheel, second, o);
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  EXPECT_EQ(tree(first), tree(without));
  EXPECT_EQ(tree(second), tree(without));
  const std::string site = "lib/python3.11/site-packages/";
  for (const fs::path& prefix : {first, second}) {
    EXPECT_EQ(inode_of(prefix / site / "demo/tool.py"), inode_of(entry / "files/demo/tool.py"));
    EXPECT_EQ(inode_of(prefix / "bin/demo-sh"), inode_of(entry / "files/demo-1.0.data/scripts/demo-sh"));
    EXPECT_EQ(inode_of(prefix / site / "demo-1.0.dist-info/METADATA"), inode_of(entry / "files/demo-1.0.dist-info/METADATA"));
    // What is the prefix's own is written new: a `#!python` script, RECORD, INSTALLER.
    EXPECT_NE(inode_of(prefix / "bin/demo-run"), inode_of(entry / "files/demo-1.0.data/scripts/demo-run"));
    EXPECT_NE(inode_of(prefix / site / "demo-1.0.dist-info/RECORD"), inode_of(entry / "files/demo-1.0.dist-info/RECORD"));
  }
  EXPECT_EQ(slurp(entry / "files/demo-1.0.data/scripts/demo-run"), "#!python\nimport demo\nprint(demo.VALUE)\n");
  EXPECT_EQ(a->files.size(), b->files.size());
  for (const auto& e : fs::directory_iterator(cache)) EXPECT_FALSE(e.path().filename().string().starts_with(".")) << e.path();
}

TEST(UnpackedWheelCache, InstallsDebianWheelsAsInstallerInstallsThem) {
  const auto wheels = debian_wheels();
  if (wheels.empty()) GTEST_SKIP() << "no wheels in " << kDebianWheels;
  if (!have_oracle()) GTEST_SKIP() << "python3-installer is absent (apt-get install python3-installer): no oracle to compare with";
  TempDir dir;
  for (const fs::path& wheel : wheels) {
    WheelInstallOptions o = cached_options(wheel, dir.path() / "cache");
    o.archive_sha256.clear();  // hashed by install_wheel() for its key
    expect_same_as_oracle(wheel, o);  // fills the entry
    expect_same_as_oracle(wheel, o);  // links from it
    EXPECT_TRUE(fs::is_regular_file(dir.path() / "cache" / hash_file(wheel, HashAlgorithm::Sha256).value() / "MEMBERS")) << wheel;
  }
}

// A cache entry whose file is gone, truncated (or, with verify_unpacked_hashes, altered at its
// size) is unpacked again from the wheel, never linked from.
TEST(UnpackedWheelCache, ADamagedEntryIsUnpackedAgain) {
  TempDir dir;
  const fs::path wheel = data_wheel().write(dir.path());
  const fs::path cache = dir.path() / "cache";
  WheelInstallOptions o = cached_options(wheel, cache);
  const fs::path entry = cache / o.archive_sha256;
  const fs::path tool = entry / "files/demo/tool.py";
  const std::string site = "lib/python3.11/site-packages/";
  ASSERT_TRUE(install_wheel(wheel, make_prefix(dir.path() / "p0"), o).ok());
  const auto expected = tree(dir.path() / "p0");
  int n = 1;
  auto install_again = [&](const std::string& why) {
    const fs::path prefix = make_prefix(dir.path() / ("p" + std::to_string(n++)));
    auto r = install_wheel(wheel, prefix, o);
    ASSERT_TRUE(r.ok()) << why << ": " << r.error().to_string();
    EXPECT_EQ(tree(prefix), expected) << why;
    EXPECT_EQ(slurp(tool), "def main():\n    return 0\n") << why;
    EXPECT_EQ(inode_of(prefix / site / "demo/tool.py"), inode_of(tool)) << why;
  };
  fs::remove(tool);
  install_again("a file removed");
  ::truncate(tool.c_str(), 3);
  install_again("a file truncated");
  fs::remove(entry / "MEMBERS");
  install_again("MEMBERS removed");
  testing::spit(entry / "files/demo-1.0.dist-info/WHEEL", std::string(slurp(entry / "files/demo-1.0.dist-info/WHEEL").size(), 'x'));
  install_again("WHEEL unreadable at its size");
  // An edit that keeps the size passes the size check (as the package cache's Files check); the
  // hash check finds it.
  fs::remove(tool);
  testing::spit(tool, "def main():\n    return 1\n");
  fs::permissions(tool, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  o.verify_unpacked_hashes = true;
  install_again("a file altered at its size, hashes checked");
}

// A cache on another file system than the prefix: the members are copied, the same tree.
TEST(UnpackedWheelCache, ACacheOnAnotherFileSystemIsCopiedFrom) {
  TempDir dir;
  const fs::path shm = "/dev/shm";
  struct stat a {}, b {};
  if (::stat(shm.c_str(), &a) != 0 || ::stat(dir.path().c_str(), &b) != 0 || a.st_dev == b.st_dev || ::access(shm.c_str(), W_OK) != 0)
    GTEST_SKIP() << "no writable " << shm << " on another file system than " << dir.path();
  const fs::path cache = shm / ("envlock-wheel-test-cache-" + std::to_string(::getpid()));
  fs::remove_all(cache);
  const fs::path wheel = data_wheel().write(dir.path());
  const WheelInstallOptions o = cached_options(wheel, cache);
  const fs::path without = make_prefix(dir.path() / "without");
  WheelInstallOptions plain = options_for_target();
  plain.archive_sha256 = o.archive_sha256;
  ASSERT_TRUE(install_wheel(wheel, without, plain).ok());
  for (const char* name : {"first", "second"}) {
    const fs::path prefix = make_prefix(dir.path() / name);
    auto r = install_wheel(wheel, prefix, o);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(tree(prefix), tree(without)) << name;
    struct stat st {};
    ::lstat((prefix / "lib/python3.11/site-packages/demo/tool.py").c_str(), &st);
    EXPECT_EQ(st.st_nlink, 1u) << name;
  }
  EXPECT_TRUE(fs::is_regular_file(cache / o.archive_sha256 / "MEMBERS"));
  fs::remove_all(cache);
}

// Once the entry is there, an install reads nothing of the .whl: one made unreadable (garbage at
// its path) installs the same tree from the cache.
TEST(UnpackedWheelCache, ASecondInstallReadsNothingFromTheWheel) {
  TempDir dir;
  const fs::path wheel = data_wheel().write(dir.path());
  const WheelInstallOptions o = cached_options(wheel, dir.path() / "cache");
  const fs::path first = make_prefix(dir.path() / "first");
  ASSERT_TRUE(install_wheel(wheel, first, o).ok());
  testing::spit(wheel, "not a zip\n");
  const fs::path second = make_prefix(dir.path() / "second");
  auto r = install_wheel(wheel, second, o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(tree(second), tree(first));
  // Without the cache, the same call reads the .whl and refuses it.
  WheelInstallOptions plain = o;
  plain.unpacked_cache.clear();
  EXPECT_FALSE(install_wheel(wheel, make_prefix(dir.path() / "third"), plain).ok());
}

// A wheel that fails RECORD's check is refused as without the cache, and leaves no entry.
TEST(UnpackedWheelCache, AWheelThatFailsItsRecordLeavesNoEntry) {
  TempDir dir;
  GenWheel w = data_wheel();
  w.record_override["demo/tool.py"] = "demo/tool.py," + record_hash("something else") + ",25";
  const fs::path wheel = w.write(dir.path());
  const fs::path cache = dir.path() / "cache";
  const fs::path prefix = make_prefix(dir.path() / "env");
  auto r = install_wheel(wheel, prefix, cached_options(wheel, cache));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            wheel.string() + ": member 'demo/tool.py' does not match its RECORD row\n"
                             "  expected sha256 " + hash_bytes("something else", HashAlgorithm::Sha256) + ", 25 bytes\n"
                             "  actual   sha256 " + hash_bytes("def main():\n    return 0\n", HashAlgorithm::Sha256) + ", 25 bytes\n"
                             "hint: the wheel was altered or damaged; download it again and check its sha256");
  EXPECT_TRUE(fs::is_empty(cache));
  EXPECT_EQ(tree(prefix), tree(make_prefix(dir.path() / "fresh")));
}

}  // namespace
}  // namespace envlock
