#include "common/quantity.h"

#include <array>
#include <limits>
#include <string>

namespace gleaner {
namespace {

__extension__ using Wide = __int128;  // exact intermediate arithmetic

constexpr int kMaxDigits = 30;  // keeps the mantissa well inside 128 bits
constexpr int kMaxExponent = 40;

struct Suffix {
  std::string_view text;
  int exp10;
  int exp2;
};

constexpr std::array<Suffix, 16> kSuffixes{{
    {"Ki", 0, 10},
    {"Mi", 0, 20},
    {"Gi", 0, 30},
    {"Ti", 0, 40},
    {"Pi", 0, 50},
    {"Ei", 0, 60},
    {"n", -9, 0},
    {"u", -6, 0},
    {"m", -3, 0},
    {"", 0, 0},
    {"k", 3, 0},
    {"M", 6, 0},
    {"G", 9, 0},
    {"T", 12, 0},
    {"P", 15, 0},
    {"E", 18, 0},
}};

Error bad(std::string_view text, const char* why) {
  return make_error(ErrorCode::kParse,
                    "invalid quantity \"" + std::string(text) + "\": " + std::string(why));
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Parses the suffix: a known SI suffix or a decimal exponent "e<int>" / "E<int>".
bool parse_suffix(std::string_view s, int& exp10, int& exp2) {
  for (const auto& suffix : kSuffixes) {
    if (s == suffix.text) {
      exp10 = suffix.exp10;
      exp2 = suffix.exp2;
      return true;
    }
  }
  if (s.size() < 2 || (s[0] != 'e' && s[0] != 'E')) return false;
  std::string_view digits = s.substr(1);
  bool negative = false;
  if (digits[0] == '+' || digits[0] == '-') {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty() || digits.size() > 3) return false;
  int value = 0;
  for (char c : digits) {
    if (!is_digit(c)) return false;
    value = value * 10 + (c - '0');
  }
  exp10 = negative ? -value : value;
  exp2 = 0;
  return true;
}

}  // namespace

Result<Quantity> Quantity::parse(std::string_view text) {
  if (text.empty()) return bad(text, "empty");
  std::string_view s = text;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  Wide mantissa = 0;
  int digits = 0;
  int fraction_digits = 0;
  bool seen_point = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (!is_digit(c)) break;
    if (mantissa == 0 && c == '0') {
      if (seen_point) ++fraction_digits;  // leading zeros add no precision but shift scale
      continue;
    }
    if (++digits > kMaxDigits) return bad(text, "too many digits");
    mantissa = mantissa * 10 + (c - '0');
    if (seen_point) ++fraction_digits;
  }
  bool any_digit = false;
  for (size_t k = 0; k < i; ++k)
    any_digit = any_digit || is_digit(s[k]);
  if (!any_digit) return bad(text, "no digits");

  int exp10 = 0;
  int exp2 = 0;
  if (!parse_suffix(s.substr(i), exp10, exp2)) {
    return bad(text, "unknown suffix (expected n, u, m, k, M, G, T, P, E, Ki..Ei or e<exp>)");
  }

  // milli = mantissa * 10^(exp10 - fraction_digits + 3) * 2^exp2, rounded up.
  int scale = exp10 - fraction_digits + 3;
  if (scale > kMaxExponent || scale < -kMaxExponent) return bad(text, "exponent out of range");
  const Wide limit = std::numeric_limits<int64_t>::max();
  Wide value = mantissa;
  for (int k = 0; k < exp2; ++k) {
    value *= 2;
    if (value > limit) return bad(text, "out of range");
  }
  if (scale >= 0) {
    for (int k = 0; k < scale && value != 0; ++k) {
      value *= 10;
      if (value > limit) return bad(text, "out of range");
    }
  } else {
    // Round up, like MilliValue(). Once the divisor exceeds the value the result is 1 (or 0
    // for zero), so stop before the divisor itself could overflow.
    Wide divisor = 1;
    for (int k = 0; k < -scale && divisor <= value; ++k)
      divisor *= 10;
    value = divisor > value ? (value > 0 ? 1 : 0) : (value + divisor - 1) / divisor;
  }
  // A mantissa past the limit with nothing to scale ("9223372036854775808m"), or rounding
  // up that carries past it ("9223372036854775807.5m").
  if (value > limit) return bad(text, "out of range");
  auto milli = static_cast<int64_t>(value);
  return Quantity(negative ? -milli : milli);
}

int64_t Quantity::value() const {
  if (milli_ >= 0) return milli_ / 1000 + (milli_ % 1000 != 0 ? 1 : 0);
  return milli_ / 1000 - (milli_ % 1000 != 0 ? 1 : 0);
}

std::string Quantity::to_string() const {
  if (milli_ % 1000 == 0) return std::to_string(milli_ / 1000);
  return std::to_string(milli_) + "m";
}

}  // namespace gleaner
