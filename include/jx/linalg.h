#pragma once
#include "jx/array.h"
