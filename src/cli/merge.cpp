// `kvbench merge OUT.csv SHARD.csv...`: the CSVs of a sharded run (`--shard I/N`, one per host or
// Slurm task) as one, in case order, with one sidecar listing every device. Refuses shards of
// another schema or config and duplicate cases; names the cases no shard holds.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/flags.hpp"
#include "core/csv.hpp"
#include "core/file_io.hpp"
#include "core/metadata.hpp"
#include "core/operation.hpp"
#include "core/outputs.hpp"
#include "core/result_csv.hpp"
#include "core/shard.hpp"
#include "core/sidecar.hpp"
#include "core/sweep.hpp"
#include "plugin/loader.hpp"

namespace kvbench::cli {
namespace {

std::string slurp(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": cannot open " + what);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Lines as read_results numbers them: a UTF-8 byte order mark and each line's '\r' dropped.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? text.substr(3) : text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

// Up to 20 numbers, then how many more.
std::string list_text(const std::vector<std::size_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size() && i < 20; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() > 20) s += ", and " + std::to_string(v.size() - 20) + " more";
  return s;
}

struct MergeArgs {
  std::string output;
  std::vector<std::string> shards;
  bool allow_missing = false;
  std::string config;  // --config; empty: the path the shards' sidecars name
};

// Each shard's sidecar (config hash, shard, --case), all of one run.
struct Shards {
  std::vector<std::string> sidecars;
  std::vector<std::string> sidecar_paths;
  std::vector<ShardRecord> records;
};

Shards read_sidecars(const std::vector<std::string>& shards) {
  Shards s;
  for (const std::string& path : shards) {
    // A pipe (<(cat s0.csv)) has no sidecar beside it; its link's target (pipe:[N]) is no name.
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode))
      throw std::invalid_argument("shard " + path +
                                  ": a pipe, which has no sidecar (merge needs each shard's "
                                  "<csv>.json beside it: name the shard's file)");
    s.sidecars.push_back(
        slurp(sidecar_path(path), "sidecar (merge needs each shard's <csv>.json)"));
    s.sidecar_paths.push_back(sidecar_path(path));
    s.records.push_back(read_shard_record(s.sidecars.back(), s.sidecar_paths.back()));
    const std::string why = shard_mismatch(s.records.front(), sidecar_path(shards.front()),
                                           s.records.back(), sidecar_path(path));
    if (!why.empty()) throw std::invalid_argument(why);
  }
  return s;
}

// The plugins' and Python variants the shards ran, named and added to the operations their
// sidecar records, so that --variants numbers their cases as the run did. Nothing is loaded:
// merge launches nothing.
void add_recorded_variants(const ShardRecord& record, const std::string& sidecar) {
  for (const auto& [name, kernel] : record.plugin_variants) {
    if (!plugin::valid_variant_name(name))
      throw std::invalid_argument(sidecar + ": key 'plugins': '" +
                                  plugin::plugin_text(name.c_str()) +
                                  "' is not a variant name ([a-z0-9_], 1 to 32 characters)");
    Kernel k{};
    try {
      k = from_string<Kernel>(kernel);
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument(sidecar + ": key 'plugins': variant '" + name +
                                  "': no operation is called '" +
                                  plugin::plugin_text(kernel.c_str()) + "'");
    }
    bool named = true;  // a variant of several operations is named once
    try {
      from_string<Variant>(name);
    } catch (const std::invalid_argument&) {
      named = false;
    }
    try {
      const Variant v = named ? from_string<Variant>(name) : name_external_variant(name);
      if (!is_external(v))
        throw std::invalid_argument("variant name '" + name + "' is taken (by kvbench)");
      add_external_variant(k, {v, "", nullptr}, "recorded in " + sidecar);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(sidecar + ": key 'plugins': " + e.what());
    }
  }
}

// The config the shards ran, checked against their hash.
Config read_config(const std::string& config_path, const Shards& s) {
  const ShardRecord& first = s.records.front();
  std::string config_text;
  try {
    config_text = read_config_text(config_path);  // refuses a folder or a device
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(e.what()) + " (the shards' sidecars name it; --config)");
  }
  if (fnv1a64_hex(config_text) != first.config_hash)
    throw std::invalid_argument(
        config_path + ": fnv1a64 " + fnv1a64_hex(config_text) + " is not the shards' " +
        first.config_hash +
        " (the config changed since the run; pass the one it used with --config)");
  // A plugin's or Python variant, named by the config or by --variants, is one the sidecars
  // record; nothing else names it here.
  add_recorded_variants(first, s.sidecar_paths.front());
  Config config = parse_config(config_text, config_path);
  // The shards ran these variants in place of the config's: their cases, numbered so.
  if (!first.variants.empty()) {
    for (const std::string& name : first.variants) try {
        from_string<Variant>(name);
      } catch (const std::invalid_argument&) {
        throw std::invalid_argument(
            s.sidecar_paths.front() + ": key 'variants': '" + name +
            "' is neither kvbench's variant nor one its plugins record with an operation "
            "(plugins[].kernels, which sidecars of older kvbench builds lack)");
      }
    try {
      config.cases = with_variants(config.cases, first.variants);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("the shards ran " + std::string(e.what()));
    }
  }
  return config;
}

// The shards' --case: every index below the config's case count.
void check_selected(const Config& config, const Shards& s, const std::string& first_shard,
                    const std::string& config_path) {
  for (std::size_t i : s.records.front().selected_cases)
    if (i >= config.cases.size())
      throw std::invalid_argument(first_shard + ".json: key 'selected_cases': case " +
                                  std::to_string(i) + " is not below " + config_path + "'s " +
                                  std::to_string(config.cases.size()) + " cases");
}

// OUT and its sidecar against every shard, shard sidecar and the config, before writing.
void check_output(const std::string& output, const std::vector<std::string>& shards,
                  const std::string& config_path) {
  std::vector<InputFile> inputs = {{"the config", config_path}};
  for (const std::string& path : shards) {
    inputs.push_back({"a shard", path});
    inputs.push_back({"a shard's sidecar", sidecar_path(path)});
  }
  check_outputs({{"OUT", output, NonRegular::refuse, true},
                 {"OUT's sidecar", sidecar_path(output), NonRegular::refuse, true}},
                inputs);
  // OUT forgotten (`merge s0.csv s1.csv`): the first shard would be replaced by the merge.
  if (const std::string side = read_file(sidecar_path(output)); !side.empty()) {
    std::string shard;
    try {
      shard = read_shard_record(side, sidecar_path(output)).shard;
    } catch (const std::exception&) {  // not a sidecar of kvbench's: nothing to say of OUT
    }
    if (!shard.empty())
      throw std::invalid_argument("OUT " + output + ": is shard " + shard + " of a run (" + output +
                                  ".json says so); the merged CSV needs a name of its own, given "
                                  "first");
  }
}

// The shards' rows by case index: each line as written, and where it was read. Refuses a row
// of a case the config does not have, shards of different schemas and duplicate cases.
struct Rows {
  std::string header;
  std::map<std::size_t, std::pair<std::string, std::string>> of;  // index -> (line, where)
};

// A setting of a shard's sidecar as text ("graph"), or "" when the sidecar has none.
std::string setting_text(const ShardRecord& record, const std::string& key) {
  for (const auto& [k, json] : record.settings)
    if (k == key)
      return json.size() >= 2 && json.front() == '"' ? json.substr(1, json.size() - 2) : json;
  return "";
}

// "" when the row is one its shard's sidecar describes: the sidecar's build (git_sha) and GPU
// model, and, when timed, its settings' mode. Else what differs, naming both.
std::string row_mismatch(const ResultRow& r, const std::string& git_sha, const ShardRecord& record,
                         const std::string& sidecar) {
  const auto differs = [&](const std::string& column, const std::string& row_value,
                           const std::string& key, const std::string& side_value) {
    return "column '" + column + "' is '" + row_value + "', " + sidecar + "'s " + key + " is '" +
           side_value + "' (rows of another run are not merged under this sidecar)";
  };
  if (git_sha != record.git_sha) return differs("git_sha", git_sha, "git_sha", record.git_sha);
  if (!record.device_name.empty() && r.device.str() != record.device_name)
    return differs("device", r.device.str(), "device.name", record.device_name);
  // A row's context and timer may differ from the settings' (cold where rotation cannot cover
  // L2; events where CUPTI is missing); its mode may not.
  const std::string mode = setting_text(record, "mode");
  if (r.timing && !r.mode.empty() && !mode.empty() && r.mode.str() != mode)
    return differs("mode", r.mode.str(), "settings.mode", mode);
  return "";
}

Rows collect_rows(const std::vector<std::string>& shards, const Shards& s, const Config& config,
                  const std::string& config_path) {
  std::map<std::vector<std::string>, std::size_t> index_of;  // every case key of the config
  for (std::size_t i = 0; i < config.cases.size(); ++i)
    index_of.emplace(case_key(config.cases[i]), i);
  Rows rows;
  std::vector<std::string> problems;
  for (std::size_t k = 0; k < shards.size(); ++k) {
    const std::string& path = shards[k];
    const ResultTable table = read_results(path);  // refuses directories, devices, bad rows
    const std::vector<std::string> lines = lines_of(slurp(path, "shard CSV"));
    if (lines.empty()) throw std::invalid_argument(path + ": empty (no header)");
    if (rows.header.empty()) rows.header = lines.front();
    if (lines.front() != rows.header)
      throw std::invalid_argument(path + ":1: header differs from " + shards.front() +
                                  "'s (shards of different schemas)");
    const std::vector<std::string> header = split_csv(lines.front());
    const std::size_t sha_at = static_cast<std::size_t>(
        std::find(header.begin(), header.end(), "git_sha") - header.begin());
    for (const ResultRow& r : table.rows) {
      const std::string where = path + ":" + std::to_string(r.line);
      const std::vector<std::string> fields = split_csv(lines[r.line - 1]);
      if (const std::string why = row_mismatch(r, sha_at < fields.size() ? fields[sha_at] : "",
                                               s.records[k], sidecar_path(path));
          !why.empty())
        throw std::invalid_argument(where + ": " + why);
      const auto it = index_of.find(r.axes);
      if (it == index_of.end())
        throw std::invalid_argument(where + ": a case that " + config_path + " does not have");
      const auto [prev, inserted] =
          rows.of.emplace(it->second, std::make_pair(lines[r.line - 1], where));
      if (!inserted)
        problems.push_back("case " + std::to_string(it->second) + " (" +
                           describe(config.cases[it->second]) + ") in " + prev->second.second +
                           " and " + where);
    }
  }
  if (!problems.empty()) {
    std::string msg = "duplicate case key" + std::string(problems.size() > 1 ? "s" : "") + ": ";
    for (std::size_t i = 0; i < problems.size() && i < 3; ++i) msg += (i ? "; " : "") + problems[i];
    if (problems.size() > 3) msg += "; and " + std::to_string(problems.size() - 3) + " more";
    throw std::invalid_argument(msg);
  }
  return rows;
}

// The cases no shard holds, on stderr, with the shards of N that should have held them when the
// shards say N (ranges, not every number).
void report_missing(const std::vector<std::size_t>& missing, const Shards& s, bool allow_missing) {
  std::string which;
  if (const std::size_t n = s.records.front().shard_count; n > 1) {
    std::vector<std::size_t> present;
    for (const ShardRecord& r : s.records) present.push_back(std::stoul(r.shard));
    const std::string absent = missing_shards_text(present, n);
    if (!absent.empty()) which = " (no file for shard " + absent + " of " + std::to_string(n) + ")";
  }
  std::fprintf(stderr, "kvbench merge: %scase %s missing: %s%s\n", allow_missing ? "warning: " : "",
               missing.size() > 1 ? "indices" : "index", list_text(missing).c_str(), which.c_str());
}

int cmd_merge(const std::string& output, const std::vector<std::string>& shards, bool allow_missing,
              const std::string& config_override) {
  check_recorded_path("OUT", output);
  for (const std::string& shard : shards) check_recorded_path("SHARD", shard);
  const Shards s = read_sidecars(shards);
  const std::string config_path =
      config_override.empty() ? s.records.front().config_path : config_override;
  const Config config = read_config(config_path, s);
  check_output(output, shards, config_path);
  const std::optional<OutputLock> lock = lock_output("OUT", output);
  check_selected(config, s, shards.front(), config_path);
  const Rows rows = collect_rows(shards, s, config, config_path);

  std::vector<std::size_t> expected = s.records.front().selected_cases;
  if (expected.empty())
    for (std::size_t i = 0; i < config.cases.size(); ++i) expected.push_back(i);
  std::vector<std::size_t> missing;
  for (std::size_t i : expected)
    if (!rows.of.count(i)) missing.push_back(i);

  std::string text = rows.header + "\n";
  for (const auto& [index, row] : rows.of) text += row.first + "\n";
  const std::filesystem::path out(output);
  if (out.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(out.parent_path(), ec);
  }
  write_file_atomic(output, text);
  write_file_atomic(sidecar_path(output),
                    merge_sidecars(s.sidecars, shards, output, expected.size()));
  std::printf("%s: %zu rows from %zu shards; %zu of %zu cases missing\n", output.c_str(),
              rows.of.size(), shards.size(), missing.size(), expected.size());
  if (missing.empty()) return kOk;
  report_missing(missing, s, allow_missing);
  return allow_missing ? kOk : kFailed;
}

}  // namespace

Command add_merge(CLI::App& app) {
  auto a = std::make_shared<MergeArgs>();
  CLI::App* merge = app.add_subcommand(
      "merge", "Merge the CSVs of a sharded run (--shard) into OUT, with one sidecar");
  merge->add_option("output", a->output, "Merged CSV to write (and OUT.json)")->required();
  merge->add_option("shards", a->shards, "Shard CSVs, each with its sidecar")->required();
  merge->add_flag("--allow-missing", a->allow_missing, "Exit 0 even if some cases are in no shard");
  merge
      ->add_option("--config", a->config,
                   "The config the shards ran (default: the path their sidecars name)")
      ->check(non_empty());
  return {merge, [a] { return cmd_merge(a->output, a->shards, a->allow_missing, a->config); }};
}

}  // namespace kvbench::cli
