// Fixture for repo.layers_catch_upward: the command line may include any floor.
#pragma once

#include "ops/op/stages.hpp"
#include "runtime/runner.hpp"
