// sass_diff: proves that two versions of the kernel sources give the same machine code. Every kernel of a set
// is compiled with NVRTC twice, once against the headers of an old kernels/ tree and once against a new one
// (same generated translation unit, same NVRTC options as the runtime), both cubins are disassembled with
// cuobjdump -sass, and the listings are compared line by line. What may differ legitimately is dropped before
// the comparison: blank lines and anything naming the temporary cubin file; NVRTC compiles without line
// information, so the listing holds no source file names or line numbers. Instruction text, addresses,
// encodings, the function name and the ptxas resource report (registers, spills, stack) must all match.
//
//   sass_diff --old DIR --new DIR [--set cover|all|tests] [-j N] [--list] [--filter REGEX] [--shard I/N]
//             [--dump DIR [--dump-all]] [--max-lines N] [--loop-mix] [--grouped]
//
// DIR is a kernels/ directory (the one holding gemm/, ptx/, ...). Sets, each deduplicated by compiled key:
//   all    every legal config of the default space (problem pruning ignored: it does not change code) for
//          every accumulation x scale mode with bf16 output, plus every output type / bias / activation
//          with per-tensor scales; and the test configs
//   cover  the kernels of `all` that each add a combination not yet covered (see signatures(): every legal
//          mainloop x scale mode x accumulation x epilogue x cluster x split-K kind x swizzle, every output
//          type / bias / activation per mainloop and epilogue, consumer warpgroups / BLOCK_K / promotion
//          interval per mainloop and scale mode), the configs the tests name, e5m2 operands, and the source
//          variants (traced kernels, test-only defines)
//   tests  the configs the tests name (tests/**/*.cpp), with the variants
// --filter keeps the kernels whose name (compiled key and variant) matches REGEX; --shard I/N every N-th kernel
// from the I-th in name order (`all` is ~11k kernels, about 7 hours on 2 cores: shards split it over runs);
// --dump writes the PTX and SASS of both sides of every kernel that differs into DIR (NAME.old.ptx,
// NAME.new.sass, ...), with --dump-all also of every identical one (to read a kernel's SASS: --old and --new the same
// tree); --loop-mix prints the instruction mix of both sides' steady-state consumer loop for every kernel
// (sass_check.hpp, steady_loop_mix: the shortest loop holding a QGMMA). Prints every kernel that differs (with its
// first differing lines) and a summary; --grouped compares the grouped (MoE) kernels instead: for every spec of the set
// that a grouped problem can run (space/grouped_rules.hpp, problem/grouped_problem.hpp), the grouped kernel the
// runtime would build, contiguous and masked (names end in _contiguous, _masked; the dense source variants are left
// out); exits 1 on any difference,
// failed compile or spill (new side), 2 on a usage error. tests/nvrtc/sass_diff.sh checks out the old tree.
#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/thread_pool.hpp"
#include "jit/codegen.hpp"
#include "jit/compiler.hpp"
#include "problem/grouped_problem.hpp"
#include "sass_check.hpp"
#include "space/grouped_rules.hpp"
#include "space/resource_model.hpp"
#include "space/search_space.hpp"

namespace fs = std::filesystem;

namespace {

using namespace dgt;

/// Every *.cuh under `root`, as (path relative to root, text): the headers NVRTC is offered.
struct HeaderTree {
  std::vector<std::string> names, texts;
};

HeaderTree load_tree(const fs::path& root) {
  HeaderTree t;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().extension() == ".cuh") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    t.names.push_back(fs::relative(f, root).generic_string());
    t.texts.push_back(ss.str());
  }
  return t;
}

struct Compiled {
  std::string cubin, ptx, log, error;
};

/// compile() of src/jit/compiler.cpp with the headers of `tree` instead of the embedded ones.
Compiled compile_with(const HeaderTree& tree, const std::string& source, const std::string& program,
                      const std::string& name_expression) {
  Compiled out;
  std::vector<const char*> names, texts, opts;
  for (size_t i = 0; i < tree.names.size(); ++i) {
    names.push_back(tree.names[i].c_str());
    texts.push_back(tree.texts[i].c_str());
  }
  for (const auto& o : jit::nvrtc_options()) opts.push_back(o.c_str());
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, source.c_str(), program.c_str(), int(names.size()), texts.data(), names.data()) !=
      NVRTC_SUCCESS) {
    out.error = "nvrtcCreateProgram failed";
    return out;
  }
  if (!name_expression.empty()) nvrtcAddNameExpression(prog, name_expression.c_str());
  const nvrtcResult rc = nvrtcCompileProgram(prog, int(opts.size()), opts.data());
  size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  out.log.resize(n);
  if (n) nvrtcGetProgramLog(prog, out.log.data());
  while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  if (rc != NVRTC_SUCCESS) {
    out.error = std::string("NVRTC: ") + nvrtcGetErrorString(rc) + "\n" + out.log;
  } else {
    nvrtcGetCUBINSize(prog, &n);
    out.cubin.resize(n);
    nvrtcGetCUBIN(prog, out.cubin.data());
    nvrtcGetPTXSize(prog, &n);
    out.ptx.resize(n);
    nvrtcGetPTX(prog, out.ptx.data());
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

/// The listing's lines that must match: no blank lines, nothing naming the temporary file.
std::vector<std::string> normalize(const std::string& sass) {
  std::vector<std::string> lines;
  std::istringstream in(sass);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (line.find("dgtune-sass-") != std::string::npos) continue;
    lines.push_back(line);
  }
  return lines;
}

/// ptxas's resource lines (registers, spills, stack, shared memory) of the log; timings dropped.
std::vector<std::string> resource_lines(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line))
    if (line.find("ptxas info") != std::string::npos && line.find("Compile time") == std::string::npos &&
        line.find("Compiling entry") == std::string::npos)
      out.push_back(line);
    else if (line.find("bytes stack frame") != std::string::npos)
      out.push_back(line);
  return out;
}

struct Job {
  std::string name;    ///< compiled key plus variant
  KernelSpec spec;
  std::string prefix;  ///< defines put in front of the generated source (test-only variants)
  bool trace = false;
  std::optional<GroupKind> grouped;  ///< set: the grouped kernel of this spec (jit::generate_grouped_gemm)
};

/// Config keys the tests name ("128x128x128_s6_wg2_..."), from every tests/**/*.cpp.
std::set<std::string> test_keys(const fs::path& tests_dir) {
  std::set<std::string> keys;
  const std::regex re(R"re("(\d+x\d+x\d+_s\d+_wg\d_sw\d+_c\dx\d_r[mn]\d+_(?:direct|tma)_sk\d+c?(?:_sm\d+)?(?:_(?:1g|2g|2o|pp))?(?:_p\d+)?)")re");
  for (const auto& e : fs::recursive_directory_iterator(tests_dir)) {
    if (!e.is_regular_file() || e.path().extension() != ".cpp") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
      keys.insert((*it)[1]);
  }
  return keys;
}

/// Legal kernels of the default space for problems like `p` (pruning by the problem's shape ignored).
std::vector<KernelSpec> legal_specs(const Problem& p) {
  std::vector<KernelSpec> out;
  const Enumeration e = enumerate(SearchSpace::builtin_default(), p);
  for (const auto& c : e.kept) out.push_back(KernelSpec::of(c.config, p));
  for (const auto& c : e.rejected)
    if (!c.pruned.empty() && c.pruned[0] == 'P') out.push_back(KernelSpec::of(c.config, p));
  return out;
}

std::string split_kind(const KernelConfig& c) {
  if (c.split_k <= 1) return "sk1";
  return c.split_cluster ? "sk" + std::to_string(c.split_k) + "c" : "skW";
}

/// The coverage tuples of a kernel: `cover` keeps a kernel when it adds one not yet covered. Together they take
/// every (mainloop, scale mode, accumulation, epilogue, cluster, split-K kind, swizzle) that is legal, every
/// output type / bias / activation per mainloop and epilogue, and the consumer warpgroups, BLOCK_K and promotion
/// interval per mainloop and scale mode.
std::vector<std::string> signatures(const KernelSpec& s) {
  const KernelConfig& c = s.config;
  auto str = [](auto&&... parts) {
    std::ostringstream o;
    ((o << parts << ' '), ...);
    return o.str();
  };
  const char* ml = to_string(c.mainloop);
  return {
      str("A", ml, int(s.scale), int(s.accum), to_string(c.epilogue), c.cluster_m, c.cluster_n, split_kind(c), c.swizzle),
      str("B", ml, to_string(c.epilogue), int(s.d), int(s.bias), int(s.act)),
      str("C", ml, int(s.scale), c.num_math_wg, c.block_k, c.promote_every > 1),
  };
}

}  // namespace

int main(int argc, char** argv) {
  std::string old_dir, new_dir, set = "cover";
  std::string filter, dump_dir;
  bool dump_all = false;
  int jobs = 2, max_lines = 12, shard = 0, shards = 1;
  bool list_only = false, loop_mix = false, grouped = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--old") old_dir = value();
    else if (a == "--new") new_dir = value();
    else if (a == "--set") set = value();
    else if (a == "-j") jobs = std::stoi(value());
    else if (a == "--max-lines") max_lines = std::stoi(value());
    else if (a == "--filter") filter = value();
    else if (a == "--dump") dump_dir = value();
    else if (a == "--dump-all") dump_all = true;
    else if (a == "--shard") {
      const std::string v = value();
      const size_t slash = v.find('/');
      if (slash == std::string::npos || (shard = std::stoi(v.substr(0, slash))) < 0 ||
          (shards = std::stoi(v.substr(slash + 1))) <= shard) {
        std::cerr << "--shard I/N with 0 <= I < N\n";
        return 2;
      }
    }
    else if (a == "--list") list_only = true;
    else if (a == "--loop-mix") loop_mix = true;
    else if (a == "--grouped") grouped = true;
    else {
      std::cerr << "usage: sass_diff --old KERNELS_DIR --new KERNELS_DIR [--set cover|all|tests] [-j N] [--list]"
                   " [--filter REGEX] [--shard I/N] [--dump DIR [--dump-all]] [--max-lines N] [--loop-mix] [--grouped]\n";
      return 2;
    }
  }
  if (set != "cover" && set != "all" && set != "tests") {
    std::cerr << "--set: cover, all or tests\n";
    return 2;
  }
  if (!list_only && (old_dir.empty() || new_dir.empty())) {
    std::cerr << "--old and --new are required\n";
    return 2;
  }

  // The spec variants: accumulation x scale mode with bf16 output; every output / epilogue with per-tensor scales.
  std::vector<Problem> problems;
  const Problem base = Problem::dense(4096, 4096, 4096);
  for (Accum acc : {Accum::kPromote, Accum::kFast})
    for (ScaleMode sm : {ScaleMode::kPerTensor, ScaleMode::kChannel, ScaleMode::kBlock, ScaleMode::kBlock1d1d}) {
      Problem p = base;
      p.accum = acc;
      p.scale = sm;
      problems.push_back(p);
    }
  for (DType d : {DType::kBF16, DType::kF32, DType::kE4M3})
    for (Bias b : {Bias::kNone, Bias::kBF16})
      for (Act act : {Act::kNone, Act::kRelu, Act::kGeluTanh}) {
        if (d == DType::kBF16 && b == Bias::kNone && act == Act::kNone) continue;  // above
        Problem p = base;
        p.d = d;
        p.bias = b;
        p.act = act;
        problems.push_back(p);
      }

  std::map<std::string, Job> by_key;  // compiled key (+ variant) -> job
  auto add = [&](const KernelSpec& s, const std::string& variant = "", const std::string& prefix = "",
                 bool trace = false) {
    if (!evaluate_resources(s).ok()) return false;
    const std::string name = s.compiled_key() + variant;
    by_key.emplace(name, Job{name, s, prefix, trace});
    return true;
  };

  // Test configs: as e4m3 promote where legal, else fast (pp, P > 1); both where both are legal.
  const fs::path src_dir = DGT_SOURCE_DIR;
  std::vector<KernelSpec> tests;
  for (const auto& key : test_keys(src_dir / "tests")) {
    KernelConfig c;
    try {
      c = KernelConfig::parse_key(key);
    } catch (...) {
      continue;
    }
    for (Accum acc : {Accum::kPromote, Accum::kFast}) {
      KernelSpec s = KernelSpec::of(c, base);
      s.accum = acc;
      if (evaluate_resources(s).ok()) tests.push_back(s);
    }
  }

  std::vector<KernelSpec> space;
  if (set != "tests")
    for (const auto& p : problems)
      for (const auto& s : legal_specs(p)) space.push_back(s);

  if (set == "all") {
    for (const auto& s : space) add(s);
  } else if (set == "cover") {
    std::set<std::string> seen;
    for (const auto& s : space) {
      bool fresh = false;
      for (const auto& sig : signatures(s)) fresh |= seen.insert(sig).second;
      if (fresh) add(s);
    }
  }
  for (const auto& s : tests) add(s);
  if (set != "all") {
    // e5m2 operands, and the source variants: traced kernels (one per mainloop), the test-only
    // non-uniform descriptors and the fault-injection kernels.
    std::set<std::string> traced;
    for (const auto& s : tests) {
      KernelSpec t = s;
      if (traced.insert(to_string(s.config.mainloop)).second) {
        add(s, "_trace", "", true);
        t.a = DType::kE5M2;
        add(t);
        t.b = DType::kE5M2;
        add(t);
      }
    }
    if (!tests.empty()) {
      add(tests.front(), "_nonuniform", "#define DGT_TEST_NONUNIFORM_DESC 1\n");
      add(tests.front(), "_fault1", "#define DGT_TEST_FAULT 1\n");
      add(tests.front(), "_fault2", "#define DGT_TEST_FAULT 2\n");
    }
  }

  if (grouped) {
    // The grouped kernels of the set's configs, each spec built as the runtime builds it (KernelSpec::of(config,
    // GroupedProblem::dense_view()): e4m3, bf16, no epilogue) for the spec's scale mode and accumulation, where a
    // grouped problem takes them (validate_grouped) and the config may run it (grouped_config_violation). Source
    // variants (prefix, trace) have no grouped form.
    std::map<std::string, Job> g;
    for (const auto& [key, job] : by_key) {
      if (!job.prefix.empty() || job.trace) continue;
      for (GroupKind kind : {GroupKind::kContiguous, GroupKind::kMasked}) {
        GroupedProblem gp;
        gp.kind = kind;
        gp.groups = 1;
        gp.rows = {base.m};
        gp.n = base.n, gp.k = base.k;
        if (kind == GroupKind::kMasked) gp.m_max = base.m, gp.expected_m = base.m;
        gp.scale = job.spec.scale;
        gp.accum = job.spec.accum;
        try {
          validate_grouped(gp, "sass_diff --grouped");
        } catch (const std::exception&) {
          continue;
        }
        if (!grouped_config_violation(job.spec.config, gp).empty()) continue;
        Job j;
        j.spec = KernelSpec::of(job.spec.config, gp.dense_view());
        j.name = j.spec.compiled_key() + "_" + to_string(kind);
        j.grouped = kind;
        g.emplace(j.name, j);
      }
    }
    by_key.swap(g);
  }
  if (!filter.empty()) {
    const std::regex re(filter);
    for (auto it = by_key.begin(); it != by_key.end();)
      it = std::regex_search(it->first, re) ? std::next(it) : by_key.erase(it);
  }
  if (shards > 1) {
    int i = 0;
    for (auto it = by_key.begin(); it != by_key.end(); ++i)
      it = i % shards == shard ? std::next(it) : by_key.erase(it);
  }
  std::cout << "set " << set << (filter.empty() ? "" : " --filter " + filter)
            << (shards > 1 ? " --shard " + std::to_string(shard) + "/" + std::to_string(shards) : "") << ": " << by_key.size() << " kernels (" << space.size() << " space specs, "
            << tests.size() << " test specs before deduplication)\n";
  if (list_only) {
    for (const auto& [k, j] : by_key) std::cout << k << "\n";
    return 0;
  }

  const std::string cuobjdump = test::find_cuobjdump();
  if (cuobjdump.empty()) {
    std::cerr << "no cuobjdump (set DGT_CUOBJDUMP)\n";
    return 2;
  }
  const HeaderTree old_tree = load_tree(old_dir), new_tree = load_tree(new_dir);
  std::cout << "old: " << old_dir << " (" << old_tree.names.size() << " headers), new: " << new_dir << " ("
            << new_tree.names.size() << " headers), cuobjdump: " << cuobjdump << ", -j " << jobs << std::endl;

  std::mutex mu;
  std::atomic<int> done{0}, differ{0}, failed{0}, identical_cubins{0}, spills{0};
  long instructions = 0;
  ThreadPool pool(jobs);
  std::vector<std::future<void>> futs;
  const int total = int(by_key.size());
  for (const auto& [key, job] : by_key)
    futs.push_back(pool.submit([&, job = job] {
      std::ostringstream report;
      bool bad = false;
      try {
        jit::GeneratedKernel g =
            job.grouped ? jit::generate_grouped_gemm(job.spec, *job.grouped) : jit::generate_gemm(job.spec, job.trace);
        g.source = job.prefix + g.source;
        const Compiled o = compile_with(old_tree, g.source, g.program_name, g.name_expression);
        const Compiled n = compile_with(new_tree, g.source, g.program_name, g.name_expression);
        if (!o.error.empty() || !n.error.empty()) {
          // A kernel the old sources refuse must be refused by the new ones too.
          if (o.error.empty() != n.error.empty()) {
            report << "DIFF " << job.name << ": old " << (o.error.empty() ? "compiles" : "fails") << ", new "
                   << (n.error.empty() ? "compiles" : "fails") << "\n"
                   << (o.error.empty() ? n.error : o.error).substr(0, 2000) << "\n";
            ++differ;
          } else {
            report << "FAIL " << job.name << ": both fail to compile\n" << n.error.substr(0, 2000) << "\n";
            ++failed;
          }
          bad = true;
        } else {
          if (o.cubin == n.cubin) ++identical_cubins;
          const auto a = normalize(test::disassemble(cuobjdump, o.cubin));
          const auto b = normalize(test::disassemble(cuobjdump, n.cubin));
          const auto ra = resource_lines(o.log), rb = resource_lines(n.log);
          for (const auto& l : rb)
            if (l.find("bytes stack frame") != std::string::npos &&
                l.find(" 0 bytes spill stores, 0 bytes spill loads") == std::string::npos)
              ++spills, report << "SPILL " << job.name << ": " << l << "\n";
          if (a.empty() || a.front().rfind("cuobjdump failed", 0) == 0 || b.empty()) {
            report << "FAIL " << job.name << ": no disassembly\n";
            ++failed;
            bad = true;
          } else {
            const bool differs = a != b || ra != rb;
            const bool dump = !dump_dir.empty() && (differs || dump_all);
            auto join = [](const std::vector<std::string>& v) {
              std::string t;
              for (const auto& l : v) t += l + "\n";
              return t;
            };
            const std::string sass_a = loop_mix || dump ? join(a) : "", sass_b = loop_mix || dump ? join(b) : "";
            if (loop_mix)
              report << "LOOP " << job.name << ": old " << test::to_string(test::steady_loop_mix(sass_a)) << ", new "
                     << test::to_string(test::steady_loop_mix(sass_b)) << "\n";
            if (dump) {
              fs::create_directories(dump_dir);
              auto write = [&](const std::string& suffix, const std::string& text) {
                std::ofstream(fs::path(dump_dir) / (job.name + suffix)) << text;
              };
              write(".old.ptx", o.ptx), write(".new.ptx", n.ptx), write(".old.sass", sass_a), write(".new.sass", sass_b);
            }
            if (differs) {
              ++differ;
              bad = true;
              report << "DIFF " << job.name << ": " << a.size() << " vs " << b.size() << " listing lines\n";
              int shown = 0;
              for (size_t i = 0; i < std::max(a.size(), b.size()) && shown < max_lines; ++i) {
                const std::string la = i < a.size() ? a[i] : "<end>", lb = i < b.size() ? b[i] : "<end>";
                if (la != lb) {
                  report << "  line " << i << "\n    old: " << la << "\n    new: " << lb << "\n";
                  ++shown;
                }
              }
              for (size_t i = 0; i < std::max(ra.size(), rb.size()); ++i) {
                const std::string la = i < ra.size() ? ra[i] : "<end>", lb = i < rb.size() ? rb[i] : "<end>";
                if (la != lb) report << "  ptxas\n    old: " << la << "\n    new: " << lb << "\n";
              }
            } else {
              std::lock_guard<std::mutex> lock(mu);
              instructions += long(std::count_if(a.begin(), a.end(), [](const std::string& l) {
                return l.find("/*") != std::string::npos && l.find(';') != std::string::npos;
              }));
            }
          }
        }
      } catch (const std::exception& e) {
        report << "FAIL " << job.name << ": " << e.what() << "\n";
        ++failed;
        bad = true;
      }
      const int d = ++done;
      std::lock_guard<std::mutex> lock(mu);
      if (bad) std::cout << report.str() << std::flush;
      else if (!report.str().empty()) std::cout << report.str();
      if (d % 25 == 0 || d == total) std::cout << "[" << d << "/" << total << "] " << differ << " differ\n" << std::flush;
    }));
  for (auto& f : futs) f.get();
  std::cout << "compared " << done << " kernels (set " << set << "): " << (done - differ - failed)
            << " identical SASS (" << instructions << " instructions), " << differ << " differ, " << failed
            << " failed; " << identical_cubins << " byte-identical cubins; " << spills << " with spills\n";
  return differ == 0 && failed == 0 && spills == 0 ? 0 : 1;
}
