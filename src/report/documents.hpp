// Every JSON document dgtune writes, by name and version (report/document.hpp has the envelope they share). Each has
// a JSON Schema at docs/schemas/<schema>.schema.json; tests/cli/json_schemas_test.py validates real outputs against
// them and fails when a document listed here has no schema file.
#pragma once

#include "report/document.hpp"

namespace dgt::report {

inline constexpr DocumentType kSweepDocument{"dgtune-sweep", 1};
inline constexpr DocumentType kRunDocument{"dgtune-run", 1};
inline constexpr DocumentType kCompareDocument{"dgtune-compare", 1};
inline constexpr DocumentType kCompareBetweenDocument{"dgtune-compare-between", 1};
inline constexpr DocumentType kCoverageDocument{"dgtune-coverage", 1};
inline constexpr DocumentType kGroupedCompareDocument{"dgtune-compare-grouped", 1};
inline constexpr DocumentType kExportDocument{"dgtune-export", 1};
inline constexpr DocumentType kGateRecordDocument{"dgtune-gate-record", 1};
inline constexpr DocumentType kGateDocument{"dgtune-gate", 1};
inline constexpr DocumentType kGateBaselineDocument{"dgtune-gate-baseline", 2};
inline constexpr DocumentType kHistoryDocument{"dgtune-history", 1};
inline constexpr DocumentType kInfoDocument{"dgtune-info", 1};
inline constexpr DocumentType kSpaceDocument{"dgtune-space", 1};
inline constexpr DocumentType kTraceDocument{"dgtune-trace", 1};
inline constexpr DocumentType kDbCheckDocument{"dgtune-db-check", 1};
inline constexpr DocumentType kDbDevicesDocument{"dgtune-db-devices", 1};
inline constexpr DocumentType kDbMigrateDocument{"dgtune-db-migrate", 1};
inline constexpr DocumentType kDbPruneDocument{"dgtune-db-prune", 1};
inline constexpr DocumentType kDbMergeDocument{"dgtune-db-merge", 1};
/// manifest.json of a kernel bundle (`dgtune export --format bundle`); written and read by jit/bundle.hpp, whose
/// kBundleFormat and kBundleFormatVersion must equal these (a unit test compares them).
inline constexpr DocumentType kBundleDocument{"dgtune-bundle", 1};

/// All of the above, for the test that checks each has a schema file.
inline constexpr DocumentType kAllDocuments[] = {
    kSweepDocument,   kRunDocument,        kCompareDocument, kCompareBetweenDocument, kCoverageDocument,
    kExportDocument,  kGateRecordDocument, kGateDocument,    kGateBaselineDocument,   kHistoryDocument,
    kInfoDocument,    kSpaceDocument,      kTraceDocument,   kDbCheckDocument,        kDbDevicesDocument,
    kDbPruneDocument, kDbMergeDocument, kBundleDocument, kGroupedCompareDocument, kDbMigrateDocument};

}  // namespace dgt::report
