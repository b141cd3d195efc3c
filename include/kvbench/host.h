/* kvbench as a library: libkvbench.so, built from the sources of the kvbench executable, for a
 * program that hosts kvbench in its own process (the Python package in python/kvbench is one;
 * docs/python.md). It exports only the functions below.
 *
 * The host registers its variants with kvbench_add_variant (the same kvb_variant a plugin
 * registers, include/kvbench/kvbench.h, checked the same way), then runs kvbench's command line
 * with kvbench_main. `kvbench run` runs each case in a worker process, as always: the host says
 * with kvbench_set_worker_command how to start one. A worker is the host program again, which
 * registers the same variants from the same source files and calls kvbench_main with the
 * arguments it was given (`worker CONFIG --setup ...`). The sidecar records each source file's
 * path, size and SHA-256 as it records a plugin's, and a worker refuses a source that changed. */
#ifndef KVBENCH_HOST_H
#define KVBENCH_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "kvbench/kvbench.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define KVBENCH_HOST_API __declspec(dllexport)
#else
#define KVBENCH_HOST_API __attribute__((visibility("default")))
#endif

/* The kvbench command line: argv[0] is the program's name, argv[1] the subcommand (run, list,
 * worker, ...). Returns its exit code (docs/cli.md); errors are one line on stderr, as the
 * executable prints them. Never exits the process, except `--help` and `--version`, which
 * return 0 after printing. */
KVBENCH_HOST_API int kvbench_main(int argc, const char* const* argv);

/* Registers a variant of the hosting program, defined in the file `source_path` (recorded in the
 * sidecar: path, size, SHA-256). Call it before kvbench_main. Returns 0, or 3 (the exit code of
 * bad input) when refused: a bad or clashing name, an unknown operation, no launch function, an
 * unreadable source; then `message` (NUL-terminated, at most message_size bytes) says why in one
 * line naming the source and the variant. The strings of *variant are copied. */
KVBENCH_HOST_API int32_t kvbench_add_variant(const kvb_variant* variant, const char* source_path,
                                             char* message, size_t message_size);

/* The command `kvbench run` starts its workers with (argv[0] an absolute path; the worker's
 * arguments follow), instead of kvbench's own executable (/proc/self/exe, which in a host is the
 * host's program). argc 0: kvbench's own again. Returns 0 (3 when out of memory). */
KVBENCH_HOST_API int32_t kvbench_set_worker_command(int argc, const char* const* argv);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KVBENCH_HOST_H */
