// A real Prometheus server scrapes the metrics server; the test asks Prometheus' HTTP
// API for the values the agent exported. Skips when /usr/bin/prometheus is missing.

#include <chrono>
#include <cmath>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include "common/clock.h"
#include "common/file_io.h"
#include "common/json_util.h"
#include "reporter/metrics/health.h"
#include "reporter/metrics/metrics_registry.h"
#include "reporter/metrics/metrics_server.h"
#include "reporter/metrics/routes.h"
#include "test/reporter/http_get.h"
#include "test/reporter/report_fixtures.h"
#include "test/support/eventually.h"
#include "test/support/io_thread.h"
#include "test/support/temp_tree.h"

namespace gleaner::reporter {
namespace {

using namespace std::chrono_literals;
using testing::http_get;

constexpr const char* kPrometheus = "/usr/bin/prometheus";
constexpr const char* kPromtool = "/usr/bin/promtool";

uint16_t free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A child process killed and reaped on destruction, whatever the test outcome.
class ChildProcess {
 public:
  ChildProcess(std::vector<std::string> argv, const std::string& log_path) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(log, 1);
      ::dup2(log, 2);
      std::vector<char*> args;
      for (auto& a : argv)
        args.push_back(a.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~ChildProcess() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    if (!gleaner::testing::eventually([&] { return ::waitpid(pid_, &status, WNOHANG) != 0; }, 10s,
                                      10ms)) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
  }
  [[nodiscard]] bool running() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
};

std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// Asks Prometheus for `query` until it returns a sample or the deadline passes.
std::optional<double> query_until_present(uint16_t port, const std::string& query,
                                          std::chrono::seconds timeout) {
  std::optional<double> value;
  gleaner::testing::eventually(
      [&] {
        auto res = http_get(port, "/api/v1/query?query=" + url_encode(query));
        if (!res || res->status != 200) return false;
        auto json = parse_json(res->body, "prometheus query");
        if (!json || (*json)["status"] != "success" || (*json)["data"]["result"].empty()) {
          return false;
        }
        value = std::stod((*json)["data"]["result"][0]["value"][1].get<std::string>());
        return true;
      },
      timeout, 100ms);  // each poll is a query to the real Prometheus
  return value;
}

class PrometheusScrape : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kPrometheus, X_OK) != 0 || ::access(kPromtool, X_OK) != 0) {
      GTEST_SKIP() << "Debian package 'prometheus' not installed (" << kPrometheus
                   << "); run scripts/install-deps.sh";
    }
    registry_.update(testing::sample_state(4));
    health_.register_loop("sampler");
    health_.mark_first_sample();
    health_.mark_config_loaded();
    auto server = MetricsServer::create(io_.io(), "127.0.0.1:0",
                                        [this](std::string_view m, std::string_view t) {
                                          return route_request(m, t, registry_, health_);
                                        });
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
  }
  void TearDown() override {
    if (server_) server_->stop();
    server_.reset();
    io_.drain();
  }

  gleaner::testing::TempDir dir_;
  SystemClock clock_;
  MetricsRegistry registry_;
  HealthMonitor health_{clock_, 30s};
  gleaner::testing::IoThread io_;
  std::unique_ptr<MetricsServer> server_;
};

TEST_F(PrometheusScrape, MetricsServerAnswersProbesAndPassesPromtoolCheck) {
  auto health = http_get(server_->port(), "/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto ready = http_get(server_->port(), "/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  auto metrics = http_get(server_->port(), "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->headers.find("text/plain; version=0.0.4"), std::string::npos);
  dir_.write("metrics.txt", metrics->body);
  std::string cmd = std::string(kPromtool) + " check metrics < " + (dir_ / "metrics.txt") + " > " +
                    (dir_ / "promtool.log") + " 2>&1";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << dir_.read("promtool.log");
}

TEST_F(PrometheusScrape, RealPrometheusFindsBatchAllocatableAndPodCpu) {
  uint16_t prom_port = free_loopback_port();
  dir_.write("prometheus.yml",
             "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
             "scrape_configs:\n  - job_name: gleaner-agent\n    static_configs:\n"
             "      - targets: ['127.0.0.1:" +
                 std::to_string(server_->port()) + "']\n");
  dir_.mkdir("data");
  ChildProcess prometheus(
      {kPrometheus, "--config.file=" + (dir_ / "prometheus.yml"),
       "--storage.tsdb.path=" + (dir_ / "data"),
       "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"},
      dir_ / "prometheus.log");
  auto batch = query_until_present(prom_port, "gleaner_batch_cpu_allocatable_cores", 60s);
  ASSERT_TRUE(batch) << "Prometheus never returned the series; log:\n"
                     << dir_.read("prometheus.log");
  EXPECT_DOUBLE_EQ(*batch, 12.2);
  auto mem = query_until_present(prom_port, "gleaner_batch_memory_allocatable_bytes", 10s);
  ASSERT_TRUE(mem);
  EXPECT_DOUBLE_EQ(*mem, 42090679501.0);
  // sample_state(4): pod-3 is a BE pod in namespace spark using 103 millicores.
  auto pod = query_until_present(
      prom_port, "gleaner_pod_cpu_usage_cores{namespace=\"spark\",pod=\"pod-3\",qos=\"BE\"}", 10s);
  ASSERT_TRUE(pod);
  EXPECT_DOUBLE_EQ(*pod, 0.103);
  auto up = query_until_present(prom_port, "up{job=\"gleaner-agent\"}", 10s);
  ASSERT_TRUE(up);
  EXPECT_EQ(*up, 1.0);
}

}  // namespace
}  // namespace gleaner::reporter
