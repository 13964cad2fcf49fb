// The binaries' exit codes and --version, through run_cli as both main()s call it.
#include "common/cli_main.h"

#include <gtest/gtest.h>

namespace gleaner {
namespace {

struct CliRun {
  int code = -1;
  std::string out;
};

CliRun run(std::vector<std::string> args) {
  CLI::App app{"tool"};
  app.name("tool");
  app.require_subcommand(1);
  auto* sub = app.add_subcommand("do", "something");
  int n = 0;
  sub->add_option("--n", n)->required();
  sub->callback([&] { set_exit_code(n == 7 ? kExitRuntime : kExitOk); });
  args.insert(args.begin(), "tool");
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  CliRun r;
  r.code = run_cli(app, static_cast<int>(argv.size()), argv.data());
  r.out = ::testing::internal::GetCapturedStdout() + ::testing::internal::GetCapturedStderr();
  return r;
}

TEST(RunCli, UsageErrorsAreTwoWhateverCli11WouldReturn) {
  EXPECT_EQ(run({}).code, kExitUsage);                  // no subcommand
  EXPECT_EQ(run({"do"}).code, kExitUsage);              // a required option missing
  EXPECT_EQ(run({"do", "--n", "x"}).code, kExitUsage);  // not a number
  EXPECT_EQ(run({"do", "--n", "1", "--bogus"}).code, kExitUsage);
  EXPECT_EQ(run({"nope"}).code, kExitUsage);
}

TEST(RunCli, HelpAndVersionAreZeroAndTheCommandsOwnCodePassesThrough) {
  EXPECT_EQ(run({"--help"}).code, kExitOk);
  const CliRun v = run({"--version"});
  EXPECT_EQ(v.code, kExitOk);
  EXPECT_NE(v.out.find(std::string("tool ") + build_version()), std::string::npos) << v.out;
  EXPECT_NE(std::string(build_version()).find("0."), std::string::npos) << build_version();
  EXPECT_EQ(run({"do", "--n", "1"}).code, kExitOk);
  EXPECT_EQ(run({"do", "--n", "7"}).code, kExitRuntime);
}

}  // namespace
}  // namespace gleaner
