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

// A field of the wrong JSON type: kParse, "<where>: expected <want>, got <type>".
Error wrong_type(const std::string& where, const char* want, const Json& got) {
  return make_error(ErrorCode::kParse,
                    where + ": expected " + want + ", got " + std::string(got.type_name()));
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

Result<LabelSelector> LabelSelector::from_json(const Json& json, std::string_view where,
                                               FieldNames names) {
  LabelSelector sel;
  const std::string at(where);
  if (json.is_null()) return sel;
  if (!json.is_object()) return wrong_type(at, "an object", json);
  if (const Json* labels = find_field(json, "matchLabels", names)) {
    const std::string base = at + ".matchLabels";
    if (!labels->is_object()) return wrong_type(base, "an object", *labels);
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) return wrong_type(base + "." + key, "a string", value);
      const std::string& text = value.get_ref<const std::string&>();
      if (!valid_key(key)) return invalid_field(base + "." + key, "invalid label key");
      if (!valid_value(text)) {
        return invalid_field(base + "." + key, "invalid label value \"" + text + "\"");
      }
      sel.reqs_.push_back({key, LabelOp::kIn, {text}});
    }
  }
  if (const Json* exprs = find_field(json, "matchExpressions", names)) {
    const std::string base = at + ".matchExpressions";
    if (!exprs->is_array()) return wrong_type(base, "an array", *exprs);
    for (size_t i = 0; i < exprs->size(); ++i) {
      auto req = requirement_from_json((*exprs)[i], base + "[" + std::to_string(i) + "]",
                                       RequirementOps::kLabelSelector, names);
      if (!req) return req.error();
      sel.reqs_.push_back(std::move(*req));
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
    out += req.to_string();
  }
  return out;
}

Result<LabelRequirement> requirement_from_json(const Json& e, const std::string& where,
                                               RequirementOps ops, FieldNames names) {
  if (!e.is_object()) return wrong_type(where, "an object", e);
  const Json* key = find_field(e, "key", names);
  const Json* op = find_field(e, "operator", names);
  if (key != nullptr && !key->is_string()) return wrong_type(where + ".key", "a string", *key);
  if (key == nullptr || key->get_ref<const std::string&>().empty()) {
    return invalid_field(where + ".key", "expected a label key");
  }
  if (op == nullptr) return invalid_field(where + ".operator", "required");
  if (!op->is_string()) return wrong_type(where + ".operator", "a string", *op);
  LabelRequirement r;
  r.key = key->get<std::string>();
  const std::string o = op->get<std::string>();
  if (o == "In") {
    r.op = LabelOp::kIn;
  } else if (o == "NotIn") {
    r.op = LabelOp::kNotIn;
  } else if (o == "Exists") {
    r.op = LabelOp::kExists;
  } else if (o == "DoesNotExist") {
    r.op = LabelOp::kDoesNotExist;
  } else if ((o == "Gt" || o == "Lt") && ops == RequirementOps::kNodeSelector) {
    r.op = o == "Gt" ? LabelOp::kGt : LabelOp::kLt;
  } else if (o == "Gt" || o == "Lt") {
    return invalid_field(where + ".operator",
                         "operator " + o +
                             " is not valid in a label selector (In, NotIn, Exists, "
                             "DoesNotExist; Gt and Lt belong to node affinity only)");
  } else {
    return invalid_field(where + ".operator", "operator " + o + " is not supported by gleaner");
  }
  size_t count = 0;
  if (const Json* v = find_field(e, "values", names)) {
    if (!v->is_array()) return wrong_type(where + ".values", "an array", *v);
    count = v->size();
    for (size_t i = 0; i < v->size(); ++i) {
      const Json& s = (*v)[i];
      if (!s.is_string()) {
        return wrong_type(where + ".values[" + std::to_string(i) + "]", "a string", s);
      }
      r.values.insert(s.get<std::string>());
    }
  }
  if (r.op == LabelOp::kGt || r.op == LabelOp::kLt) {
    // Counted from the list, not the set: ["1", "1"] is two values to the API server.
    if (count != 1) {
      return invalid_field(where + ".values", "exactly one value is required for " + o + ", got " +
                                                  std::to_string(count));
    }
    if (!label_integer(*r.values.begin())) {
      return invalid_field(where + ".values[0]",
                           "\"" + *r.values.begin() + "\" is not an integer (" + o + ")");
    }
    return r;
  }
  const bool wants_values = r.op == LabelOp::kIn || r.op == LabelOp::kNotIn;
  if (wants_values == r.values.empty()) {
    return invalid_field(where + ".values",
                         wants_values ? "required for " + o : "must be empty for " + o);
  }
  return r;
}

Result<std::vector<std::vector<LabelRequirement>>> node_selector_terms(const Json& terms,
                                                                       const std::string& where) {
  if (!terms.is_array()) return invalid_field(where, "expected an array");
  std::vector<std::vector<LabelRequirement>> out;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Json& term = terms[i];
    const std::string tp = where + "[" + std::to_string(i) + "]";
    if (!term.is_object()) return invalid_field(tp, "expected an object");
    if (auto f = term.find("matchFields"); f != term.end() && f->is_array() && !f->empty()) {
      return invalid_field(tp + ".matchFields", "not supported by gleaner");
    }
    std::vector<LabelRequirement> reqs;
    if (auto m = term.find("matchExpressions"); m != term.end() && !m->is_null()) {
      if (!m->is_array()) return invalid_field(tp + ".matchExpressions", "expected an array");
      for (size_t j = 0; j < m->size(); ++j) {
        auto r = requirement_from_json((*m)[j], tp + ".matchExpressions[" + std::to_string(j) + "]",
                                       RequirementOps::kNodeSelector);
        if (!r) return r.error();
        reqs.push_back(std::move(*r));
      }
    }
    out.push_back(std::move(reqs));
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
