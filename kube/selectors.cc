#include "kube/selectors.h"

#include <algorithm>
#include <cctype>

#include "common/json_util.h"
#include "common/strings.h"

namespace gleaner::kube {
namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

// A label value: empty, or up to 63 alphanumerics with -_. inside.
bool valid_value(std::string_view v) {
  if (v.empty()) return true;
  if (v.size() > 63) return false;
  for (char c : v) {
    if (!is_name_char(c)) return false;
  }
  return std::isalnum(static_cast<unsigned char>(v.front())) &&
         std::isalnum(static_cast<unsigned char>(v.back()));
}

// A label key: an optional DNS-subdomain prefix and "/", then a non-empty name.
bool valid_key(std::string_view k) {
  size_t slash = k.find('/');
  std::string_view name = slash == std::string_view::npos ? k : k.substr(slash + 1);
  if (slash != std::string_view::npos) {
    std::string_view prefix = k.substr(0, slash);
    if (prefix.empty() || prefix.size() > 253) return false;
    for (char c : prefix) {
      if (!is_name_char(c) || c == '_') return false;
    }
  }
  return !name.empty() && valid_value(name);
}

Error bad(std::string_view text, const std::string& why) {
  return make_error(ErrorCode::kParse, "label selector \"" + std::string(text) + "\": " + why);
}

}  // namespace

Result<LabelSelector> LabelSelector::parse(std::string_view text) {
  LabelSelector sel;
  if (trim(text).empty()) return sel;
  std::vector<std::string_view> terms;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] == '(') ++depth;
    if (i < text.size() && text[i] == ')') --depth;
    if (depth < 0 || depth > 1) return bad(text, "unbalanced parentheses");
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      terms.push_back(trim(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (depth != 0) return bad(text, "unbalanced parentheses");
  for (std::string_view term : terms) {
    LabelRequirement req;
    if (term.empty()) return bad(text, "empty requirement");
    if (term.front() == '!') {
      req.key = std::string(trim(term.substr(1)));
      req.op = LabelOp::kDoesNotExist;
    } else {
      size_t end = 0;
      while (end < term.size() &&
             std::string_view(" \t=!(),").find(term[end]) == std::string_view::npos) {
        ++end;
      }
      req.key = std::string(term.substr(0, end));
      std::string_view rest = trim(term.substr(end));
      auto single = [&](size_t op_len, LabelOp op) {
        req.op = op;
        req.values.insert(std::string(trim(rest.substr(op_len))));
      };
      if (rest.empty()) {
        req.op = LabelOp::kExists;
      } else if (rest.starts_with("==")) {
        single(2, LabelOp::kIn);
      } else if (rest.starts_with("!=")) {
        single(2, LabelOp::kNotIn);
      } else if (rest.starts_with("=")) {
        single(1, LabelOp::kIn);
      } else if (rest.starts_with("in") || rest.starts_with("notin")) {
        req.op = rest.starts_with("in") ? LabelOp::kIn : LabelOp::kNotIn;
        rest = trim(rest.substr(req.op == LabelOp::kIn ? 2 : 5));
        if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')') {
          return bad(text, "expected a parenthesised value set after \"" + req.key + " in\"");
        }
        std::string_view list = rest.substr(1, rest.size() - 2);
        for (size_t pos = 0;;) {
          size_t comma = list.find(',', pos);
          req.values.insert(std::string(trim(list.substr(pos, comma - pos))));
          if (comma == std::string_view::npos) break;
          pos = comma + 1;
        }
      } else {
        return bad(text, "unexpected \"" + std::string(rest) + "\" after key " + req.key);
      }
    }
    if (!valid_key(req.key)) return bad(text, "invalid label key \"" + req.key + "\"");
    for (const auto& v : req.values) {
      if (!valid_value(v)) return bad(text, "invalid label value \"" + v + "\"");
    }
    sel.reqs_.push_back(std::move(req));
  }
  return sel;
}

Result<LabelSelector> LabelSelector::from_json(const Json& json, std::string_view where) {
  LabelSelector sel;
  auto fail = [&](const std::string& why) {
    return make_error(ErrorCode::kParse, std::string(where) + ": " + why);
  };
  if (json.is_null()) return sel;
  if (!json.is_object()) return fail("a label selector must be an object");
  if (auto it = json.find("matchLabels"); it != json.end() && !it->is_null()) {
    if (!it->is_object()) return fail("matchLabels must be an object");
    for (const auto& [key, value] : it->items()) {
      if (!value.is_string()) return fail("matchLabels." + key + " must be a string");
      if (!valid_key(key) || !valid_value(value.get<std::string>())) {
        return fail("invalid label " + key + "=" + value.dump());
      }
      sel.reqs_.push_back({key, LabelOp::kIn, {value.get<std::string>()}});
    }
  }
  if (auto it = json.find("matchExpressions"); it != json.end() && !it->is_null()) {
    if (!it->is_array()) return fail("matchExpressions must be a list");
    for (const auto& expr : *it) {
      if (!expr.is_object() || !expr.contains("key") || !expr["key"].is_string() ||
          !expr.contains("operator") || !expr["operator"].is_string()) {
        return fail("each matchExpressions entry needs a string key and operator");
      }
      LabelRequirement req{expr["key"].get<std::string>(), LabelOp::kIn, {}};
      const auto op = expr["operator"].get<std::string>();
      if (op == "In") {
        req.op = LabelOp::kIn;
      } else if (op == "NotIn") {
        req.op = LabelOp::kNotIn;
      } else if (op == "Exists") {
        req.op = LabelOp::kExists;
      } else if (op == "DoesNotExist") {
        req.op = LabelOp::kDoesNotExist;
      } else {
        return fail("unknown operator \"" + op + "\"");
      }
      if (auto values = expr.find("values"); values != expr.end() && !values->is_null()) {
        if (!values->is_array()) return fail("values of " + req.key + " must be a list");
        for (const auto& v : *values) {
          if (!v.is_string()) return fail("values of " + req.key + " must be strings");
          req.values.insert(v.get<std::string>());
        }
      }
      const bool set_op = req.op == LabelOp::kIn || req.op == LabelOp::kNotIn;
      if (set_op == req.values.empty()) {
        return fail("operator " + op + (set_op ? " needs values" : " takes no values"));
      }
      sel.reqs_.push_back(std::move(req));
    }
  }
  return sel;
}

bool LabelSelector::matches(const Labels& labels) const {
  return std::all_of(reqs_.begin(), reqs_.end(),
                     [&](const LabelRequirement& r) { return r.matches(labels); });
}

std::string LabelSelector::to_string() const {
  std::string out;
  for (const auto& req : reqs_) {
    if (!out.empty()) out += ',';
    const bool single = req.values.size() == 1;
    switch (req.op) {
      case LabelOp::kExists:
        out += req.key;
        break;
      case LabelOp::kDoesNotExist:
        out += "!" + req.key;
        break;
      case LabelOp::kIn:
      case LabelOp::kNotIn: {
        if (single) {
          out += req.key + (req.op == LabelOp::kIn ? "=" : "!=") + *req.values.begin();
          break;
        }
        out += req.key + (req.op == LabelOp::kIn ? " in (" : " notin (");
        bool first = true;
        for (const auto& v : req.values) {
          out += (first ? "" : ",") + v;
          first = false;
        }
        out += ")";
      }
    }
  }
  return out;
}

std::string url_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

std::string query_string(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out;
  for (const auto& [key, value] : params) {
    if (value.empty()) continue;
    out += (out.empty() ? "?" : "&") + key + "=" + url_encode(value);
  }
  return out;
}

}  // namespace gleaner::kube
