// Reference runs: metric extraction, the command's environment, every failure verdict, recording
// into a lockfile, and verification on an existing or throwaway prefix.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "envlock/reference.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;

TEST(ExtractMetric, JsonWholeOutputNestedAndArrays) {
  EXPECT_DOUBLE_EQ(*extract_metric("json:loss", R"({"loss": 0.25, "acc": 0.9})"), 0.25);
  EXPECT_DOUBLE_EQ(*extract_metric("json:metrics.val.loss", R"({"metrics": {"val": {"loss": 1.5}}})"), 1.5);
  EXPECT_DOUBLE_EQ(*extract_metric("json:history.1", R"({"history": [3, 2, 1]})"), 2.0);
  EXPECT_DOUBLE_EQ(*extract_metric("loss", R"({"loss": "0.125"})"), 0.125);  // bare path, numeric string
}

TEST(ExtractMetric, JsonLastMatchingLineAmongLogs) {
  const std::string out = "epoch 1\n{\"loss\": 0.9}\nepoch 2\n{\"loss\": 0.5}\n{\"other\": 1}\ndone\n";
  EXPECT_DOUBLE_EQ(*extract_metric("json:loss", out), 0.5);
}

TEST(ExtractMetric, RegexLastMatchFirstGroup) {
  const std::string out = "step 1 loss=0.80\nstep 2 loss=0.42\n";
  EXPECT_DOUBLE_EQ(*extract_metric("regex:loss=([0-9.]+)", out), 0.42);
  EXPECT_DOUBLE_EQ(*extract_metric("regex:[0-9]+\\.[0-9]+", "value 3.5\n"), 3.5);  // no group: whole match
}

TEST(ExtractMetric, ClearErrors) {
  auto missing = extract_metric("json:loss", "{\"acc\": 1}\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "no JSON object in the output has the key 'loss'");
  EXPECT_EQ(missing.error().where, "metric json:loss");
  auto not_number = extract_metric("json:loss", R"({"loss": [1]})");
  ASSERT_FALSE(not_number.ok());
  EXPECT_EQ(not_number.error().message, "the value at 'loss' is not a number: [1]");
  auto no_match = extract_metric("regex:loss=([0-9.]+)", "nothing here");
  ASSERT_FALSE(no_match.ok());
  EXPECT_EQ(no_match.error().message, "no line of the output matches the regular expression");
  auto bad = extract_metric("regex:loss=([0-9.]+", "loss=1");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("invalid regular expression", 0), 0u) << bad.error().message;
  EXPECT_FALSE(extract_metric("regex:loss=(\\w+)", "loss=abc").ok());
}

TEST(ExtractMetric, RegexIsMatchedLineByLineOnABoundedExcerpt) {
  // A 100,000-digit match would overflow std::regex's recursion: each line's first 4 KiB only.
  const std::string huge = "loss=" + std::string(100000, '7') + "\nloss=0.5\n";
  EXPECT_DOUBLE_EQ(*extract_metric("regex:loss=([0-9.]+)", huge), 0.5);
  EXPECT_DOUBLE_EQ(*extract_metric("regex:^loss=([0-9.]+)$", "a\nloss=0.25\nb\n"), 0.25);  // ^ and $ per line
}

// A prefix with bin/ tools and an activation script, and a lockfile beside it.
class ReferenceRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("envlock-ref-" + std::to_string(getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    make_prefix(dir_ / "env");
    setenv("ENVLOCK_TEST_SECRET", "leaked", 1);
  }
  void TearDown() override {
    unsetenv("ENVLOCK_TEST_SECRET");
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_);
  }

  static void script(const fs::path& p, const std::string& body) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "#!/bin/sh\n" << body;
    fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  }
  // bin/train prints the metric from $ENVLOCK_LOSS, set by the activation script; it also
  // reports whether the caller's secret leaked in.
  static void make_prefix(const fs::path& prefix) {
    fs::create_directories(prefix / "conda-meta");
    script(prefix / "etc/conda/activate.d/loss.sh", "export ENVLOCK_LOSS=0.42\n");
    script(prefix / "bin/train",
           "echo \"training in $CONDA_PREFIX\" >&2\n"
           "echo \"{\\\"loss\\\": $ENVLOCK_LOSS, \\\"secret\\\": \\\"${ENVLOCK_TEST_SECRET:-none}\\\"}\"\n");
  }

  ReferenceRunOptions options() {
    ReferenceRunOptions o;
    o.prefix = dir_ / "env";
    o.working_directory = dir_;
    o.environment_name = "train";
    o.timeout_s = 20;
    return o;
  }

  static ReferenceRun ref(const std::string& command, std::optional<double> recorded = std::nullopt, double tolerance = 0.01) {
    ReferenceRun r;
    r.command = command;
    r.metric = "json:loss";
    r.tolerance = tolerance;
    r.recorded_value = recorded;
    return r;
  }

  fs::path write_lockfile(std::optional<double> recorded, const std::string& command = "train") {
    Lockfile lf;
    lf.manifest_hash = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    LockedEnvironment env;
    env.name = "train";
    env.requested = {"python 3.12.*"};
    LockedPlatform lp;
    lp.platform = "linux-64";
    lp.channels = {"https://conda.anaconda.org/conda-forge"};
    env.platforms["linux-64"] = lp;
    ReferenceRun r = ref(command, recorded);
    if (recorded) r.recorded_host = {{"gpu_count", "8"}, {"driver_version", "550.54.14"}};
    env.reference = r;
    lf.environments["train"] = env;
    const fs::path path = dir_ / "envlock.lock";
    EXPECT_TRUE(lf.write(path).ok());
    return path;
  }

  fs::path dir_;
};

TEST_F(ReferenceRunTest, EnvironmentIsTheEnvironmentsNotTheCallers) {
  ReferenceRunOptions o = options();
  o.getenv = [](const std::string& name) -> std::optional<std::string> {
    if (name == "HOME") return "/home/someone";
    if (name == "ENVLOCK_TEST_SECRET") return "leaked";
    if (name == "CUDA_VISIBLE_DEVICES") return "1";
    return std::nullopt;
  };
  auto env = reference_environment(o);
  const std::string prefix = (dir_ / "env").string();
  EXPECT_NE(std::find(env.begin(), env.end(), "PATH=" + prefix + "/bin:/usr/local/bin:/usr/bin:/bin"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "CONDA_PREFIX=" + prefix), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "CONDA_DEFAULT_ENV=train"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "HOME=/home/someone"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "CUDA_VISIBLE_DEVICES=1"), env.end());
  EXPECT_EQ(std::find(env.begin(), env.end(), "ENVLOCK_TEST_SECRET=leaked"), env.end());
  EXPECT_TRUE(std::is_sorted(env.begin(), env.end()));
  o.keep_env = {"ENVLOCK_TEST_SECRET"};
  env = reference_environment(o);
  EXPECT_NE(std::find(env.begin(), env.end(), "ENVLOCK_TEST_SECRET=leaked"), env.end());
}

TEST_F(ReferenceRunTest, MeasuresInsideTheActivatedEnvironment) {
  const ReferenceOutcome o = run_reference(ref("train"), options());
  EXPECT_EQ(o.status, ReferenceStatus::Measured) << o.message << "\n" << o.output_tail;
  ASSERT_TRUE(o.value.has_value());
  EXPECT_DOUBLE_EQ(*o.value, 0.42);
  EXPECT_NE(o.output_tail.find("\"secret\": \"none\""), std::string::npos) << o.output_tail;  // caller env removed
  EXPECT_NE(o.output_tail.find("training in " + (dir_ / "env").string()), std::string::npos);
}

TEST_F(ReferenceRunTest, KeptVariablePassesThrough) {
  ReferenceRunOptions opts = options();
  opts.keep_env = {"ENVLOCK_TEST_SECRET"};
  const ReferenceOutcome o = run_reference(ref("train"), opts);
  EXPECT_NE(o.output_tail.find("\"secret\": \"leaked\""), std::string::npos) << o.output_tail;
}

TEST_F(ReferenceRunTest, WithinAndOutsideTolerance) {
  ReferenceOutcome pass = run_reference(ref("train", 0.415, 0.01), options());
  EXPECT_EQ(pass.status, ReferenceStatus::Pass) << pass.message;
  EXPECT_EQ(pass.message, "json:loss = 0.42, recorded 0.415 (difference 0.005 <= tolerance 0.01)");
  ReferenceOutcome fail = run_reference(ref("train", 0.5, 0.01), options());
  EXPECT_EQ(fail.status, ReferenceStatus::Fail);
  EXPECT_EQ(fail.message, "json:loss = 0.42, recorded 0.5 (difference 0.08 > tolerance 0.01)");
  EXPECT_FALSE(fail.ok());
}

TEST_F(ReferenceRunTest, MissingCommand) {
  const ReferenceOutcome o = run_reference(ref("no-such-trainer --smoke"), options());
  EXPECT_EQ(o.status, ReferenceStatus::CommandMissing) << o.message;
  EXPECT_EQ(o.exit_status, 127);
  EXPECT_NE(o.hint.find((dir_ / "env/bin").string()), std::string::npos);
}

TEST_F(ReferenceRunTest, FailingCommand) {
  const ReferenceOutcome o = run_reference(ref("echo 'CUDA out of memory' >&2; exit 3"), options());
  EXPECT_EQ(o.status, ReferenceStatus::CommandFailed);
  EXPECT_EQ(o.message, "the command exited with status 3");
  EXPECT_NE(o.output_tail.find("CUDA out of memory"), std::string::npos);
}

TEST_F(ReferenceRunTest, CrashingCommand) {
  const ReferenceOutcome o = run_reference(ref("kill -SEGV $$"), options());
  EXPECT_EQ(o.status, ReferenceStatus::Crashed) << o.message;
  EXPECT_EQ(o.message, "the command was killed by SIGSEGV");
}

TEST_F(ReferenceRunTest, HangingCommandIsKilledAtTheTimeout) {
  ReferenceRunOptions opts = options();
  opts.timeout_s = 1;
  const ReferenceOutcome o = run_reference(ref("echo started; sleep 60"), opts);
  EXPECT_EQ(o.status, ReferenceStatus::TimedOut);
  EXPECT_EQ(o.message, "the command did not finish within 1 s and was killed");
  EXPECT_NE(o.output_tail.find("started"), std::string::npos);
}

TEST_F(ReferenceRunTest, BackgroundChildDoesNotHoldTheRunOpen) {
  ReferenceRunOptions opts = options();
  opts.timeout_s = 60;
  const ReferenceOutcome o = run_reference(ref("sleep 60 & echo '{\"loss\": 1}'"), opts);
  EXPECT_EQ(o.status, ReferenceStatus::Measured) << o.message;
  EXPECT_DOUBLE_EQ(o.value.value_or(0), 1.0);
}

TEST_F(ReferenceRunTest, NoMetricInTheOutput) {
  const ReferenceOutcome o = run_reference(ref("echo 'accuracy 0.9'"), options());
  EXPECT_EQ(o.status, ReferenceStatus::NoMetric);
  EXPECT_EQ(o.message, "the command printed no metric json:loss: no JSON object in the output has the key 'loss'");
}

TEST_F(ReferenceRunTest, NoCommandAndNoMetric) {
  EXPECT_EQ(run_reference(ref(""), options()).status, ReferenceStatus::NoReference);
  ReferenceRun r = ref("train");
  r.metric = "";
  EXPECT_EQ(run_reference(r, options()).status, ReferenceStatus::BadMetric);
}

// The metric comes from the whole output, however much the command prints before it, and the
// tail the report shows is the output's real end.
TEST_F(ReferenceRunTest, MetricAfterMoreThan16MiBOfOutput) {
  ReferenceRun r = ref("yes 'step loss=9.0' | head -n 1300000; echo 'final loss=1.0'");
  r.metric = "regex:loss=([0-9.]+)";
  ReferenceOutcome o = run_reference(r, options());
  EXPECT_EQ(o.status, ReferenceStatus::Measured) << o.message;
  EXPECT_DOUBLE_EQ(o.value.value_or(0), 1.0);
  EXPECT_TRUE(o.output_tail.ends_with("step loss=9.0\nfinal loss=1.0\n")) << o.output_tail.substr(o.output_tail.size() - 100);
  EXPECT_EQ(o.output_tail.size(), kReferenceTailBytes);

  o = run_reference(ref("yes 'step loss=9.0' | head -n 1300000; echo '{\"loss\": 0.125}'"), options());
  EXPECT_EQ(o.status, ReferenceStatus::Measured) << o.message;
  EXPECT_DOUBLE_EQ(o.value.value_or(0), 0.125);

  o = run_reference(ref("yes 'step loss=9.0' | head -n 1300000; echo 'the last words'; exit 4"), options());
  EXPECT_EQ(o.status, ReferenceStatus::CommandFailed);
  EXPECT_TRUE(o.output_tail.ends_with("step loss=9.0\nthe last words\n")) << o.output_tail.substr(o.output_tail.size() - 100);
}

TEST_F(ReferenceRunTest, VerifyTextEscapesControlBytesOfTheCommandAndItsOutput) {
  ReferenceVerifyReport report;
  report.environment = "train";
  ReferenceOutcome o = run_reference(ref("printf 'ok\\033[2J\\nverify: pass\\r\\n'; exit 1 # \033]0;title\007"), options());
  ASSERT_EQ(o.status, ReferenceStatus::CommandFailed);
  report.reference = o;
  EXPECT_EQ(report.to_text(false),
            "FAIL  reference: the command exited with status 1\n"
            "      command: printf 'ok\\033[2J\\nverify: pass\\r\\n'; exit 1 # \\x1b]0;title\\x07\n"
            "      hint: see the output below\n"
            "      output (last lines):\n"
            "        ok\\x1b[2J\n"
            "        verify: pass\\x0d\n"
            "verify: FAIL (exit 1)\n");
}

TEST(SideBySide, MarksDifferences) {
  const std::string s = side_by_side({{"driver_version", "550.54.14"}, {"gpu_count", "8"}},
                                     {{"driver_version", "535.104.05"}, {"gpu_count", "8"}});
  EXPECT_NE(s.find("* driver_version  550.54.14 | 535.104.05"), std::string::npos) << s;
  EXPECT_NE(s.find("  gpu_count       8         | 8"), std::string::npos) << s;
}

TEST_F(ReferenceRunTest, RecordWritesValueAndHostFactsIntoTheLockfile) {
  const fs::path lock = write_lockfile(std::nullopt);
  Host host = Host::system();
  host.libcuda = "/nonexistent/libcuda.so.1";
  host.libnvml = "/nonexistent/libnvidia-ml.so.1";
  host.root = dir_ / "emptyroot";
  auto o = record_reference(lock, "", dir_ / "env", host, options());
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->status, ReferenceStatus::Measured);
  auto lf = Lockfile::read(lock);
  ASSERT_TRUE(lf.ok()) << lf.error().to_string();
  const auto& r = *lf->environments.at("train").reference;
  ASSERT_TRUE(r.recorded_value.has_value());
  EXPECT_DOUBLE_EQ(*r.recorded_value, 0.42);
  EXPECT_EQ(r.recorded_host.at("gpu_count"), "0");
}

TEST_F(ReferenceRunTest, RecordLeavesTheLockfileAloneWhenTheRunFails) {
  const fs::path lock = write_lockfile(std::nullopt, "exit 1");
  std::ifstream before_in(lock);
  const std::string before((std::istreambuf_iterator<char>(before_in)), {});
  auto o = record_reference(lock, "train", dir_ / "env", Host::system(), options());
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->status, ReferenceStatus::CommandFailed);
  std::ifstream after_in(lock);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(after_in)), {}), before);
}

TEST_F(ReferenceRunTest, RecordWithoutAReferenceIsAContentError) {
  Lockfile lf;
  lf.manifest_hash = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
  lf.environments["train"].name = "train";
  ASSERT_TRUE(lf.write(dir_ / "plain.lock").ok());
  auto o = record_reference(dir_ / "plain.lock", "", dir_ / "env", Host::system(), options());
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.error().kind, ErrorKind::Incompatible);  // the lockfile's content: exit 1, not 2
  EXPECT_EQ(o.error().message, "environment 'train' has no reference command");
  auto unknown = record_reference(dir_ / "plain.lock", "serve", dir_ / "env", Host::system(), options());
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, ErrorKind::Incompatible);  // what the lockfile holds: exit 1, as every -e
  EXPECT_EQ(unknown.error().where, (dir_ / "plain.lock").string());
  EXPECT_EQ(unknown.error().message, "has no environment 'serve'");
  EXPECT_EQ(unknown.error().detail, "environments in it: train");
  EXPECT_EQ(unknown.error().hint, "pass one of them with -e");
}

VerifyRequest clean_request(const fs::path& lock, const fs::path& dir, bool* created) {
  VerifyRequest req;
  req.lockfile = lock;
  req.clean = true;
  req.create = [created](const fs::path& prefix) -> Status {
    *created = true;
    fs::create_directories(prefix / "conda-meta");
    std::ofstream(prefix / "conda-meta" / "history") << "";
    fs::create_directories(prefix / "bin");
    std::ofstream(prefix / "bin/train") << "#!/bin/sh\necho '{\"loss\": 0.42}'\n";
    fs::permissions(prefix / "bin/train", fs::perms::owner_all);
    return ok_status();
  };
  req.probe_host = Host::system();
  req.probe_host.libcuda = "/nonexistent/libcuda.so.1";
  req.probe_host.libnvml = "/nonexistent/libnvidia-ml.so.1";
  req.probe_host.root = dir / "emptyroot";
  req.reference_options.timeout_s = 20;
  return req;
}

TEST_F(ReferenceRunTest, VerifyCleanPassesAndRemovesTheThrowawayEnvironment) {
  const fs::path lock = write_lockfile(0.42);
  bool created = false;
  auto report = verify_environment(clean_request(lock, dir_, &created));
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_TRUE(created);
  EXPECT_EQ(report->exit_code(), 0) << report->to_text(false);
  EXPECT_EQ(report->reference->status, ReferenceStatus::Pass);
  EXPECT_FALSE(fs::exists(report->prefix));
  EXPECT_FALSE(report->prefix_kept);
  const auto j = report->to_json();
  EXPECT_EQ(j.at("reference").at("status"), "pass");
  EXPECT_EQ(j.at("probe").at("exit_code"), 0);
}

TEST_F(ReferenceRunTest, VerifyCleanFailsWhenTheRecordedValueChangedAndShowsBothHosts) {
  const fs::path lock = write_lockfile(0.30);
  bool created = false;
  VerifyRequest req = clean_request(lock, dir_, &created);
  req.keep = true;
  auto report = verify_environment(req);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->exit_code(), 1);
  EXPECT_EQ(report->reference->status, ReferenceStatus::Fail);
  const std::string text = report->to_text(false);
  EXPECT_NE(text.find("json:loss = 0.42, recorded 0.3 (difference 0.12 > tolerance 0.01)"), std::string::npos) << text;
  EXPECT_NE(text.find("* gpu_count"), std::string::npos) << text;  // recorded on 8 GPUs, here 0
  EXPECT_NE(text.find("driver_version  550.54.14 | -"), std::string::npos) << text;
  EXPECT_TRUE(report->prefix_kept);
  EXPECT_TRUE(fs::exists(report->prefix / "bin/train"));
  fs::remove_all(report->prefix.parent_path());
}

TEST_F(ReferenceRunTest, VerifyWithoutARecordedValueFails) {
  const fs::path lock = write_lockfile(std::nullopt);
  bool created = false;
  auto report = verify_environment(clean_request(lock, dir_, &created));
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->reference->status, ReferenceStatus::NoRecordedValue);
  EXPECT_NE(report->reference->hint.find("envlock reference record"), std::string::npos);
  EXPECT_EQ(report->exit_code(), 1);
}

TEST_F(ReferenceRunTest, VerifyReportsAnInstallerFailure) {
  const fs::path lock = write_lockfile(0.42);
  VerifyRequest req;
  req.lockfile = lock;
  req.clean = true;
  req.create = [](const fs::path&) -> Status { return Error{ErrorKind::Network, "https://conda.anaconda.org", "HTTP 503", "", ""}; };
  auto report = verify_environment(req);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->exit_code(), 1);
  EXPECT_NE(report->create_error.find("HTTP 503"), std::string::npos);
  EXPECT_FALSE(report->reference.has_value());
}

TEST_F(ReferenceRunTest, VerifyAnExistingPrefix) {
  const fs::path lock = write_lockfile(0.42);
  VerifyRequest req;
  req.lockfile = lock;
  req.prefix = dir_ / "env";
  req.probe_host = Host::system();
  req.probe_host.libcuda = "/nonexistent/libcuda.so.1";
  req.probe_host.libnvml = "/nonexistent/libnvidia-ml.so.1";
  req.probe_host.root = dir_ / "emptyroot";
  auto report = verify_environment(req);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->reference->status, ReferenceStatus::Pass) << report->to_text(false);
  EXPECT_TRUE(fs::exists(dir_ / "env/bin/train"));  // an existing prefix is never removed
}

}  // namespace
}  // namespace envlock
