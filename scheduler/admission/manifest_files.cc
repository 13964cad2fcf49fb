#include "scheduler/admission/manifest_files.h"

#include <algorithm>
#include <filesystem>

#include "common/file_io.h"
#include "common/json_util.h"
#include "kube/yaml_json.h"

namespace gleaner::scheduler::admission {

namespace {

Status add_file(const std::string& path, std::vector<ManifestObject>& out) {
  auto text = read_file(path);
  if (!text) return text.error();
  const auto first = text->find_first_not_of(" \t\r\n");
  std::vector<Json> documents;
  if (first != std::string::npos && ((*text)[first] == '{' || (*text)[first] == '[')) {
    auto json = parse_json(*text, path);
    if (!json) return json.error();
    documents.push_back(std::move(*json));
  } else {
    auto yaml = kube::yaml_documents_to_json(*text, path);
    if (!yaml) return yaml.error();
    documents = std::move(*yaml);
  }
  for (size_t d = 0; d < documents.size(); ++d) {
    Json& doc = documents[d];
    const std::string where = path + " document " + std::to_string(d + 1);
    if (doc.is_null()) continue;
    if (!doc.is_object()) return make_error(ErrorCode::kParse, where + " is not an object");
    if (doc.contains("items")) {
      if (!doc["items"].is_array())
        return make_error(ErrorCode::kParse, where + ": items is not a list");
      for (size_t i = 0; i < doc["items"].size(); ++i)
        out.push_back({std::move(doc["items"][i]), where + " item " + std::to_string(i + 1)});
      continue;
    }
    out.push_back({std::move(doc), where});
  }
  return ok_status();
}

}  // namespace

Result<std::vector<ManifestObject>> read_manifest_objects(const std::string& path) {
  std::vector<ManifestObject> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    if (Status s = add_file(path, out); !s) return s.error();
    return out;
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json"))
      files.push_back(entry.path().string());
  }
  if (ec) return make_error(ErrorCode::kIo, path + ": " + ec.message());
  std::sort(files.begin(), files.end());
  for (const auto& f : files)
    if (Status s = add_file(f, out); !s) return s.error();
  return out;
}

Result<std::vector<Json>> read_objects(const std::string& path) {
  auto objects = read_manifest_objects(path);
  if (!objects) return objects.error();
  std::vector<Json> out;
  out.reserve(objects->size());
  for (ManifestObject& o : *objects)
    out.push_back(std::move(o.object));
  return out;
}

}  // namespace gleaner::scheduler::admission
