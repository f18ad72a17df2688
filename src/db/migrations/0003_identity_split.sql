-- Schema version 3 (dgtune 0.3): one identity model. The old device table (one row per fingerprint =
-- hardware + software) splits into device (hardware identity: name, cc, SMs, memory, L2; keyed by
-- HardwareIdentity::key()) and environment (driver, runtime, cuBLASLt, NVRTC, kernel hash, dgtune version;
-- keyed by SoftwareEnv::key()). trial, baseline and sweep reference both; trial and baseline gain
-- pci_bus_id ('' for the rows migrated here). Row ids of trials, baselines and sweeps are kept.
-- dgt_hardware_key() and dgt_environment_key() are SQL functions the migration runner registers
-- (db/schema.cpp); they compute the same keys as the C++ records.
DROP VIEW winner;
ALTER TABLE device RENAME TO device_v2;
ALTER TABLE trial RENAME TO trial_v2;
ALTER TABLE baseline RENAME TO baseline_v2;
ALTER TABLE sweep RENAME TO sweep_v2;
CREATE TABLE device (
  id INTEGER PRIMARY KEY,
  hw_key TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  cc INTEGER NOT NULL,
  sm_count INTEGER NOT NULL,
  memory_bytes INTEGER NOT NULL,
  l2_bytes INTEGER NOT NULL,
  max_sm_clock_mhz INTEGER NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE environment (
  id INTEGER PRIMARY KEY,
  env_key TEXT NOT NULL UNIQUE,
  driver_version INTEGER NOT NULL,
  runtime_version INTEGER NOT NULL,
  cublaslt_version INTEGER NOT NULL,
  nvrtc_version INTEGER NOT NULL,
  kernel_hash TEXT NOT NULL,
  dgtune_version TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE trial (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES device (id),
  environment_id INTEGER NOT NULL REFERENCES environment (id),
  problem_id INTEGER NOT NULL REFERENCES problem (id),
  config_id INTEGER NOT NULL REFERENCES config (id),
  pci_bus_id TEXT NOT NULL,
  status TEXT NOT NULL,
  error TEXT NOT NULL,
  compile_ms REAL,
  registers INTEGER NOT NULL, spill_bytes INTEGER NOT NULL, smem_bytes INTEGER NOT NULL,
  median_us REAL, p10_us REAL, p90_us REAL, samples INTEGER, rse REAL,
  tflops REAL, gbps REAL,
  verify_ok INTEGER, max_rel_err REAL, diff REAL, nan_count INTEGER, pad_touched INTEGER,
  sm_clock_mhz REAL, throttled INTEGER,
  protocol TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (device_id, environment_id, problem_id, config_id)
);
CREATE INDEX trial_by_device_problem ON trial (device_id, problem_id);
CREATE TABLE baseline (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES device (id),
  environment_id INTEGER NOT NULL REFERENCES environment (id),
  problem_id INTEGER NOT NULL REFERENCES problem (id),
  provider TEXT NOT NULL,
  pci_bus_id TEXT NOT NULL,
  status TEXT NOT NULL,
  cublas_status INTEGER NOT NULL,
  error TEXT NOT NULL,
  algo TEXT NOT NULL,
  median_us REAL, p10_us REAL, p90_us REAL, samples INTEGER, rse REAL,
  tflops REAL, gbps REAL,
  verify_ok INTEGER, max_rel_err REAL, diff REAL, nan_count INTEGER, pad_touched INTEGER,
  sm_clock_mhz REAL, throttled INTEGER,
  protocol TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (device_id, environment_id, problem_id, provider)
);
CREATE TABLE sweep (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES device (id),
  environment_id INTEGER NOT NULL REFERENCES environment (id),
  problem_id INTEGER NOT NULL REFERENCES problem (id),
  space TEXT NOT NULL,
  strategy TEXT NOT NULL,
  candidates INTEGER NOT NULL,
  stored INTEGER NOT NULL,
  complete INTEGER NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (device_id, environment_id, problem_id, space, strategy)
);
CREATE VIEW winner AS
SELECT trial_id, device_id, environment_id, problem_id, config_id, problem_key, config_key, kernel_hash, median_us, tflops
FROM (
  SELECT t.id AS trial_id, t.device_id AS device_id, t.environment_id AS environment_id, t.problem_id AS problem_id,
         t.config_id AS config_id, p.key AS problem_key, c.key AS config_key, e.kernel_hash AS kernel_hash,
         t.median_us AS median_us, t.tflops AS tflops,
         row_number() OVER (PARTITION BY t.device_id, t.environment_id, t.problem_id
                            ORDER BY t.median_us ASC, c.key ASC) AS rank
  FROM trial t
  JOIN problem p ON p.id = t.problem_id
  JOIN config c ON c.id = t.config_id
  JOIN environment e ON e.id = t.environment_id
  WHERE t.status = 'ok' AND t.median_us IS NOT NULL
)
WHERE rank = 1;

INSERT INTO device (hw_key, name, cc, sm_count, memory_bytes, l2_bytes, max_sm_clock_mhz, created_at)
SELECT dgt_hardware_key(name, cc, sm_count, memory_bytes, l2_bytes), name, cc, sm_count, memory_bytes, l2_bytes,
       max(max_sm_clock_mhz), min(created_at)
FROM device_v2 GROUP BY name, cc, sm_count, memory_bytes, l2_bytes ORDER BY min(id);
INSERT INTO environment (env_key, driver_version, runtime_version, cublaslt_version, nvrtc_version, kernel_hash,
                         dgtune_version, created_at)
SELECT dgt_environment_key(driver_version, runtime_version, cublaslt_version, nvrtc_version, kernel_hash, dgtune_version),
       driver_version, runtime_version, cublaslt_version, nvrtc_version, kernel_hash, dgtune_version, min(created_at)
FROM device_v2 GROUP BY driver_version, runtime_version, cublaslt_version, nvrtc_version, kernel_hash, dgtune_version
ORDER BY min(id);

-- Old device row id -> (device id, environment id).
CREATE TEMP TABLE device_map AS
SELECT o.id AS old_id, d.id AS device_id, e.id AS environment_id
FROM device_v2 o
JOIN device d ON d.hw_key = dgt_hardware_key(o.name, o.cc, o.sm_count, o.memory_bytes, o.l2_bytes)
JOIN environment e ON e.env_key = dgt_environment_key(o.driver_version, o.runtime_version, o.cublaslt_version,
                                                      o.nvrtc_version, o.kernel_hash, o.dgtune_version);

-- Two old rows can only meet in one (device, environment) when they differed in max_sm_clock_mhz alone;
-- then the later measurement of the same (problem, config) is kept (ORDER BY id).
INSERT OR REPLACE INTO trial (id, device_id, environment_id, problem_id, config_id, pci_bus_id, status, error,
                              compile_ms, registers, spill_bytes, smem_bytes, median_us, p10_us, p90_us, samples, rse,
                              tflops, gbps, verify_ok, max_rel_err, diff, nan_count, pad_touched, sm_clock_mhz, throttled,
                              protocol, created_at)
SELECT t.id, m.device_id, m.environment_id, t.problem_id, t.config_id, '', t.status, t.error, t.compile_ms, t.registers,
       t.spill_bytes, t.smem_bytes, t.median_us, t.p10_us, t.p90_us, t.samples, t.rse, t.tflops, t.gbps, t.verify_ok,
       t.max_rel_err, t.diff, t.nan_count, t.pad_touched, t.sm_clock_mhz, t.throttled, t.protocol, t.created_at
FROM trial_v2 t JOIN temp.device_map m ON m.old_id = t.device_id ORDER BY t.id;
INSERT OR REPLACE INTO baseline (id, device_id, environment_id, problem_id, provider, pci_bus_id, status, cublas_status,
                                 error, algo, median_us, p10_us, p90_us, samples, rse, tflops, gbps, verify_ok,
                                 max_rel_err, diff, nan_count, pad_touched, sm_clock_mhz, throttled, protocol, created_at)
SELECT b.id, m.device_id, m.environment_id, b.problem_id, b.provider, '', b.status, b.cublas_status, b.error, b.algo,
       b.median_us, b.p10_us, b.p90_us, b.samples, b.rse, b.tflops, b.gbps, b.verify_ok, b.max_rel_err, b.diff,
       b.nan_count, b.pad_touched, b.sm_clock_mhz, b.throttled, b.protocol, b.created_at
FROM baseline_v2 b JOIN temp.device_map m ON m.old_id = b.device_id ORDER BY b.id;
INSERT OR REPLACE INTO sweep (id, device_id, environment_id, problem_id, space, strategy, candidates, stored, complete,
                              updated_at)
SELECT s.id, m.device_id, m.environment_id, s.problem_id, s.space, s.strategy, s.candidates, s.stored, s.complete,
       s.updated_at
FROM sweep_v2 s JOIN temp.device_map m ON m.old_id = s.device_id ORDER BY s.id;

DROP TABLE temp.device_map;
DROP TABLE trial_v2;
DROP TABLE baseline_v2;
DROP TABLE sweep_v2;
DROP TABLE device_v2;
