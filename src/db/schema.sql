-- dgtune tuning database: the whole current schema, executed on a new file. Older files reach the same
-- schema through src/db/migrations/NNNN_*.sql (a unit test compares sqlite_master of both).
-- To change the schema add ONE migration file src/db/migrations/NNNN_what.sql (NNNN = next version): new
-- files get this schema and then every migration numbered above the version inserted below. Fold
-- migrations into this file only together with raising that version.
--
-- Identity model (README "Tuning database"): device = hardware identity (what a winner belongs to);
-- environment = the software a measurement ran under (driver, CUDA runtime, cuBLASLt, NVRTC, kernel-source
-- hash, dgtune version). Every trial, baseline and sweep row names both, and trials and baselines keep
-- the PCI bus id of the GPU that measured them ('' for rows stored before schema 3).
-- Measurement protocols (schema 7, src/db/migrations/0007_protocol_per_trial.sql): trials, baselines and
-- sweep states are unique per protocol_name ("cold-l2-v1": the sweep Timer, "hot-graph-v1": `dgtune sweep
-- --protocol hot-graph`), and the winner view has one winner per (device, environment, problem, protocol_name).
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version (version) VALUES (7);
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
CREATE TABLE problem (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL,
  lda INTEGER NOT NULL, ldb INTEGER NOT NULL, ldd INTEGER NOT NULL,
  dtype_a TEXT NOT NULL, dtype_b TEXT NOT NULL, dtype_d TEXT NOT NULL,
  scale_mode TEXT NOT NULL,
  accum TEXT NOT NULL
);
CREATE INDEX problem_by_nk ON problem (n, k);
CREATE TABLE config (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  block_m INTEGER NOT NULL, block_n INTEGER NOT NULL, block_k INTEGER NOT NULL,
  num_stages INTEGER NOT NULL, num_math_wg INTEGER NOT NULL, swizzle INTEGER NOT NULL,
  cluster_m INTEGER NOT NULL, cluster_n INTEGER NOT NULL,
  raster TEXT NOT NULL, group_size INTEGER NOT NULL, epilogue TEXT NOT NULL, split_k INTEGER NOT NULL, sms INTEGER NOT NULL DEFAULT 0,
  mainloop TEXT NOT NULL DEFAULT '1g', promote_every INTEGER NOT NULL DEFAULT 1
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
  protocol_name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (device_id, environment_id, problem_id, config_id, protocol_name)
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
  protocol_name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (device_id, environment_id, problem_id, provider, protocol_name)
);
CREATE TABLE sweep (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES device (id),
  environment_id INTEGER NOT NULL REFERENCES environment (id),
  problem_id INTEGER NOT NULL REFERENCES problem (id),
  space TEXT NOT NULL,
  strategy TEXT NOT NULL,
  protocol_name TEXT NOT NULL,
  candidates INTEGER NOT NULL,
  stored INTEGER NOT NULL,
  complete INTEGER NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (device_id, environment_id, problem_id, space, strategy, protocol_name)
);
-- Interleaved measurements (schema 5; `dgtune compare --save`): one row per (device, environment,
-- problem, protocol) run of the engine (bench/rounds.hpp), its sides (a config or a cuBLASLt provider,
-- with the output check after replay) and every sample, so statistics can be recomputed later.
CREATE TABLE measurement (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES device (id),
  environment_id INTEGER NOT NULL REFERENCES environment (id),
  problem_id INTEGER NOT NULL REFERENCES problem (id),
  pci_bus_id TEXT NOT NULL,
  protocol_name TEXT NOT NULL,
  protocol TEXT NOT NULL,
  rounds INTEGER NOT NULL,
  reference_clock_mhz REAL NOT NULL,
  clock_floor_mhz REAL NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX measurement_by_device_problem ON measurement (device_id, problem_id);
CREATE TABLE measurement_side (
  measurement_id INTEGER NOT NULL REFERENCES measurement (id),
  side INTEGER NOT NULL,
  label TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('config', 'provider')),
  config_key TEXT NOT NULL,
  algo TEXT NOT NULL,
  source TEXT NOT NULL,
  heuristic_count INTEGER NOT NULL,
  check_ok INTEGER, max_rel_err REAL, diff REAL, nan_count INTEGER, pad_touched INTEGER,
  PRIMARY KEY (measurement_id, side)
);
CREATE TABLE measurement_sample (
  measurement_id INTEGER NOT NULL,
  side INTEGER NOT NULL,
  round INTEGER NOT NULL,
  position INTEGER NOT NULL,
  time_us REAL NOT NULL,
  sm_clock_mhz REAL NOT NULL,
  flagged INTEGER NOT NULL,
  PRIMARY KEY (measurement_id, side, round),
  FOREIGN KEY (measurement_id, side) REFERENCES measurement_side (measurement_id, side)
);
CREATE VIEW winner AS
SELECT trial_id, device_id, environment_id, problem_id, config_id, protocol_name, problem_key, config_key, kernel_hash,
       median_us, tflops
FROM (
  SELECT t.id AS trial_id, t.device_id AS device_id, t.environment_id AS environment_id, t.problem_id AS problem_id,
         t.config_id AS config_id, t.protocol_name AS protocol_name, p.key AS problem_key, c.key AS config_key,
         e.kernel_hash AS kernel_hash, t.median_us AS median_us, t.tflops AS tflops,
         row_number() OVER (PARTITION BY t.device_id, t.environment_id, t.problem_id, t.protocol_name
                            ORDER BY t.median_us ASC, c.key ASC) AS rank
  FROM trial t
  JOIN problem p ON p.id = t.problem_id
  JOIN config c ON c.id = t.config_id
  JOIN environment e ON e.id = t.environment_id
  WHERE t.status = 'ok' AND t.median_us IS NOT NULL
)
WHERE rank = 1;
-- Gate history (schema 6, src/db/migrations/0006_gate_history.sql): one gate_run row per run of `dgtune gate
-- --baseline`, one gate_result row per shape of that run (`dgtune history`).
CREATE TABLE gate_run (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES device (id),
  environment_id INTEGER NOT NULL REFERENCES environment (id),
  pci_bus_id TEXT NOT NULL,
  baseline_path TEXT NOT NULL,
  baseline_created_at TEXT NOT NULL,
  baseline_env_key TEXT NOT NULL,
  protocol TEXT NOT NULL,
  threshold REAL NOT NULL,
  confidence REAL NOT NULL,
  exit_code INTEGER NOT NULL,
  shapes INTEGER NOT NULL,
  failures INTEGER NOT NULL,
  errors INTEGER NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE gate_result (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES gate_run (id),
  problem_id INTEGER NOT NULL REFERENCES problem (id),
  name TEXT NOT NULL,
  config_key TEXT NOT NULL,
  config_baseline TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  ratio_baseline REAL, ratio_now REAL,
  slowdown REAL, slowdown_lo REAL, slowdown_hi REAL, p_value REAL,
  ours_baseline_us REAL, ours_now_us REAL, tuned_baseline_us REAL, tuned_now_us REAL,
  UNIQUE (run_id, problem_id)
);
CREATE INDEX gate_result_by_problem ON gate_result (problem_id);
