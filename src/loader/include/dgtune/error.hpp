// The exception every dgtune call throws: dgt::Error, with what failed (ErrorKind) and a message naming the operand,
// the value and the rule. Public (installed with <dgtune/gemm.hpp>); the check macros that build it live in
// src/core/error.hpp.
#pragma once

#include <stdexcept>
#include <string>

#include "dgtune/api.hpp"

namespace dgt {

/// What failed. The dgtune CLI maps it to an exit code (kUsage and kInvalid -> 2, everything else -> 1); the C API
/// (dgtune/dgtune.h) returns it as dgt_status (DGT_ERR_USAGE + the enum value).
enum class ErrorKind {
  kUsage,     ///< bad command line, bad shapes file, bad config key, an option out of range: the caller can fix it
  kInvalid,   ///< a problem or config breaks a rule (TMA alignment, resource budget)
  kCuda,      ///< CUDA runtime
  kDriver,    ///< CUDA driver API
  kNvrtc,     ///< run-time compilation
  kCublas,    ///< cuBLASLt
  kSqlite,    ///< tuning database
  kIo,        ///< files, cache directory
  kNoDevice,  ///< no CUDA device usable
  kTimeout,   ///< a launch still running after its watchdog
  kInternal,  ///< a broken invariant inside dgtune
};

/// Short lower-case name of an ErrorKind ("cuda", "sqlite", ...).
DGT_API const char* to_string(ErrorKind kind);

/// Exception carrying the kind, the source location of the check, the failed call text and a
/// human message. what() returns "message [kind at file:line: call]" (just the message without a location).
class DGT_API Error : public std::runtime_error {
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

}  // namespace dgt
