-- Schema version 6: the history of `dgtune gate` runs (the CI gate). One gate_run row per run of
-- `dgtune gate --baseline`, one gate_result row per shape of that run, so slow drift across many small
-- changes is visible (`dgtune history --shape KEY`). Runs name the device (hardware identity) and
-- environment (software) that measured them; ratios are time ratios dgtune / cuBLASLt-tuned (medians),
-- slowdowns fractions (0.05 = 5%).
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
