#pragma once
// The agent's daemon running in this process on its own io_context thread, over a
// ColocatedNode; stopped (restoring what it changed) and joined when the object goes.
// Header-only: only targets that link gleaner_agent include it.

#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <unistd.h>

#include "agent/daemon/daemon.h"
#include "common/file_io.h"
#include "test/support/colocated_node.h"

namespace gleaner::testing {

// Options for an agent over `node`: its cgroup root, pods file and config; no metrics port.
inline agent::DaemonOptions agent_options(const ColocatedNode& node) {
  agent::DaemonOptions opt;
  opt.cgroup_root = node.root();
  opt.pods_file = node.pods_file();
  opt.config_dir = node.config_dir();
  opt.metrics_addr = "";
  opt.node_name = "node-a";
  return opt;
}

class InProcessAgent {
 public:
  // Throws std::runtime_error with the agent's own message when it cannot start, or when
  // its thread cannot be moved to `tasks_file`: a cgroup v1 `tasks` file the agent's thread
  // moves itself to before it runs (ColocatedNode::agent_tasks_file, the agent's own pod);
  // empty: it stays where it is.
  // `deps`: as Daemon::create takes them (own_timers off: the test runs the passes, run()).
  explicit InProcessAgent(agent::DaemonOptions options, const std::string& tasks_file = "",
                          agent::DaemonDeps deps = {}) {
    auto created = agent::Daemon::create(io_, std::move(options), std::move(deps));
    if (!created.ok()) throw std::runtime_error(created.error().describe());
    daemon_ = std::move(*created);
    // The first pass, too, runs on the agent's thread, after it has moved.
    boost::asio::post(io_, [this] { daemon_->start(); });
    std::promise<Status> placed;
    auto placed_result = placed.get_future();
    loop_ = std::thread([this, tasks_file, &placed] {
      Status moved =
          tasks_file.empty() ? ok_status() : write_file(tasks_file, std::to_string(::gettid()));
      const bool run = moved.ok();
      placed.set_value(std::move(moved));
      if (run) io_.run();
    });
    if (Status moved = placed_result.get(); !moved.ok()) {
      loop_.join();
      throw std::runtime_error("agent thread to " + tasks_file + ": " + moved.error().describe());
    }
  }
  ~InProcessAgent() { stop(); }
  InProcessAgent(const InProcessAgent&) = delete;
  InProcessAgent& operator=(const InProcessAgent&) = delete;

  // Runs `step` on the daemon's thread (between its passes) and returns when it is done.
  void run(const std::function<void(agent::Daemon&)>& step) {
    std::promise<void> done;
    auto finished = done.get_future();
    boost::asio::post(io_, [&] {
      step(*daemon_);
      done.set_value();
    });
    finished.wait();
  }

  // Stops the daemon on its own thread (it restores every value it changed) and joins.
  void stop() {
    if (!loop_.joinable()) return;
    boost::asio::post(io_, [this] { daemon_->stop(); });
    loop_.join();
  }

 private:
  boost::asio::io_context io_;
  std::unique_ptr<agent::Daemon> daemon_;
  std::thread loop_;
};

}  // namespace gleaner::testing
