#include "jit/compiler.hpp"

#include <nvrtc.h>

#include <chrono>
#include <memory>
#include <regex>

#include "core/error.hpp"
#include "jit/embedded_sources.hpp"
#include "jit/ffma_interleave.hpp"

namespace dgt::jit {

const std::vector<std::string>& nvrtc_options() {
  // -O3 is NVRTC's default for device code; --ptxas-options=-v puts the resource report in the log.
  static const std::vector<std::string> kOptions = {
      "--gpu-architecture=sm_90a",
      "-std=c++17",
      "--ptxas-options=-v",
      "-DNDEBUG",
  };
  return kOptions;
}

std::string default_sass_edits() { return CompileOptions{}.ffma_interleave ? "ffma-interleave v1" : ""; }

std::string nvrtc_version_string() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

void parse_ptxas_report(const std::string& log, const std::string& function, CompiledKernel& out) {
  // ptxas prints "Function properties for NAME" then "N bytes stack frame, N bytes spill stores, N
  // bytes spill loads", and "Compiling entry function 'NAME'" ... "Used N registers".
  size_t start = 0;
  if (!function.empty()) {
    size_t pos = log.find("Compiling entry function '" + function + "'");
    if (pos == std::string::npos) pos = log.find("Function properties for " + function);
    if (pos != std::string::npos) start = pos;
  }
  std::string section = log.substr(start);
  std::smatch m;
  if (std::regex_search(section, m,
                        std::regex(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)"))) {
    out.stack_bytes = std::stoi(m[1]);
    out.spill_bytes = std::stoi(m[2]) + std::stoi(m[3]);
  }
  if (std::regex_search(section, m, std::regex(R"(Used (\d+) registers)"))) out.registers = std::stoi(m[1]);
}

std::string serialized_wgmma_warning(const std::string& log) {
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(start, end - start);
    if (line.find("C7514") != std::string::npos || line.find("C7515") != std::string::npos ||
        (line.find("wgmma") != std::string::npos && line.find("serialized") != std::string::npos))
      return line;
    start = end + 1;
  }
  return {};
}

namespace {
struct ProgramDeleter {
  void operator()(nvrtcProgram* p) const {
    if (p) nvrtcDestroyProgram(p);
    delete p;
  }
};
}  // namespace

CompiledKernel compile(const std::string& source, const std::string& program_name, const std::string& name_expression) {
  return compile_with_sources(source, program_name, name_expression, embedded_sources());
}

CompiledKernel compile_with_sources(const std::string& source, const std::string& program_name,
                                    const std::string& name_expression, const std::vector<EmbeddedSource>& sources,
                                    const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> names, texts;
  names.reserve(sources.size());
  texts.reserve(sources.size());
  for (const auto& s : sources) {
    names.emplace_back(s.path);
    texts.emplace_back(s.text);
  }
  std::vector<const char*> name_ptrs, text_ptrs;
  for (size_t i = 0; i < names.size(); ++i) {
    name_ptrs.push_back(names[i].c_str());
    text_ptrs.push_back(texts[i].c_str());
  }
  std::unique_ptr<nvrtcProgram, ProgramDeleter> prog(new nvrtcProgram(nullptr));
  DGT_CHECK_NVRTC(nvrtcCreateProgram(prog.get(), source.c_str(), program_name.c_str(), static_cast<int>(names.size()),
                                     text_ptrs.data(), name_ptrs.data()));
  if (!name_expression.empty()) DGT_CHECK_NVRTC(nvrtcAddNameExpression(*prog, name_expression.c_str()));
  std::vector<const char*> opts;
  for (const auto& o : nvrtc_options()) opts.push_back(o.c_str());
  nvrtcResult rc = nvrtcCompileProgram(*prog, static_cast<int>(opts.size()), opts.data());

  CompiledKernel out;
  size_t log_size = 0;
  DGT_CHECK_NVRTC(nvrtcGetProgramLogSize(*prog, &log_size));
  out.log.resize(log_size);
  if (log_size > 0) DGT_CHECK_NVRTC(nvrtcGetProgramLog(*prog, out.log.data()));
  while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  if (rc != NVRTC_SUCCESS)
    DGT_THROW(ErrorKind::kNvrtc, "NVRTC failed to compile {} ({}):\n{}", program_name, nvrtcGetErrorString(rc),
              out.log);

  size_t cubin_size = 0;
  DGT_CHECK_NVRTC(nvrtcGetCUBINSize(*prog, &cubin_size));
  out.cubin.resize(cubin_size);
  DGT_CHECK_NVRTC(nvrtcGetCUBIN(*prog, out.cubin.data()));
  if (!name_expression.empty()) {
    const char* lowered = nullptr;
    DGT_CHECK_NVRTC(nvrtcGetLoweredName(*prog, name_expression.c_str(), &lowered));
    out.lowered_name = lowered;
  }
  if (std::string w = serialized_wgmma_warning(out.log); !w.empty())
    DGT_THROW(ErrorKind::kNvrtc, "ptxas serialized the WGMMAs of {} (treated as a compile failure): {}\n{}",
              program_name, w, out.log);
  parse_ptxas_report(out.log, out.lowered_name, out);
  if (options.ffma_interleave) out.ffma_interleaved = interleave_ffma(out.cubin).changed;
  if (options.ffma_scale_reuse) out.ffma_interleaved += reuse_ffma_scale(out.cubin).changed;
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace dgt::jit
