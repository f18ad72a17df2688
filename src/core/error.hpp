// The one exception type of dgtune (dgt::Error, public: dgtune/error.hpp) and the macros that check every external
// call.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "dgtune/error.hpp"

namespace dgt {

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
