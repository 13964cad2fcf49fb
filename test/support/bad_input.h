#pragma once
// Table tests of malformed input: each input must be rejected with an error whose message
// names what is wrong (the project's rule for bad input: a clear error, nothing applied).

#include <initializer_list>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "common/result.h"

namespace gleaner::testing {

// A malformed input and words its error message must contain.
struct BadInput {
  const char* text;
  const char* says;
};

// `parse(text)` returns a Result; each of `cases` must fail, with `code` when given.
template <typename Parse>
void expect_each_rejected(std::initializer_list<BadInput> cases, Parse parse,
                          std::optional<ErrorCode> code = std::nullopt) {
  for (const BadInput& c : cases) {
    auto r = parse(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    if (code) {
      EXPECT_EQ(r.error().code, *code) << c.text;
    }
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
  }
}

}  // namespace gleaner::testing
