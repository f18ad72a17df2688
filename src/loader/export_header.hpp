// `dgtune export --format cpp`: the self-contained C++ header that dgt::GemmOptions::table reads (the
// loader's table format lives here, beside its reader in gemm.cpp). No GPU needed.
#pragma once

#include <string>
#include <vector>

#include "db/tuning_db_reader.hpp"

namespace dgt {

/// The type block of <dgtune/gemm.hpp> (TunedEntry, TunedTable) verbatim, guarded by
/// DGTUNE_TUNED_TABLE_TYPES: a generated header compiles alone and next to gemm.hpp, in either order.
/// A unit test checks that gemm.hpp holds exactly this text.
const std::string& tuned_table_types();

/// What the header is made for.
struct HeaderInfo {
  std::string hw_key;  ///< the device's HardwareIdentity::key()
  std::string device_name;
  std::string kernel_hash;  ///< the exporting dgtune's kernel-source hash
  std::string dgtune_version;
  std::string ns = "dgtune_tuned";  ///< namespace of the generated table
};

/// A C++17 header: the type block, then in namespace `info.ns`: kKernelHash, kDgtuneVersion, kEntries
/// (one per row: problem key fields -> config key, time, kernel hash, protocol name, scale mode; rows in the
/// order given, later = newer), kTable (a dgt::TunedTable for GemmOptions::table) and constexpr lookup(m, n, k,
/// lda, ldb, ldd, a, b, accum, protocol, scale): the config key of exactly that problem (an entry of protocol
/// kind `protocol` first, then one with kKernelHash, then the last one), nullptr when absent.
std::string export_header(const std::vector<ExportRow>& rows, const HeaderInfo& info);

}  // namespace dgt
