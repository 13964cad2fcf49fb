#include "agent/bpf/libbpf_log.h"

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

namespace gleaner::agent::bpf {
namespace {

class LibbpfLog : public ::testing::Test {
 protected:
  void SetUp() override { install_libbpf_log(); }  // nothing kept from earlier tests
};

TEST_F(LibbpfLog, ErrnoValuesOfEitherSignMapToTypedCodes) {
  EXPECT_EQ(libbpf_error("attach", -EPERM).code, ErrorCode::kPermission);
  EXPECT_EQ(libbpf_error("attach", EACCES).code, ErrorCode::kPermission);
  EXPECT_EQ(libbpf_error("load", -ENOENT).code, ErrorCode::kUnsupported);
  EXPECT_EQ(libbpf_error("load", -EINVAL).code, ErrorCode::kUnsupported);
  EXPECT_EQ(libbpf_error("load", -ENOMEM).code, ErrorCode::kIo);
}

TEST_F(LibbpfLog, MessageNamesStageCauseAndWhatItNeeds) {
  Error error = libbpf_error("attach", -EPERM);
  EXPECT_NE(error.message.find("sched probe attach"), std::string::npos) << error.message;
  EXPECT_NE(error.message.find("CAP_BPF"), std::string::npos) << error.message;
}

TEST_F(LibbpfLog, VerifierLogMakesItARejectionEndingInTheVerdict) {
  // libbpf sends the verifier's log as one multi-line message; the verdict is its end,
  // and it can be longer than any fixed line buffer.
  std::string log = "prog 'gleaner_switch': -- BEGIN PROG LOAD LOG --\n";
  for (int i = 0; i < 200; ++i)
    log += "; " + std::to_string(i) + ": (bf) r1 = r6  padding padding padding padding\n";
  log += "R1 invalid mem access 'scalar'\n-- END PROG LOAD LOG --\n";
  note_libbpf_line(log, /*debug_level=*/false);
  note_libbpf_line("failed to load object 'sched_probe_bpf'", false);
  Error error = libbpf_error("load", -EACCES);
  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(error.message.find("verifier rejected"), std::string::npos);
  EXPECT_NE(error.message.find("R1 invalid mem access"), std::string::npos) << error.message;
  EXPECT_NE(error.message.find("failed to load object"), std::string::npos);
  EXPECT_EQ(error.message.find("; 0: (bf)"), std::string::npos) << "kept only the last lines";
}

TEST_F(LibbpfLog, DebugLinesAreNotQuotedAndATakenTailIsGone) {
  note_libbpf_line("libbpf: loading object from sched_probe.bpf.o", /*debug_level=*/true);
  note_libbpf_line("map 'stats': failed to create: Operation not permitted\n", false);
  Error first = libbpf_error("load", -EPERM);
  EXPECT_EQ(first.message.find("loading object"), std::string::npos);
  EXPECT_NE(first.message.find("map 'stats': failed to create"), std::string::npos);
  Error second = libbpf_error("load", -EPERM);
  EXPECT_EQ(second.message.find("map 'stats'"), std::string::npos) << second.message;
}

}  // namespace
}  // namespace gleaner::agent::bpf
