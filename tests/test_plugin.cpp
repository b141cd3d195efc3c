// The plugin loader on the CPU: stand-in plugins (tests/plugins/standin_plugin.c), each broken in
// one way, are refused with a line naming the plugin and what is wrong; a well-formed one
// registers its variants, and its supports() and launch() answers reach kvbench unchanged.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "plugin/loader.hpp"
#include "plugin/sha256.hpp"

namespace kvbench::plugin {
namespace {

const Known kBuiltin = {{"seed_port", "optimized", "slot_order"},
                        {KVB_OP_CONCAT_MLA_K, KVB_OP_CACHE_WRITE}};

// The message load_plugins throws for `paths`, or "" when it loads.
std::string refusal(const std::vector<std::string>& paths) {
  try {
    load_plugins(paths, kBuiltin);
    return "";
  } catch (const PluginError& e) {
    return e.what();
  }
}

TEST(Plugin, WellFormedRegistersItsVariants) {
  const Plugins p = load_plugins({STANDIN_GOOD}, kBuiltin);
  ASSERT_EQ(p.info().size(), 1u);
  EXPECT_EQ(p.info()[0].path, STANDIN_GOOD);
  EXPECT_EQ(p.info()[0].variants, (std::vector<std::string>{"standin", "standin_mla"}));
  std::ifstream in(STANDIN_GOOD, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(p.info()[0].size, bytes.size());
  EXPECT_EQ(p.info()[0].sha256, sha256_hex(bytes));
  const PluginVariant* v = p.find("standin");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->op, KVB_OP_CACHE_WRITE);
  EXPECT_EQ(v->plugin, STANDIN_GOOD);
  EXPECT_EQ(p.find("standin_mla")->op, KVB_OP_CONCAT_MLA_K);
  EXPECT_EQ(p.find("standin_mla")->supports, nullptr);
  EXPECT_EQ(p.find("optimized"), nullptr);
}

TEST(Plugin, SupportsAndLaunchAnswersReachTheHost) {
  const Plugins p = load_plugins({STANDIN_GOOD}, kBuiltin);
  const PluginVariant* v = p.find("standin");
  kvb_cache_write_args cw{};
  kvb_args args{sizeof(kvb_args), KVB_OP_CACHE_WRITE, nullptr, &cw};
  cw.head_size = 128;
  EXPECT_EQ(v->supports(&args), nullptr);
  cw.head_size = 512;
  EXPECT_STREQ(v->supports(&args), "standin: head_size above 256, its largest");
  char message[64] = {};
  EXPECT_EQ(v->launch(&args, nullptr, message, sizeof message), 7);
  EXPECT_STREQ(message, "standin: launch refused for op 2");
}

TEST(Plugin, TwoPluginsLoadInOrder) {
  const Plugins p = load_plugins({STANDIN_GOOD, STANDIN_OTHER}, kBuiltin);
  ASSERT_EQ(p.variants().size(), 4u);
  EXPECT_EQ(p.find("other")->plugin, STANDIN_OTHER);
}

TEST(Plugin, MissingFile) {
  EXPECT_EQ(refusal({"/nonexistent/x.so"}),
            "/nonexistent/x.so: cannot open plugin: No such file or directory");
}

TEST(Plugin, DirectoryAndNonElf) {
  EXPECT_EQ(refusal({KVBENCH_SOURCE_DIR "/tests"}),
            KVBENCH_SOURCE_DIR "/tests: not a regular file (a plugin is a shared object, .so)");
  EXPECT_EQ(refusal({KVBENCH_SOURCE_DIR "/README.md"}),
            KVBENCH_SOURCE_DIR "/README.md: not an ELF shared object (.so)");
}

TEST(Plugin, WrongAbiVersion) {
  EXPECT_EQ(refusal({STANDIN_BAD_VERSION}),
            std::string(STANDIN_BAD_VERSION) +
                ": built for kvbench plugin ABI version 99; this kvbench speaks version 1");
}

TEST(Plugin, MissingSymbols) {
  EXPECT_EQ(refusal({STANDIN_NO_VERSION}),
            std::string(STANDIN_NO_VERSION) +
                ": no symbol kvbench_plugin_abi_version (KVBENCH_PLUGIN_EXPORT_ABI defines it)");
  EXPECT_EQ(refusal({STANDIN_NO_INIT}),
            std::string(STANDIN_NO_INIT) + ": no symbol kvbench_plugin_init");
}

TEST(Plugin, ClashingNames) {
  EXPECT_EQ(refusal({STANDIN_CLASH}),
            std::string(STANDIN_CLASH) +
                ": kvbench_plugin_init (ABI version 1): variant 'optimized' clashes with "
                "kvbench's own variant of that name");
  EXPECT_EQ(refusal({STANDIN_GOOD, STANDIN_GOOD_COPY}),
            std::string(STANDIN_GOOD_COPY) +
                ": kvbench_plugin_init (ABI version 1): variant 'standin' clashes with the one "
                "registered by " STANDIN_GOOD);
  EXPECT_EQ(refusal({STANDIN_GOOD, STANDIN_GOOD}), std::string(STANDIN_GOOD) + ": given twice");
}

TEST(Plugin, BadRegistrations) {
  EXPECT_EQ(refusal({STANDIN_BAD_NAME}),
            std::string(STANDIN_BAD_NAME) +
                ": kvbench_plugin_init (ABI version 1): variant 'Bad-Name': a name is 1 to 32 "
                "of [a-z0-9_]");
  EXPECT_EQ(refusal({STANDIN_BAD_OP}),
            std::string(STANDIN_BAD_OP) +
                ": kvbench_plugin_init (ABI version 1): variant 'standin': unknown operation 42 "
                "(ABI version 1 knows 1 and 2)");
  EXPECT_EQ(refusal({STANDIN_INIT_FAILS}),
            std::string(STANDIN_INIT_FAILS) +
                ": kvbench_plugin_init (ABI version 1): standin: needs a GPU of compute "
                "capability 12.0");
  EXPECT_EQ(refusal({STANDIN_NO_VARIANT}),
            std::string(STANDIN_NO_VARIANT) + ": kvbench_plugin_init registered no variant");
}

// A plugin that crashes, ends the process or hangs while it loads is refused with one line,
// tried in a child process first: kvbench itself goes on (and never ends with the plugin's 0).
TEST(Plugin, LoadsThatCrashExitOrHangAreRefused) {
  EXPECT_EQ(refusal({STANDIN_LOAD_EXITS}),
            std::string(STANDIN_LOAD_EXITS) +
                ": ended the process while loading or in kvbench_plugin_init (exit status 0; a "
                "plugin returns from kvbench_plugin_init, it never exits)");
  // SIGSEGV, or SIGABRT where a sanitizer turns the fault into an abort.
  const std::string crashed = refusal({STANDIN_INIT_CRASHES});
  EXPECT_TRUE(crashed == std::string(STANDIN_INIT_CRASHES) +
                             ": crashed while loading or in kvbench_plugin_init (SIGSEGV)" ||
              crashed == std::string(STANDIN_INIT_CRASHES) +
                             ": crashed while loading or in kvbench_plugin_init (SIGABRT)")
      << crashed;
  // `throw 42` through the shared C++ runtime, which kvbench's static one cannot catch.
  EXPECT_EQ(refusal({STANDIN_INIT_THROWS}),
            std::string(STANDIN_INIT_THROWS) +
                ": kvbench_plugin_init threw a C++ exception (a plugin reports a failure with "
                "host->fail and a nonzero return)");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(refusal({STANDIN_INIT_HANGS}),
            std::string(STANDIN_INIT_HANGS) +
                ": did not finish loading and kvbench_plugin_init within 30 s (hung?)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

// A plugin's text is one line of UTF-8 wherever kvbench shows or writes it.
// ask_in_child: each answer in order (a newline in one becomes a space), an exception's message,
// and the first question whose answer did not come back, with how it ended.
TEST(Plugin, AskInChildNamesTheQuestionThatEnded) {
  const auto numbers = [](std::size_t i) {
    return i == 1 ? std::string("one\ntwo") : std::to_string(i);
  };
  EXPECT_EQ(ask_in_child(3, numbers, 5), (std::vector<std::string>{"0", "one two", "2"}));
  EXPECT_TRUE(ask_in_child(0, numbers, 5).empty());
  const auto ended = [](const std::function<std::string(std::size_t)>& answer) {
    try {
      ask_in_child(4, answer, 1);
      return std::string("returned");
    } catch (const AskEnded& e) {
      return std::to_string(e.index) + ": " + e.what();
    } catch (const std::runtime_error& e) {
      return std::string("error: ") + e.what();
    }
  };
  EXPECT_EQ(ended([](std::size_t i) -> std::string {
              if (i == 2) throw std::invalid_argument("bad case");
              return "ok";
            }),
            "error: bad case");
  EXPECT_EQ(ended([](std::size_t i) {
              if (i == 2) std::raise(SIGKILL);  // SIGSEGV is SIGABRT under ASan's handler
              return std::string("ok");
            }),
            "2: crashed (SIGKILL)");
  EXPECT_EQ(ended([](std::size_t i) {
              if (i == 3) std::_Exit(4);
              return std::string("ok");
            }),
            "3: ended the process (exit status 4)");
  EXPECT_EQ(ended([](std::size_t i) {
              while (i == 0) std::this_thread::sleep_for(std::chrono::seconds(1));
              return std::string("ok");
            }),
            "0: did not answer within 1 s (hung?)");
}

TEST(Plugin, PluginTextIsOneLineOfUtf8) {
  EXPECT_EQ(refusal({STANDIN_INIT_FAILS_BADLY}),
            std::string(STANDIN_INIT_FAILS_BADLY) +
                ": kvbench_plugin_init (ABI version 1): standin: bad ? byte, second line end");
  EXPECT_EQ(plugin_text(nullptr), "");
  EXPECT_EQ(plugin_text("caf\xc3\xa9 \xe2\x82\xac ok"), "caf\xc3\xa9 \xe2\x82\xac ok");
  EXPECT_EQ(plugin_text("\xc3"), "?");              // a cut character
  EXPECT_EQ(plugin_text("\xed\xa0\x80x"), "???x");  // a surrogate's bytes
  EXPECT_EQ(plugin_text("\xc0\xafx"), "??x");       // an overlong '/'
  EXPECT_EQ(plugin_text("a\r\nb\x7f"), "a  b ");
  const std::string long_text(1000, 'x');
  EXPECT_EQ(plugin_text(long_text.c_str()), std::string(300, 'x') + "...");
  const std::string euros = std::string(299, 'x') + "\xe2\x82\xac";  // cut before, not inside
  EXPECT_EQ(plugin_text(euros.c_str()), std::string(299, 'x') + "...");
}

TEST(Plugin, VariantNames) {
  EXPECT_TRUE(valid_variant_name("a"));
  EXPECT_TRUE(valid_variant_name("triton_seed_2"));
  EXPECT_TRUE(valid_variant_name(std::string(32, 'x')));
  EXPECT_FALSE(valid_variant_name(""));
  EXPECT_FALSE(valid_variant_name(std::string(33, 'x')));
  EXPECT_FALSE(valid_variant_name("has space"));
  EXPECT_FALSE(valid_variant_name("comma,"));
}

#ifdef EXAMPLE_PLUGIN
// examples/plugin, built as a user would build it, loads without a GPU and registers its variant.
TEST(Plugin, ExampleLoads) {
  const Plugins p = load_plugins({EXAMPLE_PLUGIN}, kBuiltin);
  ASSERT_EQ(p.variants().size(), 1u);
  const PluginVariant& v = p.variants()[0];
  EXPECT_EQ(v.name, "plain");
  EXPECT_EQ(v.op, KVB_OP_CACHE_WRITE);
  kvb_cache_write_args cw{};
  const kvb_args args{sizeof(kvb_args), KVB_OP_CACHE_WRITE, nullptr, &cw};
  cw.in_dtype = KVB_DTYPE_BF16;
  cw.out_dtype = KVB_DTYPE_FP8_E4M3;
  EXPECT_EQ(v.supports(&args), nullptr);
  cw.in_dtype = KVB_DTYPE_FP8_E4M3;
  EXPECT_STREQ(v.supports(&args), "inputs must be f32, f16 or bf16");
}
#endif

// FIPS 180-4 test vectors, and one across the 55/56-byte padding boundary.
TEST(Plugin, Sha256KnownAnswers) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
}  // namespace kvbench::plugin
