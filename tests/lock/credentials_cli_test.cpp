// No command prints a credential, even when an error quotes the manifest line that holds one
// (a newcomer found `channel ... is listed twice` echoing `user:secret@` in its excerpt).
#include <gtest/gtest.h>

#include "channel/corpus_channel.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using testing::envlock_cmd;
using testing::run_command;
using testing::spit;
using testing::TempDir;

void expect_no_secret(const std::string& manifest_text) {
  TempDir tmp{"creds"};
  spit(tmp.path() / "envlock.yaml", manifest_text);
  for (const char* json : {"", " --json"}) {
    auto r = run_command(envlock_cmd() + " lock -f '" + (tmp.path() / "envlock.yaml").string() + "'" + json);
    EXPECT_NE(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find("secret"), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find("secret"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("envlock.yaml:"), std::string::npos) << "the error still says where: " << r.err;
  }
}

TEST(Credentials, ManifestErrorExcerptsAreRedacted) {
  expect_no_secret("name: x\nchannels:\n  - https://user:secret@127.0.0.1:9/x\n  - https://user:secret@127.0.0.1:9/x\n"
                   "dependencies: [python]\n");
  expect_no_secret("name: x\nchannels: [https://127.0.0.1:9/t/secret-token/x]\nenvironments:\n  a:\n"
                   "    channels: [https://127.0.0.1:9/t/secret-token/x, https://127.0.0.1:9/t/secret-token/x]\n"
                   "    dependencies: [python]\n");
  expect_no_secret("name: x\nchannels: [https://127.0.0.1:9/x]\ndependencies:\n"
                   "  - \"https://u:secret@127.0.0.1:9/x::numpy >=>2\"\n");
}

}  // namespace
}  // namespace envlock
