#include "kube/informer.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

namespace gleaner::kube {

Informer::Informer(KubeClient& client, InformerOptions options, InformerHandlers handlers)
    : client_(client), options_(std::move(options)), handlers_(std::move(handlers)) {}

Informer::~Informer() {
  stop();
}

std::string Informer::key_of(const Json& obj) {
  const Json* ns = find_path(obj, "metadata/namespace");
  const Json* name = find_path(obj, "metadata/name");
  std::string key = ns && ns->is_string() && !ns->get_ref<const std::string&>().empty()
                        ? ns->get<std::string>() + "/"
                        : std::string();
  return key + (name && name->is_string() ? name->get<std::string>() : std::string());
}

void Informer::start() {
  thread_ = std::jthread([this](const std::stop_token& st) { run(st); });
}

void Informer::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

bool Informer::wait_for_sync(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return synced_.load(); });
}

std::optional<Json> Informer::get(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = cache_.find(key);
  if (it == cache_.end()) return std::nullopt;
  return it->second;
}

std::vector<Json> Informer::list() const {
  std::lock_guard lock(mu_);
  std::vector<Json> out;
  out.reserve(cache_.size());
  for (const auto& [key, obj] : cache_)
    out.push_back(obj);
  return out;
}

std::string Informer::resource_version() const {
  std::lock_guard lock(mu_);
  return rv_;
}

InformerStats Informer::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void Informer::sleep(std::stop_token& stop, std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, stop, d, [] { return false; });
}

void Informer::note_failure(const Error& error) {
  ++stats_.errors;
  server_wait_.reset();
  if (auto wait = retry_after_of(error)) {
    ++stats_.throttled;
    // Spread a little, so informers throttled together do not come back in one burst.
    // "Retry-After: 0" is no licence to spin.
    const auto ms = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(*wait),
                             std::chrono::milliseconds(100));
    server_wait_ = ms + std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 250)(rng_));
  }
}

std::chrono::milliseconds Informer::delay(Backoff& backoff) {
  std::optional<std::chrono::milliseconds> wait;
  {
    std::lock_guard lock(mu_);
    wait = std::exchange(server_wait_, std::nullopt);
  }
  return wait ? *wait : backoff.next();
}

void Informer::warn_failure(const std::string& message) {
  if (message == last_warned_) {
    spdlog::debug("informer {}: {}", options_.path, message);
    return;
  }
  ++stats_.warnings;
  last_warned_ = message;
  spdlog::warn("informer {}: {} (said once until it changes or works again)", options_.path,
               message);
}

bool Informer::relist() {
  auto page = client_.list_all(options_.path, {options_.label_selector, options_.field_selector,
                                               options_.page_size, "", ""});
  std::lock_guard lock(mu_);
  ++stats_.lists;
  if (!page) {
    note_failure(page.error());
    warn_failure("list failed: " + page.error().describe());
    return false;
  }
  if (!last_warned_.empty()) {
    spdlog::info("informer {}: listed again", options_.path);
    last_warned_.clear();
  }
  // Reconcile: what the list has is added or updated, what it lacks was deleted meanwhile.
  std::map<std::string, Json> fresh;
  for (auto& item : page->items)
    fresh.emplace(key_of(item), std::move(item));
  std::vector<Json> added, deleted;
  std::vector<std::pair<Json, Json>> updated;
  for (auto& [key, obj] : fresh) {
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      added.push_back(obj);
    } else if (it->second != obj) {
      updated.emplace_back(it->second, obj);
    }
  }
  for (auto& [key, obj] : cache_) {
    if (!fresh.contains(key)) deleted.push_back(obj);
  }
  cache_ = std::move(fresh);
  rv_ = page->resource_version;
  // Callbacks run with the lock released, so they may read the cache.
  mu_.unlock();
  for (const auto& obj : added) {
    if (handlers_.on_add) handlers_.on_add(obj);
  }
  for (const auto& [old_obj, new_obj] : updated) {
    if (handlers_.on_update) handlers_.on_update(old_obj, new_obj);
  }
  for (const auto& obj : deleted) {
    if (handlers_.on_delete) handlers_.on_delete(obj);
  }
  mu_.lock();
  synced_ = true;
  cv_.notify_all();
  return true;
}

void Informer::apply(const WatchEvent& event) {
  const std::string key = key_of(event.object);
  std::optional<Json> old_obj;
  {
    std::lock_guard lock(mu_);
    rv_ = event.resource_version;
    if (event.type == WatchEventType::kBookmark) return;
    auto it = cache_.find(key);
    if (it != cache_.end()) old_obj = it->second;
    if (event.type == WatchEventType::kDeleted) {
      cache_.erase(key);
    } else {
      cache_[key] = event.object;
    }
  }
  if (event.type == WatchEventType::kDeleted) {
    if (handlers_.on_delete) handlers_.on_delete(old_obj ? *old_obj : event.object);
  } else if (old_obj) {
    if (handlers_.on_update) handlers_.on_update(*old_obj, event.object);
  } else if (handlers_.on_add) {
    handlers_.on_add(event.object);
  }
}

void Informer::maybe_resync() {
  if (options_.resync.count() <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_resync_ < options_.resync) return;
  last_resync_ = now;
  for (const auto& obj : list()) {
    if (handlers_.on_update) handlers_.on_update(obj, obj);
  }
}

Informer::WatchEnd Informer::watch_once(std::stop_token& stop, bool& got_events) {
  got_events = false;
  auto stream = client_.watch(options_.path, {options_.label_selector, options_.field_selector,
                                              resource_version(), true, options_.watch_timeout});
  {
    std::lock_guard lock(mu_);
    ++stats_.watches;
    if (!stream) {
      note_failure(stream.error());
      const bool gone = stream.error().message.find(": 410 ") != std::string::npos;
      if (gone) ++stats_.expired;
      warn_failure(stream.error().describe());
      return gone ? WatchEnd::kRelist : WatchEnd::kBackoff;
    }
    current_ = stream->get();
  }
  std::stop_callback on_stop(stop, [this] {
    std::lock_guard lock(mu_);
    if (current_ != nullptr) current_->interrupt();
  });
  WatchEnd end = WatchEnd::kRewatch;
  while (!stop.stop_requested()) {
    auto event = (*stream)->next();
    if (!event) {
      std::lock_guard lock(mu_);
      ++stats_.broken_streams;
      if (!stop.stop_requested()) {
        spdlog::warn("informer {}: watch broke, re-watching from {}: {}", options_.path, rv_,
                     event.error().describe());
      }
      end = got_events ? WatchEnd::kRewatch : WatchEnd::kBackoff;
      break;
    }
    if (!*event) break;  // the server ended the watch (timeoutSeconds): watch again
    const WatchEvent& ev = **event;
    if (ev.type == WatchEventType::kError) {
      std::lock_guard lock(mu_);
      ++stats_.errors;
      if (ev.status_code() == 410) ++stats_.expired;
      spdlog::info("informer {}: watch error {}: {}", options_.path, ev.status_code(),
                   ev.object.value("message", ""));
      end = ev.status_code() == 410 ? WatchEnd::kRelist : WatchEnd::kBackoff;
      break;
    }
    got_events = true;
    apply(ev);
    maybe_resync();
  }
  std::lock_guard lock(mu_);
  current_ = nullptr;
  return end;
}

void Informer::run(std::stop_token stop) {
  Backoff backoff(options_.backoff);
  bool need_list = true;
  bool relisted_last_round = false;
  last_resync_ = std::chrono::steady_clock::now();
  while (!stop.stop_requested()) {
    if (need_list) {
      if (!relist()) {
        sleep(stop, delay(backoff));
        continue;
      }
      need_list = false;
    }
    bool got_events = false;
    switch (watch_once(stop, got_events)) {
      case WatchEnd::kRelist:
        // A server that answers 410 to every fresh watch must not get a tight relist loop.
        if (relisted_last_round && !got_events) sleep(stop, backoff.next());
        need_list = true;
        break;
      case WatchEnd::kBackoff:
        sleep(stop, delay(backoff));
        break;
      case WatchEnd::kRewatch:
        break;
    }
    relisted_last_round = need_list;
    if (got_events) backoff.reset();
  }
}

}  // namespace gleaner::kube
