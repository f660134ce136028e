// The GPU backend's place. This jx is built without one: the stub below keeps the
// platform name known, so jx::devices("gpu") explains that the backend is not built
// instead of calling "gpu" an unknown platform. A GPU backend replaces this folder's
// stub with a Backend implementation and registers its kernels with register_impl.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace jx::detail {

std::unique_ptr<Backend> make_gpu_backend();

}  // namespace jx::detail
