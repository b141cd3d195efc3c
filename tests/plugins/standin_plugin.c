/* Stand-in plugins for the loader's CPU tests: one source, built once per STANDIN_* flavour
 * (tests/CMakeLists.txt), each breaking the ABI in one way. The well-formed flavour registers
 * one variant per operation: its supports() refuses one size, and its launch() fails with a
 * message (no GPU is needed to show either). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvbench/kvbench.h"

#ifndef STANDIN_NO_VERSION
#ifdef STANDIN_BAD_VERSION
KVBENCH_PLUGIN_API const uint32_t kvbench_plugin_abi_version = 99;
#else
KVBENCH_PLUGIN_EXPORT_ABI;
#endif
#endif

/* Refuses head_size above 256; SUPPORTS_CRASHES, _EXITS, _HANGS: dies of SIGSEGV, calls exit(0),
 * never returns, there instead. */
static const char* supports(const kvb_args* args) {
  if (args->op == KVB_OP_CACHE_WRITE && args->cache_write->head_size > 256) {
#if defined(STANDIN_SUPPORTS_CRASHES)
    raise(SIGSEGV);
#elif defined(STANDIN_SUPPORTS_EXITS)
    exit(0);
#elif defined(STANDIN_SUPPORTS_HANGS)
    for (;;) pause();
#endif
    return "standin: head_size above 256, its largest";
  }
  return NULL;
}

/* Fails with a message; CRASH: dies of SIGSEGV; HANG: never returns. */
static int32_t launch(const kvb_args* args, void* stream, char* message, size_t size) {
  (void)stream;
#if defined(STANDIN_CRASH)
  raise(SIGSEGV);
#elif defined(STANDIN_HANG)
  for (;;) pause();
#endif
  snprintf(message, size, "standin: launch refused for op %d", (int)args->op);
  return 7;
}

#ifdef STANDIN_DTOR_ABORTS
/* Aborts as the process ends (a destructor of the plugin's). */
__attribute__((destructor)) static void abort_at_exit(void) { abort(); }
#endif

#ifdef STANDIN_LOAD_EXITS
/* Ends the process, status 0, as the loader runs its constructors. */
__attribute__((constructor)) static void end_at_load(void) { exit(0); }
#endif

#ifndef STANDIN_NO_INIT
KVBENCH_PLUGIN_API int32_t kvbench_plugin_init(uint32_t abi_version, const kvb_host* host) {
  (void)abi_version;
#ifdef STANDIN_INIT_BLOCKS_SIGNALS
  {
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    signal(SIGTERM, SIG_IGN);
  }
#endif
#ifdef STANDIN_INIT_FORKS
  (void)fork(); /* both processes return from init */
#endif
#ifdef STANDIN_INIT_CHDIR
  if (chdir("/") != 0) return 1;
#endif
#ifdef STANDIN_INIT_PRINTS
  printf("standin: hello from init\n"); /* buffered: it leaves at the next flush */
#endif
#if defined(STANDIN_INIT_FAILS)
  host->fail(host->context, "standin: needs a GPU of compute capability 12.0");
  return 1;
#elif defined(STANDIN_INIT_CRASHES)
  (void)host;
  raise(SIGSEGV);
  return 0;
#elif defined(STANDIN_INIT_HANGS)
  (void)host;
  for (;;) pause();
#elif defined(STANDIN_INIT_FAILS_BADLY)
  /* Bytes that are not UTF-8, a newline and a tab: one line of UTF-8 in kvbench's error. */
  host->fail(host->context, "standin: bad \xff byte,\nsecond line\tend");
  return 1;
#elif defined(STANDIN_NO_VARIANT)
  (void)host;
  return 0;
#else
#if defined(STANDIN_CLASH)
  const char* name = "optimized";
#elif defined(STANDIN_BAD_NAME)
  const char* name = "Bad-Name";
#else
  const char* name = STANDIN_NAME;
#endif
#ifdef STANDIN_BAD_OP
  const int32_t op = 42;
#else
  const int32_t op = KVB_OP_CACHE_WRITE;
#endif
  const kvb_variant cache = {name, "stand-in cache write for the loader's tests", op, supports,
                             launch};
  if (host->add_variant(host->context, &cache) != 0) return 1;
  char concat_name[40];
  snprintf(concat_name, sizeof concat_name, "%s_mla", name);
  const kvb_variant concat = {concat_name, "stand-in concat", KVB_OP_CONCAT_MLA_K, NULL, launch};
  return host->add_variant(host->context, &concat);
#endif
}
#endif
