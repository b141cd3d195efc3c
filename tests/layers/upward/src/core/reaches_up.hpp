// Fixture for repo.layers_catch_upward: every include below reaches above its floor.
#pragma once

#include <cuda_runtime_api.h>

#include "core/types.hpp"
#include "kernels/op/plan.hpp"
#include "ops/op/operation.hpp"
#include "runtime/runner.hpp"
