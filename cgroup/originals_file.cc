#include "cgroup/originals_file.h"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <fcntl.h>
#include <unistd.h>

#include "cgroup/parsers.h"
#include "common/file_io.h"
#include "common/json_util.h"

namespace gleaner::cgroup {
namespace {

constexpr int kFormat = 1;

Error corrupt(std::string_view where, const std::string& what) {
  return make_error(ErrorCode::kParse, std::string(where) + ": " + what);
}

// Writes, flushes to disk and closes; the rename after it is then atomic and durable.
Status write_synced(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return errno_error(errno, "open " + path);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return errno_error(err, "write " + path);
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!synced) return errno_error(err, "fsync " + path);
  return ok_status();
}

}  // namespace

Result<LoadedOriginals> parse_originals(std::string_view text, std::string_view where,
                                        std::string_view boot_id) {
  auto json = parse_json(text, where);
  if (!json) return json.error();
  if (!json->is_object()) return corrupt(where, "not a JSON object");
  auto format = json->find("format");
  if (format == json->end() || !format->is_number_integer() || format->get<int>() != kFormat) {
    return corrupt(where, "format: expected 1");
  }
  LoadedOriginals out;
  auto boot = json->find("bootId");
  if (boot == json->end() || !boot->is_string()) return corrupt(where, "bootId: missing");
  if (!boot_id.empty() && boot->get<std::string>() != boot_id) {
    out.other_boot = true;
    return out;
  }
  auto cgroups = json->find("cgroups");
  if (cgroups == json->end() || !cgroups->is_array()) return corrupt(where, "cgroups: not a list");
  for (size_t i = 0; i < cgroups->size(); ++i) {
    const Json& entry = (*cgroups)[i];
    const std::string at = "cgroups[" + std::to_string(i) + "]";
    auto field = [&](const char* name) -> std::optional<std::string> {
      auto it = entry.is_object() ? entry.find(name) : entry.end();
      if (it == entry.end() || !it->is_string()) return std::nullopt;
      return it->get<std::string>();
    };
    auto path = field("path");
    auto resource_name = field("resource");
    auto cgroup = field("cgroup");
    auto content = field("content");
    if (!path || !resource_name || !cgroup || !content) {
      return corrupt(where, at + ": path, resource, cgroup and content must be strings");
    }
    auto resource = resource_named(*resource_name);
    if (!resource) return corrupt(where, at + ".resource: unknown '" + *resource_name + "'");
    // A cgroup is a relative path below the root: nothing that climbs out of it.
    if (cgroup->find("..") != std::string::npos || (!cgroup->empty() && (*cgroup)[0] == '/')) {
      return corrupt(where, at + ".cgroup: '" + *cgroup + "' is not a relative cgroup path");
    }
    out.originals.insert_or_assign(*path,
                                   FileWrite{*resource, *cgroup, *path, "", *content, "restore"});
  }
  for (const auto& [key, value] : json->items()) {
    if (key != "format" && key != "bootId" && key != "cgroups") out.sections[key] = value;
  }
  return out;
}

std::string format_originals(const Originals& originals, std::string_view boot_id,
                             const Json& sections) {
  Json list = Json::array();
  for (const auto& [path, w] : originals) {
    list.push_back({{"path", path},
                    {"resource", to_string(w.resource)},
                    {"cgroup", w.cgroup},
                    {"content", w.content}});
  }
  Json doc = {{"format", kFormat}, {"bootId", std::string(boot_id)}, {"cgroups", list}};
  for (const auto& [key, value] : sections.items()) {
    if (!doc.contains(key)) doc[key] = value;
  }
  // Directory names come from the node: never let one that is not UTF-8 make this throw.
  return doc.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
}

Result<LoadedOriginals> OriginalsFile::load() const {
  auto text = read_file(path_);
  if (!text) return text.error();
  return parse_originals(*text, path_, boot_id_);
}

Status OriginalsFile::save(const Originals& originals, const Json& sections) const {
  std::error_code ec;
  const auto dir = std::filesystem::path(path_).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::kIo, dir.string() + ": " + ec.message());
  const std::string tmp = path_ + ".tmp";
  // A failed save leaves no partial file behind (a full disk would otherwise keep it).
  if (auto written = write_synced(tmp, format_originals(originals, boot_id_, sections)); !written) {
    (void)::unlink(tmp.c_str());
    return written;
  }
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    (void)::unlink(tmp.c_str());
    return errno_error(err, "rename " + path_);
  }
  // The rename itself is durable once the directory is synced.
  if (int d = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); d >= 0) {
    (void)::fsync(d);
    ::close(d);
  }
  return ok_status();
}

Status OriginalsFile::remove() const {
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
    return errno_error(errno, "unlink " + path_);
  }
  return ok_status();
}

Status OriginalsFile::set_aside() const {
  const std::string aside = path_ + ".corrupt";
  if (::rename(path_.c_str(), aside.c_str()) != 0) {
    return errno_error(errno, "rename " + path_);
  }
  return ok_status();
}

std::string read_boot_id(const std::string& proc_root) {
  auto text = read_file(join_path(proc_root, "sys/kernel/random/boot_id"));
  return text ? std::string(trim(*text)) : std::string();
}

}  // namespace gleaner::cgroup
