// Fixture for repo.layers_catch_upward: a kernel header reaching into core.
#pragma once

#include "core/sweep.hpp"
