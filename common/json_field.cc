#include "common/json_field.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "common/json_util.h"

namespace gleaner {

const Json* find_field(const Json& obj, std::string_view key, FieldNames names) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(std::string(key));
  if (it == obj.end() && names == FieldNames::kAnyCase) {
    for (auto i = obj.begin(); i != obj.end(); ++i) {
      const std::string& name = i.key();
      if (name.size() == key.size() &&
          std::equal(name.begin(), name.end(), key.begin(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) ==
                   std::tolower(static_cast<unsigned char>(b));
          })) {
        it = i;
        break;
      }
    }
  }
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

}  // namespace gleaner
