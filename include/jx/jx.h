// jx: NumPy-style arrays and composable transformations for C++.
// The one header users include:  #include <jx/jx.h>   namespace jnp = jx::numpy;
#pragma once

#include "jx/array.h"
#include "jx/config.h"
#include "jx/control_flow/cond.h"
#include "jx/control_flow/scan.h"
#include "jx/control_flow/while_loop.h"
#include "jx/debug.h"
#include "jx/device.h"
#include "jx/dtype.h"
#include "jx/error.h"
#include "jx/io.h"
#include "jx/lax.h"
#include "jx/linalg.h"
#include "jx/numpy.h"
#include "jx/primitive.h"
#include "jx/random.h"
#include "jx/jaxpr.h"
#include "jx/jit.h"
#include "jx/transforms.h"
#include "jx/tree.h"
