// Fixture for repo.layers_catch_upward: the harness reaching into an operation's stages and the
// command line.
#pragma once

#include "cli/commands.hpp"
#include "ops/op/stages.hpp"
#include "runtime/case_sets.hpp"
