// GoogleTest glue for jx::test_util::check_grads.
#pragma once

#include <gtest/gtest.h>

#include "jx/test_util.h"

// JX_EXPECT_GRADS_OK(f, std::tuple{x, y}, {.order = 2}): a non-fatal failure carrying
// check_grads' message (mode, order, argument, errors, tolerances) when it raises.
#define JX_EXPECT_GRADS_OK(...)                                                  \
  do {                                                                           \
    try {                                                                        \
      ::jx::test_util::check_grads(__VA_ARGS__);                                 \
    } catch (const ::jx::Error& e_) {                                            \
      ADD_FAILURE() << "check_grads(" #__VA_ARGS__ ") failed: " << e_.what();   \
    }                                                                            \
  } while (0)
