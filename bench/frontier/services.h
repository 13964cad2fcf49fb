#pragma once
// The real LS services and BE stressors of the frontier benchmark, from Debian packages:
// memcached, redis-server and nginx each run inside an LS pod cgroup on a loopback port of
// their own, stress-ng inside a BE pod cgroup. All of them are children of a
// ScratchCgroups: they die with the benchmark, and the scratch hierarchy kills whatever is
// left in it before it goes (testing::ScratchCgroups::spawn_exec).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/frontier/protocols.h"
#include "test/support/scratch_cgroup.h"

namespace gleaner::bench::frontier {

enum class ServiceKind { kMemcached, kRedis, kNginx };
const char* to_string(ServiceKind kind);
// Parses "memcached", "redis" or "nginx".
std::optional<ServiceKind> parse_service(const std::string& name);
// Empty when the service's binary is installed; otherwise what is missing (its package).
std::string missing_binary(ServiceKind kind);

// One service process, started in `cgroup` with its files under `workdir`; ready (its port
// accepts connections) when the constructor returns, or it throws with the service's log.
class LsService {
 public:
  LsService(ServiceKind kind, testing::ScratchCgroups& scratch, const std::string& cgroup,
            const std::string& workdir);
  ~LsService();
  LsService(const LsService&) = delete;
  LsService& operator=(const LsService&) = delete;

  [[nodiscard]] ServiceKind kind() const { return kind_; }
  [[nodiscard]] uint16_t port() const { return port_; }
  [[nodiscard]] const Protocol& protocol() const { return *protocol_; }
  [[nodiscard]] pid_t pid() const { return pid_; }

 private:
  ServiceKind kind_;
  testing::ScratchCgroups& scratch_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
  std::unique_ptr<Protocol> protocol_;
};

// The BE mixes: stress-ng stressors sized to the node's CPUs.
enum class BeMix {
  kCpu,     // --cpu N: pure CPU
  kMemory,  // --cache, --stream (memory bandwidth) and --vm: caches and memory
};
const char* to_string(BeMix mix);
std::optional<BeMix> parse_be_mix(const std::string& name);
// The stress-ng command line of a mix on `cpus` CPUs.
std::vector<std::string> stress_ng_argv(BeMix mix, int cpus);

}  // namespace gleaner::bench::frontier
