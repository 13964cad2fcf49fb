#pragma once
// An io_context run on a thread of its own: the composition root's role in a test that
// drives the asynchronous code (listeners, clients) from the test's thread.

#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace gleaner::testing {

class IoThread {
 public:
  IoThread() : guard_(io_.get_executor()), thread_([this] { io_.run(); }) {}
  ~IoThread() {
    guard_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }
  IoThread(const IoThread&) = delete;
  IoThread& operator=(const IoThread&) = delete;

  boost::asio::io_context& io() { return io_; }
  // Lets the handlers still queued run to their end, then joins the thread.
  void drain() {
    guard_.reset();
    if (thread_.joinable()) thread_.join();
  }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::thread thread_;
};

}  // namespace gleaner::testing
