// The one exception type of dgtune and the macros that check every external call.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace dgt {

/// What failed. Maps to an exit code in main.cpp (kUsage and kInvalid -> 2, everything else -> 1).
enum class ErrorKind {
  kUsage,     ///< bad command line, bad shapes file, bad config key: the user can fix the input
  kInvalid,   ///< a problem or config breaks a rule (TMA alignment, resource budget)
  kCuda,      ///< CUDA runtime
  kDriver,    ///< CUDA driver API
  kNvrtc,     ///< run-time compilation
  kCublas,    ///< cuBLASLt
  kSqlite,    ///< tuning database
  kIo,        ///< files, cache directory
  kNoDevice,  ///< no CUDA device usable
  kTimeout,   ///< a launch still running after its watchdog (bench/protocol.hpp WatchdogTimeout)
  kInternal,  ///< a broken invariant inside dgtune
};

/// Short lower-case name of an ErrorKind ("cuda", "sqlite", ...).
const char* to_string(ErrorKind kind);

/// Exception carrying the kind, the source location of the check, the failed call text and a
/// human message. what() returns "message [kind at file:line: call]".
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message, const char* file = "", int line = 0, std::string call = {});

  ErrorKind kind() const noexcept { return kind_; }
  const std::string& message() const noexcept { return message_; }
  const std::string& call() const noexcept { return call_; }
  const char* file() const noexcept { return file_; }
  int line() const noexcept { return line_; }

 private:
  ErrorKind kind_;
  std::string message_;
  const char* file_;
  int line_;
  std::string call_;
};

/// True for CUDA runtime errors that poison the context (illegal address, launch failure, ...):
/// after one of them nothing on this device may be timed again in this process.
bool is_sticky_cuda_error(int cuda_error_code);

[[noreturn]] void throw_cuda(int code, const char* call, const char* file, int line);
[[noreturn]] void throw_driver(int code, const char* call, const char* file, int line);
[[noreturn]] void throw_nvrtc(int code, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas(int code, const char* call, const char* file, int line);

}  // namespace dgt

#define DGT_THROW(kind, ...) throw ::dgt::Error((kind), ::fmt::format(__VA_ARGS__), __FILE__, __LINE__)

#define DGT_CHECK_CUDA(call)                                                 \
  do {                                                                       \
    int dgt_rc_ = static_cast<int>(call);                                    \
    if (dgt_rc_ != 0) ::dgt::throw_cuda(dgt_rc_, #call, __FILE__, __LINE__); \
  } while (0)

#define DGT_CHECK_CU(call)                                                     \
  do {                                                                         \
    int dgt_rc_ = static_cast<int>(call);                                      \
    if (dgt_rc_ != 0) ::dgt::throw_driver(dgt_rc_, #call, __FILE__, __LINE__); \
  } while (0)

#define DGT_CHECK_NVRTC(call)                                                 \
  do {                                                                        \
    int dgt_rc_ = static_cast<int>(call);                                     \
    if (dgt_rc_ != 0) ::dgt::throw_nvrtc(dgt_rc_, #call, __FILE__, __LINE__); \
  } while (0)

#define DGT_CHECK_CUBLAS(call)                                                 \
  do {                                                                         \
    int dgt_rc_ = static_cast<int>(call);                                      \
    if (dgt_rc_ != 0) ::dgt::throw_cublas(dgt_rc_, #call, __FILE__, __LINE__); \
  } while (0)
