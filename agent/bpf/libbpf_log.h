#pragma once
// libbpf's messages and failures, for the probe's loader. libbpf's own log goes to the
// debug log; the last few non-debug lines are kept so that an error can quote them (the
// verifier's verdict above all).

#include <string>

#include "common/result.h"

namespace gleaner::agent::bpf {

// Routes libbpf's log to spdlog and forgets any kept lines; call before loading. A no-op
// in a build without BPF.
void install_libbpf_log();

// One message of libbpf's log (what the installed callback does with each): to the debug
// log, and its lines kept (the last few) unless libbpf sent it at debug level.
void note_libbpf_line(std::string text, bool debug_level);

// A typed error for a libbpf failure at `stage` (open, load, attach, ...); `err` is an
// errno value of either sign. Quotes and then forgets the kept lines.
//   verifier rejection -> kInvalidArgument; EPERM/EACCES -> kPermission;
//   ENOENT/ESRCH/EOPNOTSUPP/EINVAL -> kUnsupported (old kernel); else kIo.
Error libbpf_error(const std::string& stage, int err);

}  // namespace gleaner::agent::bpf
