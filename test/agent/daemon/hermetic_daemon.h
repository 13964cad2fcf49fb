#pragma once
// The daemon end to end without the machine's kernel: a fake /proc, a kubelet-shaped cgroup
// v1 tree in a scratch folder, a pods file, a fake run-queue probe and a fake clock. The
// test runs each pass itself on the daemon's loop (DaemonDeps::own_timers off), moving the
// counters and the clock between passes, and checks what the daemon hands on: the BE quota
// in the tree, the report a stand-in scheduler receives, the metrics, the probe's
// settings, and the tree as found once it stops. Needs neither root nor BPF.
// The node and the fixture, shared by the daemon's hermetic tests.
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include "agent/daemon/daemon.h"
#include "cgroup/cgroup_fs.h"
#include "cgroup/layout.h"
#include "common/clock.h"
#include "common/json_util.h"
#include "reporter/wire/node_report.h"
#include "test/agent/daemon/fake_runq_probe.h"
#include "test/agent/qos/qos_test_util.h"
#include "test/reporter/loopback_http_server.h"
#include "test/support/eventually.h"
#include "test/support/io_thread.h"
#include "test/support/net.h"
#include "test/support/temp_tree.h"

namespace gleaner::agent::test {

using namespace std::chrono_literals;
using cgroup::KubeQos;
using cgroup::Resource;
using gleaner::testing::TempDir;
using reporter::testing::LoopbackHttpServer;

// Every file of `root` and its value, but the usage counters (the test's own inputs). A
// value is compared without its line end: a kernel cgroup file reads back its value and one
// "\n" whatever was written to it (kernel/cgroup/cgroup.c, cgroup_seqfile_show prints the
// s64/u64 handlers' values with "%lld\n"), while a plain file keeps the bytes written, so
// the executor's "-1" read "-1" here where a node reads "-1\n".
inline std::map<std::string, std::string> tree_of(const TempDir& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root.path())) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    if (name == "cpuacct.usage" || name == "memory.usage_in_bytes") continue;
    const std::string relative = std::filesystem::relative(entry.path(), root.path()).string();
    std::string value = root.read(relative);
    while (!value.empty() && value.back() == '\n')
      value.pop_back();
    files[relative] = std::move(value);
  }
  return files;
}

// The value of `family`'s series for pod `name` (whatever its other labels) in Prometheus
// text; nullopt when there is none.
inline std::optional<double> pod_metric(const std::string& text, const std::string& family,
                                        const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(family + "{") || line.find("pod=\"" + name + "\"") == std::string::npos) {
      continue;
    }
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return std::nullopt;
}

// A 2-CPU node: an LS pod (web/api-0, Burstable) and a BE pod (spark/exec-1), cgroupfs
// driver, cgroup v1; CPU counters the test moves by the millicores it wants the agent to
// measure over each interval.
class HermeticNode {
 public:
  HermeticNode() : layout_(cgroup::CgroupDriver::kCgroupfs) {
    qos::test::FakePod ls{.ns = "web", .name = "api-0", .uid = "ls-uid", .kube_qos = "Burstable"};
    qos::test::FakePod be{.ns = "spark",
                          .name = "exec-1",
                          .uid = "be-uid",
                          .qos_label = "BE",
                          .kube_qos = "BestEffort"};
    qos::test::make_node_tree(cgroup_, cgroup::CgroupVersion::kV1, layout_, {ls, be}, "0-1");
    Json items = Json::array({qos::test::pod_json(ls), qos::test::pod_json(be)});
    files_.write("pods.json",
                 Json{{"kind", "PodList"}, {"apiVersion", "v1"}, {"items", items}}.dump());
    files_.write("node.json",
                 R"({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-h"},
        "status": {"capacity": {"cpu": "2", "memory": "4Gi"},
                   "allocatable": {"cpu": "2", "memory": "4Gi"}}})");
    files_.write("config/resource-threshold-config", R"({"clusterStrategy": {"enable": true,
        "cpuSuppressThresholdPercent": 65, "cpuSuppressPolicy": "cfsQuota"}})");
    files_.mkdir("empty");
    // Every memory cgroup of a v1 kernel has memory.stat; the pod sampler takes each pod's
    // working set from it (total_* rows: the hierarchy's sums; cgroup/parsers.cc
    // memory_working_set_from_text) and drops a pod whose file it cannot read as gone.
    // Without these files both pods were dropped and their CPU counted as the system's.
    for (const auto& [uid, qos] :
         {std::pair{"ls-uid", KubeQos::kBurstable}, std::pair{"be-uid", KubeQos::kBestEffort}}) {
      cgroup_.write("memory/" + layout_.pod_dir(qos, uid) + "/memory.stat",
                    "total_inactive_anon 0\ntotal_active_anon 67108864\n"
                    "total_inactive_file 0\ntotal_active_file 0\ntotal_unevictable 0\n");
    }
    proc_.write("meminfo",
                "MemTotal:        4194304 kB\nMemFree:         2097152 kB\n"
                "MemAvailable:    3145728 kB\n");
    proc_.write("pressure/cpu",
                "some avg10=1.50 avg60=1.00 avg300=0.50 total=1000\n"
                "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    write_counters();
  }

  [[nodiscard]] DaemonOptions options(const std::string& scheduler_url) const {
    DaemonOptions opt;
    opt.node_name = "node-h";
    opt.cgroup_root = cgroup_.path();
    opt.cgroup_version = "v1";
    opt.cgroup_driver = "cgroupfs";
    opt.proc_root = proc_.path();
    opt.sys_root = files_ / "empty";
    opt.resctrl_root = files_ / "empty";
    opt.resctrl_mount = false;
    opt.config_dir = files_ / "config";
    opt.pods_file = files_ / "pods.json";
    opt.node_file = files_ / "node.json";
    opt.metrics_addr = "127.0.0.1:0";
    opt.scheduler_url = scheduler_url;
    opt.state_dir = "";
    return opt;
  }

  // The next interval as the samplers will read it: the node busy for `node_milli`, the
  // pods for theirs, over `clock`'s step of `span` (whole 10 ms ticks).
  void run_for(FakeClock& clock, std::chrono::milliseconds span, int64_t node_milli,
               int64_t ls_milli, int64_t be_milli) {
    // /proc/stat counts USER_HZ (100) ticks per CPU: 2 every 10 ms on 2 CPUs.
    const int64_t ticks = span.count() / 10 * 2;
    busy_ticks_ += node_milli * span.count() / 10'000;
    idle_ticks_ += ticks - node_milli * span.count() / 10'000;
    ls_ns_ += ls_milli * span.count() * 1'000;
    be_ns_ += be_milli * span.count() * 1'000;
    write_counters();
    clock.advance(span);
  }
  void run_for_a_second(FakeClock& clock, int64_t node_milli, int64_t ls_milli, int64_t be_milli) {
    run_for(clock, 1s, node_milli, ls_milli, be_milli);
  }

  // The cgroup directory of `pod_dir` (a layout path) under the cpu controller.
  [[nodiscard]] std::string cpu_dir(const std::string& pod_dir) const {
    return cgroup::CgroupFs(cgroup_.path(), cgroup::CgroupVersion::kV1)
        .dir_of(Resource::kCpuShares, pod_dir);
  }
  [[nodiscard]] std::string read(const std::string& relative) const {
    return cgroup_.read(relative);
  }
  [[nodiscard]] const TempDir& cgroup_tree() const { return cgroup_; }
  [[nodiscard]] const cgroup::KubeletLayout& layout() const { return layout_; }

 private:
  void write_counters() {
    const auto half = [](int64_t n) { return std::to_string(n / 2); };
    proc_.write("stat", "cpu  " + std::to_string(busy_ticks_) + " 0 0 " +
                            std::to_string(idle_ticks_) + " 0 0 0 0 0 0\ncpu0 " +
                            half(busy_ticks_) + " 0 0 " + half(idle_ticks_) +
                            " 0 0 0 0 0 0\ncpu1 " + half(busy_ticks_) + " 0 0 " +
                            half(idle_ticks_) + " 0 0 0 0 0 0\n");
    const std::string ls = layout_.pod_dir(KubeQos::kBurstable, "ls-uid");
    const std::string be = layout_.pod_dir(KubeQos::kBestEffort, "be-uid");
    cgroup_.write("cpuacct/" + ls + "/cpuacct.usage", std::to_string(ls_ns_) + "\n");
    cgroup_.write("cpuacct/" + be + "/cpuacct.usage", std::to_string(be_ns_) + "\n");
    // The kernel charges a task's CPU time to its cgroup and every ancestor
    // (kernel/sched/cpuacct.c, cpuacct_charge), so the QoS and kubepods counters hold their
    // pods' sums; the fast path reads kubepods' and besteffort's.
    cgroup_.write("cpuacct/" + layout_.qos_dir(KubeQos::kBestEffort) + "/cpuacct.usage",
                  std::to_string(be_ns_) + "\n");
    cgroup_.write("cpuacct/" + layout_.qos_dir(KubeQos::kBurstable) + "/cpuacct.usage",
                  std::to_string(ls_ns_) + "\n");
    cgroup_.write("cpuacct/" + layout_.kubepods_dir() + "/cpuacct.usage",
                  std::to_string(ls_ns_ + be_ns_) + "\n");
    cgroup_.write("memory/" + ls + "/memory.usage_in_bytes", "268435456\n");
    cgroup_.write("memory/" + be + "/memory.usage_in_bytes", "134217728\n");
  }

  TempDir cgroup_;
  TempDir proc_;
  TempDir files_;
  cgroup::KubeletLayout layout_;
  int64_t busy_ticks_ = 10'000;
  int64_t idle_ticks_ = 50'000;
  int64_t ls_ns_ = 0;
  int64_t be_ns_ = 0;
};

class DaemonHermetic : public ::testing::Test {
 protected:
  void SetUp() override {
    DaemonDeps deps;
    deps.clock = &clock_;
    deps.open_probe =
        [this](const bpf::SchedProbeOptions&) -> Result<std::unique_ptr<bpf::RunqProbe>> {
      auto fake = std::make_unique<FakeRunqProbe>();
      probe_ = fake.get();
      return std::unique_ptr<bpf::RunqProbe>(std::move(fake));
    };
    deps.own_timers = false;
    DaemonOptions options = node_.options(scheduler_.url());
    adjust(options);
    auto created = Daemon::create(loop_.io(), std::move(options), std::move(deps));
    ASSERT_TRUE(created.ok()) << created.error().describe();
    daemon_ = std::move(*created);
    ASSERT_NE(probe_, nullptr);
  }
  void TearDown() override { stop(); }
  // A suite's own options, before the daemon is made.
  virtual void adjust(DaemonOptions& /*options*/) {}

  // Runs `step` on the daemon's loop thread, as its timers would, and waits for it.
  void on_loop(const std::function<void()>& step) {
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    boost::asio::post(loop_.io(), [step, done] {
      step();
      done->set_value();
    });
    ASSERT_EQ(finished.wait_for(60s), std::future_status::ready) << "the loop did not run it";
  }
  void stop() {
    if (!daemon_) return;
    on_loop([this] { daemon_->stop(); });
    loop_.drain();  // the stopped daemon leaves the loop nothing to do
    daemon_.reset();
  }
  [[nodiscard]] std::string metrics() const {
    return gleaner::testing::http_get_loopback(daemon_->metrics_port(), "/metrics");
  }
  [[nodiscard]] std::string be_quota() const {
    std::string value =
        node_.read("cpu/" + node_.layout().qos_dir(KubeQos::kBestEffort) + "/cpu.cfs_quota_us");
    while (!value.empty() && value.back() == '\n')
      value.pop_back();
    return value;
  }
  // The last report the stand-in scheduler received, parsed as the scheduler parses it.
  static std::optional<reporter::NodeReport> last_report(
      const std::vector<LoopbackHttpServer::Request>& requests) {
    if (requests.empty()) return std::nullopt;
    auto json = parse_json(requests.back().body, "report");
    if (!json) return std::nullopt;
    auto report = reporter::node_report_from_json(*json);
    return report ? std::optional<reporter::NodeReport>(*report) : std::nullopt;
  }

  FakeClock clock_;
  HermeticNode node_;
  LoopbackHttpServer scheduler_;
  gleaner::testing::IoThread loop_;
  FakeRunqProbe* probe_ = nullptr;  // owned by the daemon
  std::unique_ptr<Daemon> daemon_;
};

}  // namespace gleaner::agent::test
