// A plugin whose kvbench_plugin_init throws (an int, as `throw 42` does), built against the
// shared C++ runtime as a plugin built outside kvbench is: the loader must say that it threw.
#include "kvbench/kvbench.h"

KVBENCH_PLUGIN_EXPORT_ABI;

extern "C" KVBENCH_PLUGIN_API int32_t kvbench_plugin_init(uint32_t, const kvb_host*) { throw 42; }
