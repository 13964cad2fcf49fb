#include "agent/daemon/cgroup_watch.h"

#include <array>
#include <cerrno>
#include <utility>

#include <sys/inotify.h>
#include <unistd.h>

#include "common/file_io.h"

namespace gleaner::agent {

Result<CgroupWatch> CgroupWatch::open(const std::vector<std::string>& dirs) {
  CgroupWatch watch;
  watch.fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (watch.fd_ < 0) return errno_error(errno, "inotify_init1");
  for (const auto& dir : dirs) {
    if (!is_directory(dir)) continue;
    if (::inotify_add_watch(watch.fd_, dir.c_str(), IN_CREATE | IN_DELETE | IN_ONLYDIR) >= 0) {
      ++watch.watched_;
    }
  }
  if (watch.watched_ == 0) {
    return make_error(ErrorCode::kNotFound, "no QoS directory to watch (kubepods absent)");
  }
  return watch;
}

CgroupWatch::CgroupWatch(CgroupWatch&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), watched_(other.watched_) {}

CgroupWatch& CgroupWatch::operator=(CgroupWatch&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    watched_ = other.watched_;
  }
  return *this;
}

CgroupWatch::~CgroupWatch() {
  if (fd_ >= 0) ::close(fd_);
}

bool CgroupWatch::drain() {
  alignas(inotify_event) std::array<char, 4096> buf{};
  bool changed = false;
  while (true) {
    ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n <= 0) break;  // EAGAIN: drained
    for (ssize_t off = 0; off < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buf.data() + off);
      if ((event->mask & IN_ISDIR) != 0 && (event->mask & (IN_CREATE | IN_DELETE)) != 0) {
        changed = true;
      }
      off += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
  return changed;
}

}  // namespace gleaner::agent
