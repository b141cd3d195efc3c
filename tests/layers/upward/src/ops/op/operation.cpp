// Fixture for repo.layers_catch_upward: an operation's pure part reaching into its launch.
#include "ops/op/launch.hpp"
#include "ops/op/operation.hpp"
