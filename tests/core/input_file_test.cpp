// read_input_file and starts_like_yaml_map (envlock/input_file.hpp): the one reader of the files a
// user, a manifest or a pull request names as input. A regular file is read whole; a FIFO (without
// blocking), a device, a folder, anything in /proc, /sys or /dev, and links to any of those are
// refused with the reason; a file over the cap is refused, counted while reading. conda
// (conda.common.serialize yaml_safe_load of open(path)) and pixi (fs::read_to_string) open a
// manifest or lockfile with a plain open() and would block on a FIFO or read /dev/zero without end;
// envlock is stricter because a manifest (`base: {lockfile: ...}`) or a pull request's committed
// link can name any path of the machine.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "envlock/input_file.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;

class InputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("envlock-input-file-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }
  fs::path link(const std::string& name, const fs::path& target) const {
    fs::create_symlink(target, dir_ / name);
    return dir_ / name;
  }
  fs::path dir_;
};

// The fields of a result, in one string, so each case asserts all of them at once.
std::string shown(const InputFile& f) {
  const char* problem = "None";
  switch (f.problem) {
    case InputFile::Problem::None: break;
    case InputFile::Problem::Open: problem = "Open"; break;
    case InputFile::Problem::Refused: problem = "Refused"; break;
    case InputFile::Problem::TooLarge: problem = "TooLarge"; break;
    case InputFile::Problem::Read: problem = "Read"; break;
  }
  return std::string(problem) + " errno=" + std::to_string(f.error_number) + " message='" + f.message + "' text='" + f.text + "'";
}

TEST_F(InputFileTest, ARegularFileIsReadWhole) {
  const std::string text = "version: 1\nenvironments: {}\n";
  EXPECT_EQ(shown(read_input_file(write("envlock.lock", text), 1024)), "None errno=0 message='' text='" + text + "'");
  // An empty file is a file too.
  EXPECT_EQ(shown(read_input_file(write("empty.lock", ""), 1024)), "None errno=0 message='' text=''");
  // A link to a regular file of the project is read as the file.
  EXPECT_EQ(shown(read_input_file(link("link.lock", dir_ / "envlock.lock"), 1024)), "None errno=0 message='' text='" + text + "'");
}

TEST_F(InputFileTest, AMissingFileIsAnOpenProblemWithItsErrno) {
  EXPECT_EQ(shown(read_input_file(dir_ / "nothing.lock", 1024)), "Open errno=" + std::to_string(ENOENT) + " message='' text=''");
  // A dangling link is a missing file, as open() sees it.
  EXPECT_EQ(shown(read_input_file(link("dangling.lock", dir_ / "gone"), 1024)),
            "Open errno=" + std::to_string(ENOENT) + " message='' text=''");
}

// A FIFO with no writer: open() without O_NONBLOCK blocks for ever (a CI job hung until its
// timeout). The read runs on another thread, so a regression fails here instead of hanging the
// suite: the test then opens the FIFO for writing to free the thread.
TEST_F(InputFileTest, AFifoIsRefusedWithoutBlocking) {
  const fs::path fifo = dir_ / "envlock.lock";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path via_link = link("link.lock", fifo);
  for (const fs::path& p : {fifo, via_link}) {
    auto read = std::async(std::launch::async, [p] { return read_input_file(p, 1024); });
    if (read.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      ADD_FAILURE() << p << ": read_input_file blocked on a FIFO";
      const int fd = ::open(fifo.c_str(), O_RDWR);  // a writer: the blocked open returns
      read.wait();
      ::close(fd);
      continue;
    }
    EXPECT_EQ(shown(read.get()), "Refused errno=0 message='is a FIFO, not a regular file' text=''") << p;
  }
}

// /dev/zero never ends; /dev/stdin and other device nodes are no project files. Refused before
// a byte is read, by their real path (links followed).
TEST_F(InputFileTest, DevicesAndTheDevFolderAreRefused) {
  const std::string in_dev = "Refused errno=0 message='is in /dev, not a file of a project; it is not read' text=''";
  EXPECT_EQ(shown(read_input_file("/dev/zero", 1024)), in_dev);
  EXPECT_EQ(shown(read_input_file("/dev/null", 1024)), in_dev);
  EXPECT_EQ(shown(read_input_file(link("zero.lock", "/dev/zero"), 1024)), in_dev);
  EXPECT_EQ(shown(read_input_file(link("null.lock", "/dev/null"), 1024)), in_dev);
}

// /proc/self/environ is a regular file that holds every secret of the process (attack 20 B0: a
// base lockfile named it and its text went into the CI log). Anything in /proc or /sys, directly
// or through a link, is refused.
TEST_F(InputFileTest, ProcAndSysFilesAreRefused) {
  const std::string in_proc = "Refused errno=0 message='is in /proc, not a file of a project; it is not read' text=''";
  EXPECT_EQ(shown(read_input_file("/proc/self/environ", 1 << 20)), in_proc);
  EXPECT_EQ(shown(read_input_file("/proc/self/status", 1 << 20)), in_proc);
  EXPECT_EQ(shown(read_input_file(link("environ.lock", "/proc/self/environ"), 1 << 20)), in_proc);
  // /proc/self is itself a link (to /proc/<pid>): the real path is still in /proc.
  EXPECT_EQ(shown(read_input_file(link("proc", "/proc") / "self" / "cmdline", 1 << 20)), in_proc);
  if (fs::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
    EXPECT_EQ(shown(read_input_file(link("sys.lock", "/sys/kernel/mm/transparent_hugepage/enabled"), 1 << 20)),
              "Refused errno=0 message='is in /sys, not a file of a project; it is not read' text=''");
  }
}

TEST_F(InputFileTest, AFolderIsRefused) {
  fs::create_directories(dir_ / "envlock.lock");
  const std::string folder = "Refused errno=0 message='is a directory, not a regular file' text=''";
  EXPECT_EQ(shown(read_input_file(dir_ / "envlock.lock", 1024)), folder);
  EXPECT_EQ(shown(read_input_file(link("link.lock", dir_ / "envlock.lock"), 1024)), folder);
}

// The cap is inclusive; one byte over it is TooLarge, whatever fstat says (the size is counted
// while reading, so a file growing under the reader is caught too). A sparse file of 1 GiB is
// refused by its size at once, nothing read. Each caller names its cap in its message: for
// envlock.lock, "is larger than 64 MiB" (Lockfile::read; tests/lockfile LockfileRead.*), for a
// manifest 16 MiB.
TEST_F(InputFileTest, AFileOverTheCapIsRefused) {
  EXPECT_EQ(shown(read_input_file(write("ten.lock", "0123456789"), 10)), "None errno=0 message='' text='0123456789'");
  EXPECT_EQ(shown(read_input_file(write("eleven.lock", "0123456789a"), 10)), "TooLarge errno=0 message='' text=''");
  const fs::path sparse = dir_ / "sparse.lock";
  {
    std::ofstream touch(sparse);
  }
  fs::resize_file(sparse, std::uintmax_t{1} << 30);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(shown(read_input_file(sparse, 64u << 20)), "TooLarge errno=0 message='' text=''");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(shown(read_input_file(link("sparse-link.lock", sparse), 64u << 20)), "TooLarge errno=0 message='' text=''");
}

// A UTF-8 byte order mark (Windows editors write one) is kept in the text: the YAML readers skip
// it, and a manifest editor writes it back (issue 21, attack 21 F1). The file still looks like a
// YAML map.
TEST_F(InputFileTest, AByteOrderMarkIsKept) {
  const std::string text = "\xef\xbb\xbfversion: 1\n";
  const InputFile f = read_input_file(write("bom.lock", text), 1024);
  EXPECT_EQ(shown(f), "None errno=0 message='' text='" + text + "'");
  EXPECT_TRUE(starts_like_yaml_map(f.text));
}

// The shape check that decides whether a parse error may quote the file's text.
TEST(StartsLikeYamlMap, KeyValueFilesPassAndOthersDoNot) {
  for (const char* yes : {"version: 1\n", "\xef\xbb\xbfversion: 1\n", "# comment\n---\nname: x\n", "%YAML 1.2\n---\nkey:\n",
                          "\"quoted key\": 1\n", "'single': 1\n", "{a: 1}\n", "", "# only a comment\n", "  indented: x\r\n",
                          "key:\tvalue\n"}) {
    EXPECT_TRUE(starts_like_yaml_map(yes)) << yes;
  }
  for (const char* no : {"root:x:0:0:root:/root:/bin/bash\n", "ghp_0123456789abcdef\n", "AWS_SECRET=abc\n",
                         "-----BEGIN OPENSSH PRIVATE KEY-----\n", "- a list\n", "key:value\n", "\"unterminated: 1\n",
                         "PATH=/usr/bin\0HOME=/root\0"}) {
    EXPECT_FALSE(starts_like_yaml_map(no)) << no;
  }
}

}  // namespace
}  // namespace envlock
