#include "agent/bpf/libbpf_log.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>

#include <spdlog/spdlog.h>

#if GLEANER_HAVE_BPF
#include <bpf/libbpf.h>
#endif

namespace gleaner::agent::bpf {
namespace {

constexpr size_t kKeptLines = 12;

std::mutex g_log_mutex;
std::deque<std::string> g_log_tail;
bool g_verifier_seen = false;  // since the tail was last taken

#if GLEANER_HAVE_BPF
int libbpf_print(enum libbpf_print_level level, const char* format, va_list args) {
  // Sized to the message: the verifier's log comes as one message of many lines, its
  // verdict last.
  char* raw = nullptr;
  const int length = ::vasprintf(&raw, format, args);
  if (length < 0) return 0;
  const std::unique_ptr<char, decltype(&std::free)> owned(raw, &std::free);
  note_libbpf_line(std::string(raw, static_cast<size_t>(length)), level == LIBBPF_DEBUG);
  return 0;
}
#endif

// The kept lines, each on its own indented line; `verifier` says whether the verifier's
// log came since the last call.
std::string take_log_tail(bool& verifier) {
  std::lock_guard lock(g_log_mutex);
  std::string out;
  for (const auto& line : g_log_tail)
    out += "\n  " + line;
  g_log_tail.clear();
  verifier = g_verifier_seen;
  g_verifier_seen = false;
  return out;
}

}  // namespace

void install_libbpf_log() {
#if GLEANER_HAVE_BPF
  libbpf_set_print(libbpf_print);
#endif
  bool verifier = false;
  take_log_tail(verifier);
}

void note_libbpf_line(std::string text, bool debug_level) {
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  spdlog::debug("libbpf: {}", text);
  if (debug_level) return;
  std::lock_guard lock(g_log_mutex);
  if (text.find("PROG LOAD LOG") != std::string::npos) g_verifier_seen = true;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    g_log_tail.push_back(text.substr(begin, end - begin));
    if (g_log_tail.size() > kKeptLines) g_log_tail.pop_front();
    begin = end + 1;
  }
}

Error libbpf_error(const std::string& stage, int err) {
  err = err < 0 ? -err : err;
  bool verifier = false;
  std::string tail = take_log_tail(verifier);
  std::string message = errno_error(err, "sched probe " + stage).message;
  if (verifier) {
    return make_error(ErrorCode::kInvalidArgument, message + ": verifier rejected" + tail);
  }
  if (err == EPERM || err == EACCES) {
    return make_error(ErrorCode::kPermission,
                      message + " (needs root or CAP_BPF + CAP_PERFMON)" + tail);
  }
  if (err == ENOENT || err == ESRCH || err == EOPNOTSUPP || err == EINVAL) {
    return make_error(ErrorCode::kUnsupported, message + " (kernel too old?)" + tail);
  }
  return make_error(ErrorCode::kIo, message + tail);
}

}  // namespace gleaner::agent::bpf
